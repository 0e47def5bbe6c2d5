#!/usr/bin/env bash
# The doc-check (a stage of scripts/test, after verify): the documentation an operator reads is held to
# the repository and to the running service.
#   1. Every fenced block of README.md and docs/**/*.md names its language, and every shell block
#      (bash, sh, shell, console) is marked in its fence's info string:
#        ```bash run [expect=TEXT]...   this script runs it against the service scripts/run starts, and
#                                       each TEXT must appear in what it printed;
#        ```bash ci                     every command in it is one scripts/test (or .ci/run) runs;
#        ```bash needs=WHAT             it needs what CI has not: cluster, gpu, docker or bench (a
#                                       benchmark: minutes on a quiet machine).
#   2. Relative links and images resolve, to a file and to a heading of it, and so do the alert rules'
#      runbook annotations in k8s/; docs/ holds pages only (a benchmark's output goes under target/, not
#      docs/); every test class the docs name exists under src/test/java or src/bench/java.
#   3. README.md is at most 300 lines; README.md, docs/ and CHANGELOG.md name no internal issue numbers and
#      no development sessions; no file of the repository names a path of a development machine.
#   4. Starts the service with scripts/run (as the README's walk-through does), runs every `run` block,
#      README.md first, then docs/ in name order, each block in its own `bash -euo pipefail` in the
#      repository root, and stops the service.
# Prints how long each part took. --static: parts 1-3 only (no service).
# PD_DOC_CHECK_PORT: the service's port (default 8080; the blocks' localhost:8080 follows it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
started=$SECONDS
mode=${1:-all}
out=target/doc-check
rm -rf "$out"
mkdir -p "$out/blocks"

t0=$SECONDS
python3 - "$out" <<'PY'
import os, re, shlex, subprocess, sys
from pathlib import Path

out = Path(sys.argv[1])
errors = []
def err(where, msg): errors.append(f"{where}: {msg}")

docs = [Path("README.md")] + sorted(Path("docs").rglob("*.md"))
SHELLS = {"bash", "sh", "shell", "console"}
NEEDS = {"cluster", "gpu", "docker", "bench"}
ci_text = Path("scripts/test").read_text() + Path(".ci/run").read_text()

def slug(heading):
    """A heading's anchor as GitHub makes it."""
    h = heading.strip().lower().replace("`", "")
    h = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h)
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")

def parse(path):
    """Blocks (line, info, text) and the prose lines (outside fences) of a Markdown file."""
    blocks, prose, fence, start, info, body = [], [], None, 0, "", []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        m = re.match(r"^\s*(`{3,}|~{3,})(.*)$", line)
        if fence is None and m:
            fence, start, info, body = m.group(1), n, m.group(2).strip(), []
        elif fence is not None and line.strip().startswith(fence) and line.strip().strip(fence[0]) == "":
            blocks.append((start, info, "\n".join(body)))
            fence = None
        elif fence is not None:
            body.append(line)
        else:
            prose.append((n, line))
    if fence is not None:
        err(f"{path}:{start}", "a fenced block is never closed")
    return blocks, prose

parsed = {p: parse(p) for p in docs}
anchors = {}
def anchors_of(path):
    if path not in anchors:
        seen, names = {}, set()
        if path.suffix == ".md" and path.exists():
            blocks, prose = parsed.get(path) or parse(path)
            for _, line in prose:
                m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
                if m:
                    s = slug(m.group(1))
                    k = seen.get(s, 0)
                    names.add(s if k == 0 else f"{s}-{k}")
                    seen[s] = k + 1
        anchors[path] = names
    return anchors[path]

