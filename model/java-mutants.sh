#!/usr/bin/env bash
# Java mutants: each patch in model/java-mutants/ removes one lease rule (L1-L9, L11-L13) or one guard of the
# engine path (G1, G4; G3 is in java-mutants-unreplayed/: see model/README.md) from the Java main code the way the Spin model's MUT_* switch removes it from
# lease.pml. For each patch this script
# compiles the patched code and runs TrailReplayTest (the model's counterexample trails replayed
# against the Java loops); a mutant is caught when at least one trail replay fails.
#
#   bash model/java-mutants.sh                 # every patch; one line per mutant, then "N caught, M not caught"
#   bash model/java-mutants.sh L3 L8           # only these patches
#   bash model/java-mutants.sh --compare       # also: do LeaseRulesTest, LeaseTrustRulesTest, ReadQuarantineTest,
#                                              # RandomizedScheduleTest, RequestIdReuseTest, MidReadLapseTest,
#                                              # SeedScenarioTest, EngineCreditTest catch it? (report only)
#
# Exit status: 0 if every mutant was caught; 1 if one was not caught, a patch no longer applies or does
# not compile; 2 if the unpatched code does not pass (then no mutant result means anything).
#
# It never touches the caller's working tree: the tracked and untracked (not ignored) files and the
# existing target/ are copied to a temporary directory (so whatever model/trails/MUT_*.txt exist there
# are the ones replayed), the unpatched copy is built and tested once, and each mutant is a fresh copy of
# that with its patch applied. Per mutant, every main source file is compiled again (javac, through
# Maven offline); the unchanged test classes are not. The copies are removed at the end; the surefire
# reports and replay transcripts of each run stay in the log directory printed at the end.
set -uo pipefail

export JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64
root=$(cd "$(dirname "$0")/.." && pwd)
# The NIXL wheel cache: the caller's, or this checkout's own (the copy has no .cache/).
export PD_NIXL_CACHE=${PD_NIXL_CACHE:-$root/.cache/nixl}

COMPARE_TESTS=LeaseRulesTest,LeaseTrustRulesTest,ReadQuarantineTest,RandomizedScheduleTest,RequestIdReuseTest,MidReadLapseTest,SeedScenarioTest,EngineCreditTest
compare=0
only=()
for arg in "$@"; do
  case $arg in
    --compare) compare=1 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    -*) echo "unknown option $arg" >&2; exit 2 ;;
    *) only+=("$arg") ;;
  esac
done

