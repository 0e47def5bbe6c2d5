#!/usr/bin/env bash
# Runs one of the vLLM benches in vLLM's venv:
#   bench/vllm-pd.sh [options]              side by side: vLLM's own NixlConnector vs. the pd-connector plugin
#                                           (bench/vllm_pd_bench.py: --concurrency, --requests, --rounds, ...)
#   bench/vllm-pd.sh --prefill [options]    P's prefill-only throughput: no connector, stock, plugin
#                                           (bench/vllm_prefill_bench.py: --requests, --concurrency, --fleets, ...)
# Installs vLLM once (integrations/vllm/scripts/setup-vllm.sh) and needs the packaged service (./mvnw -B -ntp
# package -DskipTests) and NIXL (scripts/fetch-nixl.sh). PD_BENCH_MODEL=<dir> serves another model (e.g.
# bench/make-qwen-geometry-model.py's). Everything runs on 127.0.0.1; every process is stopped at the end.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
export PD_CONNECTOR_JAR=${PD_CONNECTOR_JAR:-$root/target/quarkus-app/quarkus-run.jar}
export PD_NIXL_HOME=${PD_NIXL_HOME:-${PD_NIXL_CACHE:-$root/.cache/nixl}/nixl-cu12-1.5.1}
setup_out=$(bash integrations/vllm/scripts/setup-vllm.sh)
export PD_VLLM_PYTHON=$(sed -n 's/^setup-vllm: python=//p' <<<"$setup_out")
export PD_VLLM_MODEL=${PD_BENCH_MODEL:-$(sed -n 's/^setup-vllm: model=//p' <<<"$setup_out")}  # PD_BENCH_MODEL: another model dir
export PD_E2E_LOGS=${PD_E2E_LOGS:-$root/target/vllm-bench/logs}
# pd-connector's JVM as k8s/base/configmap.yaml runs it (the JVM's own compilers and GC), not the tests' C1-only one
export PD_E2E_JAVA_OPTS=${PD_E2E_JAVA_OPTS:-"-Xms512m -Xmx512m -XX:MaxMetaspaceSize=160m"}
# vLLM's KV cache as the benches always had it (the tests use 128 MiB): 1 GiB per TP worker
export PD_E2E_VLLM_KV_MIB=${PD_E2E_VLLM_KV_MIB:-1024}
bench=bench/vllm_pd_bench.py
if [ "${1:-}" = "--prefill" ]; then
  bench=bench/vllm_prefill_bench.py
  shift
fi
exec "$PD_VLLM_PYTHON" "$bench" "$@"