# 1. Fenced blocks.
runs = []
for path, (blocks, _) in parsed.items():
    for line, info, text in blocks:
        where = f"{path}:{line}"
        try:
            words = shlex.split(info)
        except ValueError as e:
            err(where, f"the fence's info string does not parse ({e})"); continue
        if not words:
            err(where, "a fenced block without a language: name one (text for output, bash for commands)"); continue
        lang, attrs = words[0], words[1:]
        marks = [a for a in attrs if a in ("run", "ci") or a.startswith("needs=")]
        expects = [a[len("expect="):] for a in attrs if a.startswith("expect=")]
        unknown = [a for a in attrs if a not in marks and not a.startswith("expect=")]
        if unknown:
            err(where, f"unknown fence attributes {unknown} (run, expect=TEXT, ci, needs=WHAT)")
        if lang not in SHELLS:
            if marks or expects:
                err(where, f"a {lang} block is not run: run, ci and needs= mark shell blocks only")
            continue
        if len(marks) != 1:
            err(where, "a shell block is marked with exactly one of: run (the doc-check runs it), ci (a command"
                " CI runs), needs=cluster|gpu|docker|bench" + (f"; it has {marks}" if marks else ""))
            continue
        mark = marks[0]
        if expects and mark != "run":
            err(where, "expect= belongs to a run block")
        if mark.startswith("needs=") and mark[len("needs="):] not in NEEDS:
            err(where, f"{mark}: what a block needs is one of {sorted(NEEDS)}")
        if mark == "ci":
            for cmd in text.splitlines():
                cmd = re.sub(r"\s+#.*$", "", cmd).strip()
                if cmd and not cmd.startswith("#") and cmd not in ci_text:
                    err(where, f"`{cmd}` is marked ci but scripts/test and .ci/run do not run it")
        if mark == "run":
            runs.append((str(path), line, text, expects))

