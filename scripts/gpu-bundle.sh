#!/usr/bin/env bash
# Writes target/gpu-bundle/pd-gpu-bundle.tar.zst: what a GPU machine with no JDK and no registry needs to run the
# service (docs/gpu.md, "The bundle"): a jlinked Java runtime of the modules jdeps finds in the packaged app, the
# packaged app (target/quarkus-app), and the part of the NIXL wheel the service loads (the C API, the UCX plugin,
# the libraries they link as ldd resolves them inside the wheel, UCX's transport modules), laid out as the wheel
# is, so that pd.nixl.home=<bundle>/nixl works unchanged.
#   scripts/gpu-bundle.sh           build it (after ./mvnw package), print its size
#   scripts/gpu-bundle.sh --check   build it, refuse it above PD_GPU_BUNDLE_MAX_MIB (48: with the repository's
#                                   files it must fit the 64 MiB that travel to a GPU machine), then start a
#                                   producer and a consumer from the bundled runtime and NIXL, in dram mode on
#                                   127.0.0.1, and pull one prompt between them: the bundle runs before a GPU
#                                   spends time on it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
max_mib=${PD_GPU_BUNDLE_MAX_MIB:-48}
app=$root/target/quarkus-app
nixl=${PD_NIXL_HOME:-${PD_NIXL_CACHE:-$root/.cache/nixl}/nixl-cu12-1.5.1}
out=$root/target/gpu-bundle
fail() { echo "gpu-bundle: FAILED: $*" >&2; exit 1; }

[ -f "$app/quarkus-run.jar" ] || fail "no packaged service at $app (./mvnw -B -ntp package first)"
[ -f "$nixl/.nixl_cu12.mesonpy.libs/libnixl_capi.so" ] || fail "no NIXL at $nixl (scripts/fetch-nixl.sh)"
command -v zstd >/dev/null || fail "zstd is missing (scripts/setup.sh installs it)"
t0=$SECONDS
rm -rf "$out" && mkdir -p "$out/stage"

# 1. The runtime: the modules the app's classes use, as jdeps reads them, plus what it cannot see (reflection,
#    service loading: the JDK's crypto providers, DNS, the management beans Micrometer reads).
#    jdk.compiler is left out: only build-time code paths of libraries name it (javax.tools), and the check below
#    runs the service without it. Uncompressed (zip-0): zstd compresses the whole bundle far better than jlink.
modules=$("$JAVA_HOME/bin/jdeps" --multi-release 25 --ignore-missing-deps --print-module-deps -q \
  --class-path "$app/lib/boot/*:$app/lib/main/*" "$app/quarkus-run.jar" "$app/app/"*.jar "$app/quarkus/"*.jar \
  2>/dev/null) || fail "jdeps could not read the packaged app"
modules=$(echo "$modules,jdk.crypto.ec,jdk.naming.dns,jdk.management,jdk.unsupported,jdk.zipfs" | tr , '\n' \
  | grep -vx jdk.compiler | sort -u | paste -sd,)
"$JAVA_HOME/bin/jlink" --add-modules "$modules" --strip-debug --no-man-pages --no-header-files \
  --compress zip-0 --output "$out/stage/jre" >/dev/null || fail "jlink failed for $modules"

# 2. The app as Maven packaged it, its jars stored rather than deflated: deflated entries are noise to zstd,
#    stored ones compress together (a jar reads the same either way).
cp -r "$app" "$out/stage/app"
python3 - "$out/stage/app" <<'PY'
import os, sys, zipfile
for folder, _, names in os.walk(sys.argv[1]):
    for name in names:
        if name.endswith(".jar"):
            path = os.path.join(folder, name)
            with zipfile.ZipFile(path) as src, zipfile.ZipFile(path + ".tmp", "w", zipfile.ZIP_STORED) as dst:
                for info in src.infolist():
                    data = src.read(info)
                    info.compress_type = zipfile.ZIP_STORED
                    dst.writestr(info, data)
            os.replace(path + ".tmp", path)
PY

