#!/usr/bin/env bash
# The CI stage of the vLLM integration (scripts/test: `stage vllm ...`), after `./mvnw verify` packaged the jar:
#   1. setup-vllm.sh: vLLM's CPU build, NIXL's Python packages, pytest and the tiny model in a cached venv
#      (installed once per cache; the plugin package installed editable);
#   2. the plugin's own tests (integrations/vllm/tests), against the packaged jar where they need a service;
#   3. the end-to-end tests (integrations/vllm/e2e): one vLLM instance for the reference answers, stock P/D with
#      vLLM's NixlConnector, then P/D with the plugin beside two pd-connector services, all behind the same proxy.
# Every process listens on 127.0.0.1 and is stopped by the harness. Logs and JUnit reports: target/vllm-e2e/.
# Prints each step's time.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
started=$SECONDS

fail() { echo "vllm-ci: FAILED: $*" >&2; exit 1; }

export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
# UCX (vLLM's NIXL, pd-connector's) on loopback and shared memory only: every process here talks over 127.0.0.1, and
# a UCX agent created while a network interface comes or goes (a network-namespace test's veth) fails to start.
export UCX_NET_DEVICES=${UCX_NET_DEVICES:-lo}
export PD_CONNECTOR_JAR=${PD_CONNECTOR_JAR:-$root/target/quarkus-app/quarkus-run.jar}
export PD_NIXL_HOME=${PD_NIXL_HOME:-${PD_NIXL_CACHE:-$root/.cache/nixl}/nixl-cu12-1.5.1}
[ -f "$PD_CONNECTOR_JAR" ] || fail "no packaged service at $PD_CONNECTOR_JAR (./mvnw -B -ntp package runs first)"
[ -d "$PD_NIXL_HOME" ] || fail "no NIXL at $PD_NIXL_HOME (scripts/fetch-nixl.sh unpacks it)"
[ -d integrations/vllm/pd_connector_vllm ] && [ -f integrations/vllm/pyproject.toml ] \
  || fail "the plugin package (integrations/vllm/pd_connector_vllm, pyproject.toml) is missing"

t0=$SECONDS
mkdir -p target
bash integrations/vllm/scripts/setup-vllm.sh | tee target/setup-vllm.out
export PD_VLLM_PYTHON=$(sed -n 's/^setup-vllm: python=//p' target/setup-vllm.out)
export PD_VLLM_MODEL=$(sed -n 's/^setup-vllm: model=//p' target/setup-vllm.out)
[ -x "$PD_VLLM_PYTHON" ] || fail "setup-vllm.sh named no python"
echo "vllm-ci: setup took $((SECONDS - t0)) s"

out=$root/target/vllm-e2e
mkdir -p "$out"
export PD_E2E_LOGS=$out

t0=$SECONDS
"$PD_VLLM_PYTHON" -m pytest -p no:cacheprovider -q integrations/vllm/tests --junitxml="$out/plugin-tests.xml"
echo "vllm-ci: plugin tests took $((SECONDS - t0)) s"

t0=$SECONDS
# The GPU check's own test where no GPU is (docs/gpu.md, "The GPU check"): its copy checks on CPU tensors and its
# services check with two pd-connectors from the GPU bundle (the gpu-bundle stage built it) in host memory. It
# exits 2 when everything it ran passed (it checked no GPU), 1 on a failure.
rc=0
PYTHON=$PD_VLLM_PYTHON bash scripts/gpu-check.sh --dry-run-on-cpu --logs "$out/gpu-check-dry-run" \
  | tee "$out/gpu-check-dry-run.out" || rc=$?
[ "$rc" -eq 2 ] && grep -q '^PASS services from the bundle' "$out/gpu-check-dry-run.out" \
  || fail "the GPU check's dry run on CPU failed (exit $rc): $out/gpu-check-dry-run.out"
echo "vllm-ci: GPU check dry run on CPU took $((SECONDS - t0)) s"

t0=$SECONDS
# The tensor-parallel fleets (test_tp_*.py, marker tp) run only when asked: PD_E2E_TP=1. On this 2-core VM the
# first pull of a fresh TP 2 D has come with stalls of the whole machine (tens of seconds, up to minutes) in which
# the pull missed the plugin's deadline (docs/vllm.md, "Tensor-parallel fleets").
if [ "${PD_E2E_TP:-0}" = 1 ]; then
  selection=()
  echo "vllm-ci: end to end with the tensor-parallel fleets (PD_E2E_TP=1)"
else
  selection=(-m "not tp")
  echo "vllm-ci: end to end WITHOUT the tensor-parallel fleets (test_tp_*.py not run; PD_E2E_TP=1 runs them)"
fi
# The fleets CI leaves out to stay within about 15 minutes (stock NixlConnector's, pd_save_overlap's, the other
# model shapes' fail-policy and stock fleets) run with PD_E2E_FULL=1; each says it did not run otherwise.
if [ "${PD_E2E_FULL:-0}" = 1 ]; then
  echo "vllm-ci: end to end with every fleet (PD_E2E_FULL=1)"
else
  echo "vllm-ci: end to end WITHOUT stock NixlConnector's, pd_save_overlap's and the other model shapes' fail and stock fleets (PD_E2E_FULL=1 runs them)"
fi
"$PD_VLLM_PYTHON" -m pytest -p no:cacheprovider -v -s "${selection[@]}" integrations/vllm/e2e --junitxml="$out/e2e.xml"
echo "vllm-ci: end-to-end tests took $((SECONDS - t0)) s"

echo "vllm-ci: took $((SECONDS - started)) s"