# 2. Links, images, pages only under docs/, test classes.
tests = {p.stem for d in ("src/test/java", "src/bench/java") for p in Path(d).rglob("*.java")}
for path, (_, prose) in parsed.items():
    for n, line in prose:
        where = f"{path}:{n}"
        plain = re.sub(r"`[^`]*`", "", line)
        for target in re.findall(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", plain):
            if re.match(r"^[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            dest = (path.parent / file).resolve() if file else path.resolve()
            rel = Path(os.path.relpath(dest, Path.cwd()))
            if not dest.exists():
                err(where, f"link to {target}: no such file"); continue
            if anchor and dest.suffix == ".md" and anchor not in anchors_of(rel):
                err(where, f"link to {target}: {rel} has no heading #{anchor}")
        for name in re.findall(r"`(?:[\w./]*/)?([A-Z][A-Za-z0-9]*(?:Test|IT))(?:[.#][\w*]*)?`", line):
            if name not in tests:
                err(where, f"`{name}` names no test class under src/test/java or src/bench/java")
# The alerts' runbook annotations point at a page and one of its headings.
for rules in sorted(Path("k8s").rglob("*.yaml")):
    for n, line in enumerate(rules.read_text().splitlines(), 1):
        m = re.search(r"\brunbook:\s*(\S+)", line)
        if m:
            file, _, anchor = m.group(1).partition("#")
            if not Path(file).exists():
                err(f"{rules}:{n}", f"runbook {m.group(1)}: no such file")
            elif anchor and anchor not in anchors_of(Path(file)):
                err(f"{rules}:{n}", f"runbook {m.group(1)}: {file} has no heading #{anchor}")
# docs/ holds pages: a benchmark's output (its JSON, plots, printed tables) is written under target/ and
# its figures copied into docs/performance.md; git keeps the outputs that used to be committed here.
for f in sorted(Path("docs").rglob("*")):
    if f.is_file() and f.suffix != ".md":
        err(f.as_posix(), "is not a page: docs/ holds Markdown pages only; leave a run's output under target/"
            " and copy its figures into docs/performance.md")

# 3. README size, internal history, development machines' paths.
lines = len(Path("README.md").read_text().splitlines())
if lines > 300:
    err("README.md", f"{lines} lines: the README is at most 300; the rest belongs in docs/")
history = re.compile(r"\bissues? #?\d+\b|\b(this|last|next|previous|that) session\b|\bsession's\b", re.I)
for path in docs + [Path("CHANGELOG.md")]:
    if path.exists():
        for n, line in enumerate(path.read_text().splitlines(), 1):
            m = history.search(line)
            if m:
                err(f"{path}:{n}", f"names {m.group()!r}: user docs speak of no internal issues or sessions")
w, s = "work", "shared"
# Built from pieces, so that this script does not name them itself.
j, r = "bash", "root"
machine = "|".join([f"/{w}/(main|{s}|steering|wt-[A-Za-z0-9_-]+)", f"\\.\\./{s}/", f"/tmp/{j}_jobs", f"/{r}/",
                    "/home/[a-z][a-z0-9_-]*/", "/Users/[A-Za-z]"])
found = subprocess.run(["git", "grep", "--untracked", "-nIE", machine, "--", "."],
                       capture_output=True, text=True).stdout.splitlines()
for hit in found:
    err(hit.split(":", 2)[0] + ":" + hit.split(":", 2)[1], "names a path of a development machine (a clone has none): "
        + hit.split(":", 2)[2].strip()[:120])

# The run blocks, for part 4.
for i, (path, line, text, expects) in enumerate(runs):
    (out / "blocks" / f"{i:03d}.sh").write_text(text + "\n")
    (out / "blocks" / f"{i:03d}.where").write_text(f"{path}:{line}\n")
    (out / "blocks" / f"{i:03d}.expect").write_text("".join(e + "\n" for e in expects))
for e in errors:
    print(f"doc-check: {e}", file=sys.stderr)
print(f"doc-check: {len(docs)} pages, {sum(len(b) for b, _ in parsed.values())} fenced blocks, {len(runs)} to run,"
      f" README {lines} lines; {len(errors)} problem(s)", file=sys.stderr, flush=True)
sys.exit(1 if errors else 0)
PY
echo "doc-check: static checks took $((SECONDS - t0)) s"
[ "$mode" = --static ] && exit 0

# 4. The run blocks against the service the README starts.
port=${PD_DOC_CHECK_PORT:-8080}
command -v jq >/dev/null || {
  echo "doc-check: installing jq (the walk-through uses it)" >&2
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq jq >/dev/null
}
if curl -s -o /dev/null "localhost:$port/q/health/live"; then
  echo "doc-check: something already answers on port $port; stop it or set PD_DOC_CHECK_PORT" >&2
  exit 1
fi
t0=$SECONDS
# Its own process group, so that stopping it also stops a build scripts/run may still be running.
QUARKUS_HTTP_PORT=$port setsid scripts/run >"$out/service.log" 2>&1 &
service=$!
stop() {
  kill -TERM -- "-$service" 2>/dev/null && wait "$service" 2>/dev/null || true
}
trap stop EXIT
until curl -sf -o /dev/null "localhost:$port/q/health/ready"; do
  if ! kill -0 "$service" 2>/dev/null; then
    tail -n 40 "$out/service.log" >&2
    echo "doc-check: scripts/run exited before the service was ready (log: $out/service.log)" >&2
    exit 1
  fi
  [ $((SECONDS - t0)) -lt 600 ] || { echo "doc-check: the service was not ready within 600 s" >&2; exit 1; }
  sleep 1
done
echo "doc-check: scripts/run ready after $((SECONDS - t0)) s"

t0=$SECONDS
ran=0
for block in "$out"/blocks/*.sh; do
  [ -e "$block" ] || continue
  where=$(cat "${block%.sh}.where")
  sed -i "s/localhost:8080/localhost:$port/g" "$block"
  echo "== doc-check: $where"
  if ! bash -euo pipefail "$block" >"${block%.sh}.out" 2>&1; then
    cat "${block%.sh}.out"
    echo "doc-check: $where: the block failed" >&2
    exit 1
  fi
  cat "${block%.sh}.out"
  while IFS= read -r expect; do
    grep -qF -- "$expect" "${block%.sh}.out" \
      || { echo "doc-check: $where: its output lacks the expected text: $expect" >&2; exit 1; }
  done <"${block%.sh}.expect"
  ran=$((ran + 1))
done
echo "doc-check: $ran block(s) ran in $((SECONDS - t0)) s"
echo "doc-check: took $((SECONDS - started)) s"