# 3. NIXL: the C API and UCX plugin, every library they and UCX's modules link that resolves inside the wheel,
#    and UCX's modules, at the paths the wheel has them (their RPATHs find each other there). Not UCX's RDMA
#    modules (InfiniBand, RoCE: a GPU check runs on one node; with them come libibverbs, mlx5 and netlink, 17 MiB)
#    nor its perftest ones: a transport whose module is absent is one UCX does not offer.
left_out='/libuct_ib|/libuct_rdmacm|/libucx_perftest'
mkdir -p "$out/stage/nixl"
{
  echo ".nixl_cu12.mesonpy.libs/libnixl_capi.so"
  echo ".nixl_cu12.mesonpy.libs/plugins/libplugin_UCX.so"
  (cd "$nixl" && ls nixl_cu12.libs/ucx/*.so* | grep -Ev "$left_out")
  for f in "$nixl/.nixl_cu12.mesonpy.libs/libnixl_capi.so" "$nixl/.nixl_cu12.mesonpy.libs/plugins/libplugin_UCX.so" \
           $(ls "$nixl"/nixl_cu12.libs/ucx/*.so* | grep -Ev "$left_out"); do
    ldd "$f" 2>/dev/null | awk '/=> \// {print $3}'
  done | while read -r lib; do
    real=$(readlink -f "$lib")
    case "$real" in "$(readlink -f "$nixl")"/*) echo "${real#"$(readlink -f "$nixl")"/}" ;; esac
  done
} | sort -u > "$out/nixl-files.txt"
(cd "$nixl" && tar -cf - -T "$out/nixl-files.txt") | (cd "$out/stage/nixl" && tar -xf -)

# --long: the app's stored jars and the libraries repeat each other beyond zstd's default window
tar -C "$out/stage" -cf - jre app nixl | zstd -q -19 --long=27 -T0 -o "$out/pd-gpu-bundle.tar.zst"
bytes=$(stat -c %s "$out/pd-gpu-bundle.tar.zst")
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
printf 'gpu-bundle: %s, %s MiB as tar.zst (unpacked: runtime %s MiB, app %s, NIXL %s in %d files; modules %s) in %d s\n' \
  "$out/pd-gpu-bundle.tar.zst" "$(mib "$bytes")" "$(mib "$(du -sb "$out/stage/jre" | cut -f1)")" \
  "$(mib "$(du -sb "$out/stage/app" | cut -f1)")" "$(mib "$(du -sb "$out/stage/nixl" | cut -f1)")" \
  "$(wc -l < "$out/nixl-files.txt")" "$modules" "$((SECONDS - t0))"

[ "${1:-}" = --check ] || exit 0

[ "$bytes" -le $((max_mib * 1048576)) ] || fail "the bundle is $bytes bytes, above $max_mib MiB"

# The bundle, unpacked elsewhere, runs a producer and a consumer that pull one prompt between them.
run=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
  done
  rm -rf "$run"
}
trap cleanup EXIT
zstd -q -d --long=27 -c "$out/pd-gpu-bundle.tar.zst" | tar -C "$run" -xf -
start() { # name, port, extra -D settings...
  local name=$1 port=$2
  shift 2
  "$run/jre/bin/java" --enable-native-access=ALL-UNNAMED -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$port" \
    -Dpd.engine-id="bundle-$name" -Dpd.nixl.home="$run/nixl" -Dpd.kv.shm-dir="$run/shm-$name" \
    -Dpd.lease.state-dir="$run/state-$name" -Dpd.advertised-host=127.0.0.1 "$@" -jar "$run/app/quarkus-run.jar" \
    > "$out/$name.log" 2>&1 &
  pids+=($!)
}
ready() { # port, name
  for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$1/q/health/ready" >/dev/null && return 0
    sleep 0.5
  done
  fail "the bundled $2 was not ready within 60 s; its log: $(tail -20 "$out/$2.log")"
}
p_port=$(python3 scripts/free_port.py)
d_port=$(python3 scripts/free_port.py)
while [ "$d_port" = "$p_port" ]; do d_port=$(python3 scripts/free_port.py); done
mkdir -p "$run/shm-p" "$run/shm-d"
start p "$p_port" -Dpd.role=producer
start d "$d_port" -Dpd.role=consumer -Dpd.registry.store=static -Dpd.registry.static.peers="127.0.0.1:$p_port"
ready "$p_port" p
ready "$d_port" d
prompt="the bundle runs the service from its own runtime and its own NIXL"
params=$(curl -sf --max-time 30 "http://127.0.0.1:$p_port/v1/producer/prefill" -H 'content-type: application/json' \
  -d "{\"request_id\": \"bundle-1\", \"prompt\": \"$prompt\", \"kv_transfer_params\": {\"do_remote_decode\": true}}" \
  | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["kv_transfer_params"]))') \
  || fail "the bundled producer did not prefill; its log: $(tail -20 "$out/p.log")"
state=""
for _ in $(seq 1 40); do  # the consumer lists the producer at its static registry's next refresh
  answer=$(curl -s --max-time 30 "http://127.0.0.1:$d_port/v1/consumer/pull?matches_reference=true" \
    -H 'content-type: application/json' \
    -d "{\"request_id\": \"bundle-1\", \"prompt\": \"$prompt\", \"kv_transfer_params\": $params}")
  state=$(echo "$answer" | python3 -c 'import json, sys; d = json.load(sys.stdin); print(d.get("state") or d.get("reason") or d.get("type"))' 2>/dev/null || true)
  [ "$state" = received ] && break
  case "$answer" in *unknown_peer*|*unknown-peer*) sleep 0.5 ;; *) break ;; esac
done
[ "$state" = received ] || fail "the pull between the bundled services answered $answer"
echo "$answer" | python3 -c 'import json, sys; d = json.load(sys.stdin); assert d["matches_reference"] is True, d' \
  || fail "the pulled KV is not the prompt's: $answer"
echo "gpu-bundle: PASS: a producer and a consumer from the bundle's runtime and NIXL pulled one prompt (received, the reference KV) in $((SECONDS - t0)) s"
