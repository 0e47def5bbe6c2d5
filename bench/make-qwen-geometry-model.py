#!/usr/bin/env python3
"""A model with Qwen2.5-0.5B's KV geometry for the benches: 24 layers, 2 KV heads, head dim 64, served in
bfloat16 (12 KiB of KV per token), made locally like the tiny test model (the model hub is out of reach).

    python bench/make-qwen-geometry-model.py OUT_DIR

Only the KV geometry is Qwen2.5-0.5B's: hidden size 128 (2 attention heads of 64), a 512-token vocabulary and a
small MLP keep the forward cheap on a CPU, so what the benches measure is the KV's movement, not the model. It
reuses integrations/vllm/scripts/make-tiny-model.py with these constants; the same seed gives the same files.
"""
import importlib.util
import sys
from pathlib import Path

script = Path(__file__).resolve().parents[1] / "integrations/vllm/scripts/make-tiny-model.py"
spec = importlib.util.spec_from_file_location("make_tiny_model", script)
tiny = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tiny)
tiny.LAYERS, tiny.HEADS, tiny.KV_HEADS, tiny.HEAD_DIM, tiny.HIDDEN = 24, 2, 2, 64, 128
tiny.main(sys.argv[1:])
