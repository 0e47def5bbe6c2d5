#!/usr/bin/env bash
# Checks what an operator deploys (k8s/, README "Container images and Kubernetes", "Operating it"):
# 1. every overlay of k8s/overlays built by kustomize (the Go module, `go install`ed once and cached by
#    scripts/go-tool.sh) into target/k8s/<overlay>.yaml, and validated strictly against the Kubernetes
#    schemas by kubernetes-validate (PyPI, schemas shipped offline; custom resources checked by kind);
# 2. K8sManifestsQuarkusTest: environment and ConfigMap keys against PdConfig, probes and the scrape path
#    against the running service, the container port, memory against the README "Sizing" formula;
#    a vLLM container (k8s/overlays/vllm) against the pd-connector sidecar beside it (VllmContainerCheck);
# 3. checkov (PyPI) over the built manifests: every finding fixed, or skipped in the manifest with a reason;
# 4. the PrometheusRule's rules with `promtool check rules` and its unit tests (k8s/monitoring/alerts-test.yaml)
#    with `promtool test rules`.
# Installs what it needs (Go tools under .cache/tools, a venv under .cache/deploy-venv); prints each step's time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
started=$SECONDS
step() { echo "deploy-check: $* ($((SECONDS - started)) s)"; }
export JAVA_HOME=${PD_JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}

KUSTOMIZE_VERSION=v5.7.1
PROMETHEUS_VERSION=v0.316.0   # promtool of Prometheus 3.16
K8S_VERSION=1.33              # the Kubernetes API the manifests are validated against
kustomize=$(bash scripts/go-tool.sh kustomize sigs.k8s.io/kustomize/kustomize/v5 "$KUSTOMIZE_VERSION")
# remove_all_sd leaves out Prometheus's service-discovery plugins (the AWS, Azure, GCE... SDKs), which only
# `promtool check service-discovery` uses: from an empty Go build cache promtool then builds in 150 s instead
# of about 400 (2026-12-04, docs/testing.md).
promtool=$(bash scripts/go-tool.sh promtool github.com/prometheus/prometheus/cmd/promtool "$PROMETHEUS_VERSION" \
  remove_all_sd)
venv=.cache/deploy-venv
if [ ! -x "$venv/bin/checkov" ] || [ ! -x "$venv/bin/kubernetes-validate" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check kubernetes-validate==1.37.0 checkov==3.3.30
fi
step "tools: kustomize $KUSTOMIZE_VERSION, promtool $PROMETHEUS_VERSION, kubernetes-validate $("$venv/bin/pip" show kubernetes-validate | awk '/^Version/{print $2}'), checkov $("$venv/bin/checkov" --version)"

rm -rf target/k8s && mkdir -p target/k8s
for overlay in k8s/overlays/*/; do
  name=$(basename "$overlay")
  "$kustomize" build "$overlay" > "target/k8s/$name.yaml"
  # --strict: unknown fields are errors. Custom resources (ServiceMonitor, PrometheusRule) have no schema
  # in the Kubernetes set: checked by promtool below and by the Operator's CRDs at apply time.
  "$venv/bin/kubernetes-validate" --strict --kubernetes-version "$K8S_VERSION" --quiet "target/k8s/$name.yaml" \
    2>&1 | tee "target/k8s/$name.validate.txt"
  if grep WARN "target/k8s/$name.validate.txt" | grep -qvE "schema for kind (PrometheusRule|ServiceMonitor) with"; then
    echo "deploy-check: kubernetes-validate warned about more than the two custom resources" >&2
    exit 1
  fi
  step "overlay $name: $(grep -c '^kind:' "target/k8s/$name.yaml") objects built and valid for Kubernetes $K8S_VERSION"
done

./mvnw -B -ntp -Dtest=K8sManifestsQuarkusTest -Dsurefire.failIfNoSpecifiedTests=false \
  -Ddeploy.k8s.manifests="$root/target/k8s" test
step "K8sManifestsQuarkusTest passed"

"$venv/bin/checkov" --quiet --compact --skip-download --framework kubernetes --directory target/k8s
step "checkov: no finding left unfixed or unexplained"

rules=target/k8s/pd-connector.rules.yaml
"$venv/bin/python" - "$rules" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open("k8s/base/prometheusrule.yaml")) if d]
rule = [d for d in docs if d.get("kind") == "PrometheusRule"][0]
yaml.safe_dump({"groups": rule["spec"]["groups"]}, open(sys.argv[1], "w"), sort_keys=False)
PY
"$promtool" check rules "$rules"
cp k8s/monitoring/alerts-test.yaml target/k8s/alerts-test.yaml
"$promtool" test rules target/k8s/alerts-test.yaml
step "promtool: rules valid, alert unit tests pass"
echo "deploy-check: passed in $((SECONDS - started)) s"
