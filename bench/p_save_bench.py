#!/usr/bin/env python3
"""P's copy into its KV file (``layout.write_pd_blocks``, what the plugin's P worker runs in ``wait_for_save``,
inside vLLM's engine step): by numpy, one strided copy per run of consecutive blocks and layer, against the same
copy by torch, one ``copy_`` per block and layer (the function's fallback, and the plugin's P copy until
2026-12-03); and into blocks never touched before (a file's first pass, after each start of pd-connector) with
the plugin's mapping populated beside it (populate.py) or not (as until 2026-12-03). All in one run, taking
turns, on one torch thread as vLLM's CPU worker runs in the benches here (``OMP_NUM_THREADS=1``), with the caches
evicted before each copy (64 MiB copied), as a forward leaves them.

    <vLLM venv>/bin/python bench/p_save_bench.py [--geometry tiny,qwen] [--prompts 300,800,4096] [--n 200]

Rows: ``numpy`` and ``torch`` into the same blocks each time (pages touched before: a file in use), and ``views
once``, numpy with the caches' and the file's numpy views made once (``layout.CopyViews``, as the plugin copies)
where the ``numpy`` row makes them for each copy; ``fresh
populated``, ``fresh numpy`` and ``fresh torch`` into new blocks each time of fallocated files in /dev/shm as
pd-connector makes them (at most 1 GiB each, so fewer copies for large prompts). vLLM-shaped CPU caches hold the
source, the prompt's blocks scattered as vLLM's allocator hands them out after a while (every other block).
Prints p50 and p90 in ms per row and the ratios of the p50s.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "integrations/vllm"))
sys.path.insert(0, str(REPO / "bench"))

from pd_connector_vllm import layout, populate  # noqa: E402
from pd_connector_vllm.layout import KvFiles, PdGeometry, write_pd_blocks  # noqa: E402

from pd_service import BLOCK_TOKENS, GEOMETRIES, pct  # noqa: E402


def by_torch(layers, vllm_blocks, dst, pd_blocks) -> None:
    """write_pd_blocks taking its torch path, as when numpy cannot view a tensor."""
    view = layout._numpy_view
    layout._numpy_view = lambda t, shape: None
    try:
        write_pd_blocks(layers, vllm_blocks, dst, pd_blocks)
    finally:
        layout._numpy_view = view


FRESH_FILE_BYTES = 1 << 30


def kv_file(work: Path, name: str, size: int) -> str:
    """A KV file as pd-connector makes one: its pages allocated up front (posix_fallocate), none touched."""
    path = str(work / name)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.posix_fallocate(fd, 0, size)
    finally:
        os.close(fd)
    return path


def unpopulated() -> KvFiles:
    return KvFiles(populator=lambda *a: populate.Populator(*a, madvise=lambda address, length: 0))


def run(name: str, tokens: int, n: int, work: Path) -> dict:
    layers_n, heads, dim = GEOMETRIES[name]
    blocks = -(-tokens // BLOCK_TOKENS)
    g = PdGeometry(layers=layers_n, heads_per_rank=heads, head_dim=dim, block_tokens=BLOCK_TOKENS, dtype_bytes=2,
                   tp_size=1, block_bytes=layers_n * 2 * heads * BLOCK_TOKENS * dim * 2)
    gen = torch.Generator().manual_seed(1)
    caches = [torch.randn(2 * blocks + 2, heads, BLOCK_TOKENS, 2 * dim, generator=gen).to(torch.bfloat16)
              for _ in range(layers_n)]
    vllm_blocks = list(range(1, 2 * blocks + 1, 2))
    fresh_n = max(1, min(n + 10, FRESH_FILE_BYTES // (blocks * g.block_bytes)) - 10)
    fresh_blocks = (fresh_n + 10) * blocks
    mappings, dst, paths = [], {}, []
    for kind, files, size in (("numpy", unpopulated(), (blocks + 2) * g.block_bytes),
                              ("fresh populated", KvFiles(), fresh_blocks * g.block_bytes),
                              ("fresh numpy", unpopulated(), fresh_blocks * g.block_bytes),
                              ("fresh torch", unpopulated(), fresh_blocks * g.block_bytes)):
        path = kv_file(work, f"{name}-{tokens}-{kind.replace(' ', '-')}.kv", size)
        paths.append(path)
        dst[kind] = files.blocks(path, size, g, torch.bfloat16)
        if kind == "fresh populated" and not files.populator(path).wait(120):
            raise RuntimeError(f"{path} was not populated within 120 s (kernel without MADV_POPULATE_WRITE?)")
        mappings.append(files)
    dst["torch"] = dst["views once"] = dst["numpy"]
    views = layout.CopyViews(caches)   # as the plugin's FileKv holds them, made once at registration

    def views_once(layers, vllm_blocks, file, pd_blocks) -> None:
        write_pd_blocks(layers, vllm_blocks, file, pd_blocks, views=views)

    copies = {"numpy": write_pd_blocks, "views once": views_once, "torch": by_torch,
              "fresh populated": write_pd_blocks, "fresh numpy": write_pd_blocks, "fresh torch": by_torch}
    evict_src, evict_dst = np.ones(8 << 20), np.zeros(8 << 20)   # 64 MiB each way
    times = {kind: [] for kind in copies}
    for i in range(n + 10):
        for kind, copy in copies.items():
            fresh = kind.startswith("fresh")
            if fresh and i >= fresh_n + 10:
                continue
            pd_blocks = list(range(i * blocks, (i + 1) * blocks)) if fresh else list(range(2, 2 + blocks))
            np.copyto(evict_dst, evict_src)
            t0 = time.perf_counter()
            copy(caches, vllm_blocks, dst[kind], pd_blocks)
            took = time.perf_counter() - t0
            if i >= 10:
                times[kind].append(1000 * took)
    for kind in ("fresh populated", "fresh numpy"):   # the bytes are the torch copy's
        assert torch.equal(dst[kind][:fresh_blocks].view(torch.int16), dst["fresh torch"].view(torch.int16)), kind
    dst.clear()
    for files in mappings:
        files.close()
    for path in paths:   # up to 3 GiB of /dev/shm per row
        os.unlink(path)
    mib = blocks * g.block_bytes / 2**20
    row = {"geometry": name, "tokens": tokens, "blocks": blocks, "mib": mib, "n": n, "fresh_n": fresh_n}
    for kind, xs in times.items():
        row[kind] = {"p50": statistics.median(xs), "p90": pct(xs, 0.9)}
    row["numpy_vs_torch_p50"] = row["numpy"]["p50"] / row["torch"]["p50"]
    row["views_once_vs_numpy_p50"] = row["views once"]["p50"] / row["numpy"]["p50"]
    row["fresh_populated_vs_fresh_torch_p50"] = row["fresh populated"]["p50"] / row["fresh torch"]["p50"]
    print(f"{name:5s} {tokens:5d} tok {mib:6.2f} MiB | " + " | ".join(
        f"{kind} {row[kind]['p50']:.3f} / {row[kind]['p90']:.3f}" for kind in copies)
        + f" | numpy / torch {row['numpy_vs_torch_p50']:.2f}, views once / numpy "
        f"{row['views_once_vs_numpy_p50']:.2f}, fresh populated / fresh torch "
        f"{row['fresh_populated_vs_fresh_torch_p50']:.2f} (fresh rows: {fresh_n} copies)", flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--geometry", default="tiny,qwen")
    ap.add_argument("--prompts", default="300,800,4096")
    ap.add_argument("--n", type=int, default=200)
    a = ap.parse_args()
    if not 1 <= a.n <= 10_000:
        ap.error("--n 1..10000")
    torch.set_num_threads(1)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; torch threads 1; all times ms, "
          "p50 / p90", flush=True)
    with tempfile.TemporaryDirectory(prefix="pd-psave-bench-", dir="/dev/shm") as work:
        for g in a.geometry.split(","):
            for tokens in (int(x) for x in a.prompts.split(",")):
                run(g, tokens, a.n, Path(work))


if __name__ == "__main__":
    main()