patches=()
if [ ${#only[@]} -eq 0 ]; then
  for p in "$root"/model/java-mutants/*.patch; do patches+=("$p"); done
else
  for m in "${only[@]}"; do patches+=("$root/model/java-mutants/$m.patch"); done
fi

work=$(mktemp -d /tmp/pd-java-mutants.XXXXXX)
logs=$work/logs
mkdir -p "$logs"
cleanup() {
  # keep only the logs
  find "$work" -mindepth 1 -maxdepth 1 ! -name logs -exec rm -rf {} +
}
trap cleanup EXIT
trap 'exit 130' INT TERM

tests=TrailReplayTest
[ $compare -eq 1 ] && tests=TrailReplayTest,$COMPARE_TESTS

mvn_test() { # dir, log, extra args...
  local dir=$1 log=$2
  shift 2
  (cd "$dir" && ./mvnw -B -ntp -o test -Dtest="$tests" -Dsurefire.failIfNoSpecifiedTests=false \
      -Dquarkus.generate-code.skip=true "$@") >"$log" 2>&1
}

# Which tests failed, from the surefire XML reports: "<Class> <case>|<kind>: <first line of message>".
# A trail replay's case is named by its trail: case [k] of the parameterized test is the k-th trail in
# the order TrailReplayTest lists them (file names sorted).
failures() { # reports dir, trails dir
  python3 - "$1" "$2" <<'EOF'
import glob, os, re, sys, xml.etree.ElementTree as ET
trails = [n[:-4] for n in sorted(os.listdir(sys.argv[2])) if re.fullmatch(r"MUT_.*\.txt", n)]
def named(name):
    m = re.fullmatch(r"theJavaLoops\w*\(Path\)\[(\d+)\]", name)
    return trails[int(m.group(1)) - 1] + ".txt" if m else name
for f in sorted(glob.glob(os.path.join(sys.argv[1], "TEST-*.xml"))):
    suite = ET.parse(f).getroot()
    cls = suite.get("name", "").rsplit(".", 1)[-1]
    for case in suite.iter("testcase"):
        for kind in ("failure", "error"):
            e = case.find(kind)
            if e is not None:
                msg = (e.get("message") or e.get("type") or "").strip().splitlines()
                name = named(case.get("name", ""))
                said = re.match(r"(MUT_\w+): ", msg[0] if msg else "")
                if said and name.startswith("MUT_") and said.group(1) + ".txt" != name:
                    print(f"warning: case {case.get('name')} taken as {name}, its message names {said.group(1)}",
                          file=sys.stderr)
                print(f"{cls} {name}|{kind}: {msg[0][:200] if msg else e.get('type', '')}")
EOF
}

# What each failed trail replay saw, grouped: "    MUT_L2: no_spurious_decline | MUT_L3, MUT_L5: nothing held at the end".
properties() {
  python3 -c '
import re, sys
seen = {}
for line in sys.stdin:
    head, _, msg = line.partition("|")
    m = re.search(r"(MUT_\w+)\.txt", head)
    if not m:
        continue
    for key, what in (("received_own_bytes", "received_own_bytes"), ("read_into_own_dblock", "read_into_own_dblock"),
                      ("block READ was still in flight", "read_into_own_dblock"),
                      ("no_spurious_decline", "no_spurious_decline"), ("notif_own_attempt", "notif_own_attempt"),
                      ("hb_own_attempt", "hb_own_attempt"), ("lifetime_bounded", "lifetime_bounded"),
                      ("slot_written_before_grant", "slot_written_before_grant"),
                      ("copy_into_granted_block", "copy_into_granted_block"),
                      ("still holds something", "nothing held at the end"),
                      ("Java still holds it", "lease not freed where the trail frees it"),
                      ("slot_read_failed without", "no_spurious_decline"), ("which no trail event causes", "no_spurious_decline")):
        if key in msg:
            break
    else:
        what = "other: " + msg.strip()[:80]
    seen.setdefault(what, []).append(m.group(1))
print(" | ".join(", ".join(dict.fromkeys(t)) + ": " + w for w, t in seen.items()))'
}

summarize() { # lines from failures() for one class -> "MUT_L3, MUT_L5" (trail names), or test names
  python3 -c '
import re, sys
out = []
for line in sys.stdin:
    head = line.split("|", 1)[0]
    m = re.search(r"(MUT_\w+)\.txt", head)
    name = m.group(1) if m else head.split(" ", 1)[1]
    if name not in out:
        out.append(name)
print(", ".join(out))'
}

start=$(date +%s)
base=$work/base
mkdir -p "$base"
echo "copying $root (tracked and untracked files, and target/) to $base"
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
  (cd "$root" && git ls-files -z -co --exclude-standard | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) \
    | tar -C "$base" -xf -
else  # a source tree without git (an unpacked archive): everything but build output and caches
  (cd "$root" && tar --exclude=./target --exclude=./.cache --exclude=./.mvn/wrapper/dists -cf - .) | tar -C "$base" -xf -
fi
if [ -d "$root/target" ]; then
  (cd "$root" && tar -cf - --exclude=target/quarkus-app --exclude=target/it-state --exclude=target/it-logs \
      --exclude='target/pd-*' --exclude='target/*.jar' --exclude=target/surefire-reports \
      --exclude=target/failsafe-reports --exclude=target/trail-replays target) | tar -C "$base" -xf -
fi
echo "trails: $(cd "$base/model/trails" && ls MUT_*.txt | sed 's/\.txt$//' | tr '\n' ' ')"

# The unpatched code, built in full and tested: it must pass, and its classes are every mutant's start.
t0=$(date +%s)
if ! mvn_test "$base" "$logs/unpatched.log"; then
  echo "the unpatched code does not pass $tests (log: $logs/unpatched.log):"
  failures "$base/target/surefire-reports" "$base/model/trails" | sed 's/^/  /'
  exit 2
fi
echo "unpatched: $tests pass ($(( $(date +%s) - t0 )) s)"
rm -rf "$base/target/surefire-reports" "$base/target/trail-replays"

caught=0
missed=0
broken=0
for patch in "${patches[@]}"; do
  name=$(basename "$patch" .patch)
  t0=$(date +%s)
  if [ ! -f "$patch" ]; then
    echo "$name: no such patch $patch"; broken=$((broken + 1)); continue
  fi
  dir=$work/$name
  cp -a "$base" "$dir"
  if ! (cd "$dir" && git apply --check "$patch" 2>"$logs/$name.apply" && git apply "$patch" 2>>"$logs/$name.apply"); then
    echo "$name DOES NOT APPLY: $(head -1 "$logs/$name.apply")"
    broken=$((broken + 1)); rm -rf "$dir"; continue
  fi
  # Every main class compiled again from the (patched) sources; the test classes stay as built.
  find "$dir/target/classes" -name '*.class' -delete
  mvn_test "$dir" "$logs/$name.log" -Dmaven.compiler.useIncrementalCompilation=false
  rc=$?
  mkdir -p "$logs/$name"
  cp -r "$dir/target/surefire-reports" "$logs/$name/" 2>/dev/null
  cp -r "$dir/target/trail-replays" "$logs/$name/" 2>/dev/null
  secs=$(( $(date +%s) - t0 ))
  if ! grep -q 'Compiling [0-9]* source files .* to target/classes' "$logs/$name.log" || grep -q 'COMPILATION ERROR' "$logs/$name.log"; then
    echo "$name DID NOT COMPILE (log: $logs/$name.log)"
    broken=$((broken + 1)); rm -rf "$dir"; continue
  fi
  if grep -q 'Compiling [0-9]* source files .* to target/test-classes' "$logs/$name.log"; then
    echo "$name: warning: the test classes were compiled again" >&2
  fi
  fails=$(failures "$dir/target/surefire-reports" "$dir/model/trails")
  printf '%s\n' "$fails" | grep -v '^$' > "$logs/$name.failures"
  replay=$(printf '%s\n' "$fails" | grep '^TrailReplayTest ' | summarize)
  other=$(printf '%s\n' "$fails" | grep -v '^TrailReplayTest ' | grep -v '^$' | cut -d'|' -f1 | sort -u \
    | awk '{n[$1]++} END {for (c in n) printf "%s%s %d", (k++ ? ", " : ""), c, n[c]}')
  if [ -n "$replay" ]; then
    line="$name caught by $replay ($secs s)"
    caught=$((caught + 1))
  elif [ $rc -ne 0 ] && [ -z "$other" ]; then
    line="$name: Maven failed without a failed trail replay (log: $logs/$name.log) ($secs s)"
    broken=$((broken + 1))
  else
    line="$name NOT CAUGHT ($secs s)"
    missed=$((missed + 1))
  fi
  if [ $compare -eq 1 ]; then
    line="$line; other unit tests: ${other:-none failed}${other:+ failed (cases: $logs/$name.failures)}"
  fi
  echo "$line"
  [ -n "$replay" ] && printf '%s\n' "$fails" | grep '^TrailReplayTest ' | properties | sed 's/^/    /'
  rm -rf "$dir"
done

echo "$caught caught, $((missed + broken)) not caught ($missed not caught, $broken did not apply/compile/run);" \
  "total $(( $(date +%s) - start )) s; logs and reports: $logs"
[ $((missed + broken)) -eq 0 ]
