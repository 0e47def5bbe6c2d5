"""Check 4 of gpu_check.py: the plugin's worker itself (worker.PdWorker with kv_places.PoolKv, as vLLM runs it under
pd.kv.memory=vram) over a pool another process allocated and exported as pd-connector's VramPool does. kv-layout
and the pull reply come from a stand-in client (no pd-connector here: no JDK). P: ``save`` gathers a request's
blocks into the pool and returns after its copy; the exporter's hash of its whole pool must be the hash of what
the same gather gives into a local tensor. D: a second worker's load scatters those pool blocks into a zeroed
cache; the load is reported finished, the pull released after the copy, and the blocks read back equal P's."""

from __future__ import annotations

import base64
import hashlib
import time


def check_worker(torch, uuid, exporter_class):
    from fakes import FakeClient
    from kv_cases import CASES
    from pd_connector_vllm.gpu_layout import BlockCopier, resolve_layout
    from pd_connector_vllm.layout import PdGeometry
    from pd_connector_vllm.specs import LoadSpec, SaveSpec
    from pd_connector_vllm.worker import PdWorker

    L, H, T, D, NB, PB = 4, 2, 16, 64, 24, 16
    g = PdGeometry(L, H, D, T, 2, 1, L * 2 * H * T * D * 2)
    case = next(c for c in CASES if c.name == "FLASH_ATTN packed LBHNC")
    device = torch.device("cuda", 0)
    exporter = exporter_class(PB * g.block_bytes, uuid)
    workers = []
    try:
        layout = {"layers": L, "heads_per_rank": H, "head_dim": D, "block_tokens": T, "dtype_bytes": 2, "tp_size": 1,
                  "block_bytes": g.block_bytes, "engine_id": "gpu-check", "role": "producer",
                  "pools": [{"rank": 0, "gpu_uuid": uuid, "bytes": PB * g.block_bytes, "incarnation": 1,
                             "ipc_handle": base64.b64encode(bytes.fromhex(exporter.hello["handle"])).decode()}]}

        def caches(layers):
            return {f"model.layers.{i}.self_attn.attn": t for i, t in enumerate(layers)}

        p_layers = case.build(L, NB, H, T, D, torch.bfloat16, device, torch.Generator().manual_seed(5))
        p_client = FakeClient({"kv_layout": lambda: layout})
        p = PdWorker(p_client, tp_rank=0, tp_size=1, load_threads=1)
        workers.append(p)
        p.register(caches(p_layers), layout, case.backend)
        vllm_blocks, pool_blocks = [3, 9, 22], [15, 0, 8]
        p.save([SaveSpec("r", "r", vllm_blocks, pool_blocks, 3 * T, [(None, 0)], "g")])

        local = torch.zeros(PB, *g.block_shape(), dtype=torch.bfloat16, device=device)
        BlockCopier(resolve_layout(case.backend, p_layers, g), p_layers, g).gather(vllm_blocks, local, pool_blocks).wait()
        expected = hashlib.sha256(local.cpu().view(torch.uint8).numpy().tobytes()).hexdigest()
        if exporter.ask(cmd="verify")["sha256"] != expected:
            raise AssertionError("P's save did not leave in the exporter's pool what the gather gives")

        d_layers = [torch.zeros_like(t) for t in p_layers]
        events = []
        reply = {"state": "received", "block_ids": pool_blocks, "block_bytes": g.block_bytes,
                 "ranks": [{"rank": 0, "kv_file": None, "region_bytes": PB * g.block_bytes}], "timings": {}}
        d_client = FakeClient({"kv_layout": lambda: dict(layout, role="consumer"), "pull": reply,
                               "release": lambda *a: events.append("released")})
        d = PdWorker(d_client, tp_rank=0, tp_size=1, load_threads=1)
        workers.append(d)
        d.register(caches(d_layers), dict(layout, role="consumer"), case.backend)
        d.start_loads([LoadSpec("r", "r", list(range(3 * T)), {}, [1, 7, 20], 0)], [])
        deadline = time.monotonic() + 30
        results = d.take_results()
        while not results.finished and time.monotonic() < deadline:
            time.sleep(0.01)
            results = d.take_results()
        if results.finished != {"r"} or results.failed:
            raise AssertionError(f"D's load did not finish cleanly: {results}")
        if events != ["released"]:
            raise AssertionError(f"D's pull was not released once: {events}")
        back = torch.zeros(3, *g.block_shape(), dtype=torch.bfloat16, device=device)
        BlockCopier(resolve_layout(case.backend, d_layers, g), d_layers, g).gather([1, 7, 20], back, [0, 1, 2]).wait()
        if not torch.equal(back.view(torch.int16), local[pool_blocks].view(torch.int16)):  # bits: NaNs compare unequal
            raise AssertionError("D's vLLM blocks do not hold the pool blocks P saved")
    finally:
        for w in workers:
            w.shutdown()  # unmaps before the exporter frees (CUDA's rule for legacy IPC)
        exporter.finish()
    return (f"PdWorker P save into a {PB * g.block_bytes} B pool of pid {exporter.proc.pid} (hashed alike there), "
            "D load from it into a zeroed cache (reported, released once, bytes equal); both unmapped, then freed")
