#!/usr/bin/env bash
# Issue 25's GPU checks (docs/gpu.md), for a GPU machine that reaches no registry and has torch with CUDA but no
# JDK and no vLLM: the plugin's copies on CUDA tensors against pd-connector's documented block layout, a VRAM
# pool exported by one process (as pd-connector's VramPool does it) and opened by the plugin in another, and,
# optionally, NIXL's VRAM registration and a cross-process VRAM READ where NIXL's Python package is carried.
# Takes nothing but this repository's files (about 5 MiB travel; NIXL, if carried, on top) and a few minutes.
#
# Prints PASS / FAIL / DID NOT RUN per check and a summary line. Exit 0: every required check passed;
# 1: a check failed; 2: the checks did not run (no CUDA device, no torch, no libcuda.so.1): never a pass.
# Usage: scripts/gpu-check.sh   (PYTHON=... to pick the interpreter; GPU_CHECK_TIMEOUT=seconds, default 600)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
if ! command -v "$python" >/dev/null 2>&1; then
  echo "GPU CHECK DID NOT RUN: no $python here. Nothing was checked on a GPU: this is no pass."
  exit 2
fi
PYTHONUNBUFFERED=1 timeout "${GPU_CHECK_TIMEOUT:-600}" "$python" "$root/scripts/gpu/gpu_check.py" "$@"
rc=$?
if [ "$rc" -eq 124 ]; then
  echo "FAIL gpu-check: timed out after ${GPU_CHECK_TIMEOUT:-600} s"
  exit 1
fi
exit "$rc"
