#!/usr/bin/env bash
# API fuzzing (issue #12): schemathesis over the service's own OpenAPI document
# (/q/openapi?format=json), against the packaged jar (target/quarkus-app, built by ./mvnw verify)
# started on a free 127.0.0.1 port with role both and real NIXL, as scripts/run does.
# Checks: no 5xx, every error a problem document with a reason and a sentence, answers conform to the document (status codes, content types, schemas), a 4xx
# changes nothing (/v1/status compared before and after each 4xx), and nothing is held after the
# run once the fuzz configuration's short lease, reservation and retention have expired
# (scripts/fuzz/fuzz_api_hooks.py). Seeded, so a failure replays with the same command; the seed, the
# service log and a JUnit report are under target/fuzz-api/. Every request goes to 127.0.0.1 only.
#   PD_FUZZ_SEED (default 12), PD_FUZZ_EXAMPLES (per operation, default 250: about 2 minutes on 2 cores)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

SCHEMATHESIS_VERSION=4.32.5
seed=${PD_FUZZ_SEED:-12}
examples=${PD_FUZZ_EXAMPLES:-250}
venv=.cache/fuzz-venv
out=target/fuzz-api
jar=target/quarkus-app/quarkus-run.jar
java=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java
nixl_home=${PD_NIXL_CACHE:-$root/.cache/nixl}/nixl-cu12-1.5.1
started=$SECONDS

fail() { echo "fuzz-api: FAILED: $*" >&2; exit 1; }

[ -f "$jar" ] || fail "no packaged service at $jar (build it first: ./mvnw -B -ntp verify, or package)"
[ -d "$nixl_home" ] || fail "no NIXL at $nixl_home (scripts/fetch-nixl.sh unpacks it)"

# schemathesis, pinned, in its own venv (installed once).
if [ "$("$venv/bin/schemathesis" --version 2>/dev/null)" != "schemathesis, version $SCHEMATHESIS_VERSION" ]; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi

rm -rf "$out" && mkdir -p "$out/state" "$out/shm"
port=$(python3 "$root/scripts/free_port.py") # below the ephemeral range: nothing else takes it before the bind
base=http://127.0.0.1:$port

# Short lease, reservation and retention, so whatever a 2xx legitimately holds is released soon after the run.
"$java" --enable-native-access=ALL-UNNAMED -Xmx512m \
  -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$port" -Dpd.advertised-host=127.0.0.1 \
  -Dpd.role=both -Dpd.transfer.engine=nixl -Dpd.nixl.home="$nixl_home" \
  -Dpd.lease.state-dir="$out/state" -Dpd.kv.shm-dir="$out/shm" \
  -Dpd.lease.duration=2s -Dpd.lease.reservation-timeout=3s -Dpd.consumer.retention=3s \
  -jar "$jar" >"$out/service.log" 2>&1 &
pid=$!
stop() {
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
}
trap stop EXIT

ready=""
for _ in $(seq 1 120); do # 60 s
  kill -0 "$pid" 2>/dev/null || { tail -30 "$out/service.log" >&2; fail "the service exited before it was ready"; }
  if curl -fsS --max-time 2 "$base/q/health/ready" >/dev/null 2>&1; then ready=yes; break; fi
  sleep 0.5
done
[ -n "$ready" ] || { tail -30 "$out/service.log" >&2; fail "the service was not ready within 60 s"; }

echo "fuzz-api: schemathesis $SCHEMATHESIS_VERSION against $base/q/openapi?format=json, seed $seed, $examples examples per operation"
rc=0
# From $out: schemathesis keeps its failure cache in ./.schemathesis, which must not outlive the run
# (a run replays only what its seed generates).
(cd "$out" && PD_FUZZ_BASE=$base SCHEMATHESIS_HOOKS=fuzz_api_hooks PYTHONPATH="$root/scripts/fuzz" \
  timeout 300 "$root/$venv/bin/schemathesis" run "$base/q/openapi?format=json" --url "$base" \
  --seed "$seed" --max-examples "$examples" --workers 1 --request-timeout 30 \
  --checks no_server_error,errors_are_problems,content_type_conformance,response_schema_conformance,no_state_change_on_4xx,nothing_held_after_run \
  --report junit --report-dir . --no-color) || rc=$?
stop
if grep -q 'ERROR.*internal-error\|Unhandled' "$out/service.log"; then
  echo "fuzz-api: the service log has internal errors (first lines):" >&2
  grep -m5 'ERROR' "$out/service.log" >&2
  [ "$rc" -ne 0 ] || rc=1
fi
if [ "$rc" -eq 0 ]; then
  echo "fuzz-api: PASSED in $((SECONDS - started)) s (seed $seed, $examples examples per operation)"
else
  echo "fuzz-api: FAILED (exit $rc) in $((SECONDS - started)) s; replay: PD_FUZZ_SEED=$seed PD_FUZZ_EXAMPLES=$examples bash scripts/fuzz-api.sh; service log $out/service.log" >&2
fi
exit "$rc"
