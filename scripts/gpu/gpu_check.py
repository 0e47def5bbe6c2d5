#!/usr/bin/env python3
"""The GPU half of the GPU path's checks (docs/gpu.md), for a GPU machine that has torch with CUDA and nothing else
of the project's (no JDK, no vLLM, no registry): scripts/gpu-check.sh runs it. Prints one line per check,
``PASS name``, ``FAIL name: why`` or ``DID NOT RUN name: why``, and ends with a summary; exits 0 only if every
required check passed, 1 if one failed, 2 if the checks did not run (no GPU here: that is no pass).

1. copies: gpu_layout.BlockCopier over CUDA tensors, every accepted layout (tests/kv_cases.py), bf16 and fp32:
   pool blocks hold what the backend's kernel reads, at the documented offsets ([layer][k|v][head][token]
   [dim]); scattered back they give the kernel the same KV; the side stream waits for the compute stream
   (a write queued just before a gather lands in the pool); a CUDA cache with a host (DRAM) pool too.
2. ipc: a pool allocated and exported in another process exactly as pd-connector's VramPool does
   (cuMemAlloc_v2 in the GPU's primary context, zeroed, cuIpcGetMemHandle; Python here, where no JVM is),
   opened by the plugin's gpu_pool.IpcPool (UUID checked), filled by the plugin's gather, read back and
   hashed by the exporter; the mapping's release refused while a view lives; closed before the exporter
   frees; a pool named with another GPU's UUID refused; expandable segments refused.
3. worker: the plugin's worker (PdWorker, kv_places.PoolKv) as vLLM runs it under pd.kv.memory=vram, over a pool
   the exporter allocated: P's save lands in the pool, D's load scatters it back (worker_check.py).
4. services: P's and D's pd-connectors from the GPU bundle (its jlinked runtime, the app, the NIXL libraries the
   service and the image load) with pd.kv.memory=vram on this GPU, the plugin's PdWorker saving into P's pool and
   loading D's pulls through the real HTTP client: ten pulls of 96 MB, bytes compared, the transport D learned
   from UCX, the READ rate, both JVMs' RSS, the GPU memory given back (service_check.py). Twice: with UCX as
   deployed, and with UCX_CUDA_IPC_ENABLE_GET_ZCOPY=y (cuda_ipc GETs on where NVML sees no active NVLink).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "integrations", "vllm"), os.path.join(ROOT, "integrations", "vllm", "tests")]

RESULTS: list[tuple[str, str, str]] = []


def report(status: str, name: str, detail: str = "") -> None:
    print(f"{status} {name}" + (f": {detail}" if detail else ""), flush=True)
    RESULTS.append((status, name, detail))


def run_check(name, fn, *args, optional=False):
    try:
        detail = fn(*args)
        report("PASS", name, detail or "")
    except DidNotRun as e:
        report("DID NOT RUN", name, str(e))
    except Exception as e:  # noqa: BLE001 - any failure is this check's FAIL, with its cause
        report("FAIL", name, f"{type(e).__name__}: {e}")
        traceback.print_exc()


class DidNotRun(Exception):
    pass


# ---- environment ---------------------------------------------------------------------------------------------


def environment():
    """(torch, LibCuda, uuid of cuda:0) or raises DidNotRun naming what is missing."""
    try:
        import torch
    except ImportError as e:
        raise DidNotRun(f"no torch here ({e})")
    if not torch.cuda.is_available():
        raise DidNotRun(f"torch {torch.__version__} sees no CUDA device (torch.cuda.is_available() is False)")
    from pd_connector_vllm.gpu_pool import GpuPoolError, LibCuda
    try:
        cuda = LibCuda()
    except GpuPoolError as e:
        raise DidNotRun(str(e))
    torch.cuda.init()
    uuid = cuda.uuid(cuda.device(0))
    print(f"INFO torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)} {uuid}, "
          f"{cuda.device_count()} device(s)", flush=True)
    return torch, cuda, uuid


# ---- 1. copies -----------------------------------------------------------------------------------------------


def check_copies(torch, case, dtype, device="cuda"):
    from kv_cases import bits, pd_block_offset
    from pd_connector_vllm.gpu_layout import BlockCopier, resolve_layout
    from pd_connector_vllm.layout import PdGeometry

    L, H, T, D, NB, PB = 4, 2, 16, 64, 40, 32
    g = PdGeometry(L, H, D, T, torch.empty((), dtype=dtype).element_size(), 1,
                   L * 2 * H * T * D * torch.empty((), dtype=dtype).element_size())
    dev = torch.device(device, 0) if device == "cuda" else torch.device(device)
    layers = case.build(L, NB, H, T, D, dtype, dev, torch.Generator().manual_seed(7))
    copier = BlockCopier(resolve_layout(case.backend, layers, g), layers, g)
    pool = torch.zeros(PB, *g.block_shape(), dtype=dtype, device=dev)
    src, dst = [31, 2, 17, 5, 39], [0, 30, 11, 7, 3]
    # a write queued on the compute stream just before the gather must land in the pool (side-stream order):
    # the write waits for long matmuls on that stream, so a gather that did not wait for it would read old KV
    big = torch.randn(4096 if dev.type == "cuda" else 8, 4096 if dev.type == "cuda" else 8, device=dev)
    for _ in range(8):
        big = big @ big / 4096
    one = (big[0, 0] * 0 + 1).to(dtype)  # 1, computed only after the matmuls
    copier.layout.scatter(layers[1], torch.tensor([17], device=dev),
                          torch.ones(1, 2, H, T, D, dtype=dtype, device=dev) * one, g)
    done = copier.gather(src, pool, dst)
    done.wait()
    for vb, pb in zip(src, dst):
        for l, t in enumerate(layers):
            if not torch.equal(bits(pool[pb, l]), bits(case.kv_of(t, vb, D))):
                raise AssertionError(f"pool block {pb} layer {l} is not vLLM block {vb} as the kernel reads it")
    if not bool((pool[11, 1] == 1).all()):
        raise AssertionError("the gather did not wait for the compute stream's write before it")
    flat = bits(pool).reshape(PB, -1).cpu()
    want = bits(case.kv_of(layers[3], 39, D)).cpu()
    for kv, h, tok, d in ((0, 0, 0, 0), (1, H - 1, T - 1, D - 1), (1, 0, 9, 33)):
        if flat[3, pd_block_offset(3, kv, h, tok, d, H, T, D)] != want[kv, h, tok, d]:
            raise AssertionError(f"element (3, {kv}, {h}, {tok}, {d}) is not at its documented offset")
    if bits(pool[[1, 2, 4]]).any():
        raise AssertionError("pool blocks outside the copy changed")
    # the way back (D): into other vLLM blocks of a fresh cache
    back = case.build(L, NB, H, T, D, dtype, dev, torch.Generator().manual_seed(8))
    before = [t.clone() for t in back]
    back_copier = BlockCopier(copier.layout, back, g)
    back_done = back_copier.scatter(pool, dst, [0, 1, 2, 3, 4])
    back_done.order_compute_stream()
    back_done.wait()
    for i, vb in enumerate(src):
        for l in range(L):
            if not torch.equal(bits(case.kv_of(back[l], i, D)), bits(case.kv_of(layers[l], vb, D))):
                raise AssertionError(f"scattered block {i} layer {l} is not what was gathered from {vb}")
    for l in range(L):
        if not torch.equal(bits(case.kv_of(back[l], 20, D)), bits(case.kv_of(before[l], 20, D))):
            raise AssertionError("a vLLM block outside the scatter changed")
    # a CUDA cache with a host (DRAM) pool: the same copier, across devices
    host = torch.zeros(PB, *g.block_shape(), dtype=dtype)
    copier.gather(src, host, dst).wait()
    if not torch.equal(bits(host), bits(pool.cpu())):
        raise AssertionError("the host pool differs from the VRAM pool for the same copy")
    return copier.layout.name


def check_copy_speed(torch):
    """A Qwen2.5-0.5B-like geometry (24 layers, 2 heads, 16 tokens, dim 64, bf16), 256 blocks: INFO only."""
    from kv_cases import CASES
    from pd_connector_vllm.gpu_layout import BlockCopier, resolve_layout
    from pd_connector_vllm.layout import PdGeometry

    case = next(c for c in CASES if c.name == "FLASH_ATTN packed LBHNC")
    L, H, T, D, NB, N = 24, 2, 16, 64, 2048, 256
    g = PdGeometry(L, H, D, T, 2, 1, L * 2 * H * T * D * 2)
    dev = torch.device("cuda", 0)
    layers = case.build(L, NB, H, T, D, torch.bfloat16, dev, torch.Generator().manual_seed(1))
    pool = torch.zeros(N, *g.block_shape(), dtype=torch.bfloat16, device=dev)
    copier = BlockCopier(resolve_layout(case.backend, layers, g), layers, g)
    ids = list(range(0, 2 * N, 2))
    copier.gather(ids, pool, list(range(N))).wait()
    t0 = time.perf_counter()
    for _ in range(10):
        done = copier.gather(ids, pool, list(range(N)))
    done.wait()
    s = (time.perf_counter() - t0) / 10
    return f"{N} blocks of {g.block_bytes} B gathered in {s * 1e3:.2f} ms ({N * g.block_bytes / s / 1e9:.1f} GB/s)"


# ---- 2. ipc --------------------------------------------------------------------------------------------------


class Exporter:
    """The child process that plays pd-connector's VramPool (allocate, zero, export; read back; free)."""

    def __init__(self, nbytes: int, uuid: str):
        cmd = [sys.executable, os.path.abspath(__file__), "--export", str(nbytes), uuid]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.hello = self.read()

    def read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"the exporter exited ({self.proc.wait(10)})")
        return json.loads(line)

    def ask(self, **cmd) -> dict:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self.read()

    def finish(self) -> None:
        try:
            freed = self.ask(cmd="free")
            if not freed.get("freed"):
                raise AssertionError(f"the exporter did not free its pool: {freed}")
        finally:
            if self.proc.wait(30) != 0:
                raise AssertionError(f"the exporter exited with {self.proc.returncode}")


def export_main(nbytes: int, uuid: str) -> int:
    """--export: pd-connector's side, with the driver calls io.pdconnector.cuda.VramPool makes, in its order."""
    from pd_connector_vllm.gpu_pool import LibCuda

    cuda = LibCuda()
    device = next(d for d in (cuda.device(i) for i in range(cuda.device_count())) if cuda.uuid(d) == uuid)
    ordinal = [cuda.device(i) for i in range(cuda.device_count())].index(device)
    ctx = cuda.retain_primary(device)
    cuda.set_current(ctx)
    ptr = cuda.alloc(nbytes)
    cuda.memset(ptr, 0, nbytes)
    handle = cuda.ipc_handle(ptr)
    hello = {"handle": handle.hex(), "nbytes": nbytes, "ordinal": ordinal, "ptr": ptr}
    print(json.dumps(hello), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["cmd"] == "verify":
            data = cuda.copy_to_host(ptr, nbytes)
            print(json.dumps({"sha256": hashlib.sha256(data).hexdigest()}), flush=True)
        elif cmd["cmd"] == "free":
            cuda.free(ptr)
            cuda.release_primary(device)
            print(json.dumps({"freed": True}), flush=True)
            return 0
    return 1


def check_ipc(torch, cuda, uuid):
    from pd_connector_vllm.gpu_layout import BlockCopier, resolve_layout
    from pd_connector_vllm.gpu_pool import GpuPoolError, IpcPool, PoolInUse
    from pd_connector_vllm.layout import PdGeometry
    from kv_cases import CASES

    L, H, T, D, NB, PB = 4, 2, 16, 64, 24, 16
    g = PdGeometry(L, H, D, T, 2, 1, L * 2 * H * T * D * 2)
    exporter = Exporter(PB * g.block_bytes, uuid)
    pool = None
    try:
        handle = bytes.fromhex(exporter.hello["handle"])
        wrong = "GPU-00000000" + uuid[12:]
        try:
            IpcPool(cuda, handle, PB * g.block_bytes, wrong, torch.device("cuda", 0))
            raise AssertionError("a pool named with another GPU's UUID was opened")
        except GpuPoolError as e:
            if "must be the same GPU" not in str(e):
                raise
        pool = IpcPool(cuda, handle, PB * g.block_bytes, uuid, torch.device("cuda", 0))
        blocks = pool.blocks(torch.bfloat16, g.block_shape())
        if bool(blocks.ne(0).any()):
            raise AssertionError("the opened pool is not the exporter's zeroed memory")
        case = next(c for c in CASES if c.name == "FLASH_ATTN packed LBHNC")
        layers = case.build(L, NB, H, T, D, torch.bfloat16, torch.device("cuda", 0), torch.Generator().manual_seed(3))
        copier = BlockCopier(resolve_layout(case.backend, layers, g), layers, g)
        copier.gather([3, 9, 22], blocks, [15, 0, 8]).wait()
        expected = hashlib.sha256(blocks.cpu().view(torch.uint8).numpy().tobytes()).hexdigest()
        theirs = exporter.ask(cmd="verify")["sha256"]
        if theirs != expected:
            raise AssertionError("the exporter reads other bytes than the plugin wrote into the pool")
        try:
            pool.close()
            raise AssertionError("the pool closed under a live view")
        except PoolInUse:
            pass
    finally:
        blocks = None
        if pool is not None:
            pool.close()  # the plugin unmaps before pd-connector frees (CUDA's rule for legacy IPC)
        exporter.finish()
    from pd_connector_vllm.gpu_pool import refuse_expandable_segments
    try:
        refuse_expandable_segments({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
        raise AssertionError("expandable segments were not refused")
    except GpuPoolError:
        pass
    return (f"{PB * g.block_bytes} B exported by pid {exporter.proc.pid}, opened here by UUID, gathered into, "
            "hashed alike on both sides, closed then freed; another GPU's UUID and expandable segments refused")


def info_expandable_segments(torch):
    """What torch's own CUDA sharing hands out with expandable segments on and off (INFO: no pass or fail)."""
    code = ("import torch; t = torch.empty(1 << 22, device='cuda'); h = t.untyped_storage()._share_cuda_()[1]; "
            "print(h[:2])")
    for setting in ("expandable_segments:False", "expandable_segments:True"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTORCH_CUDA_ALLOC_CONF": setting})
        print(f"INFO torch _share_cuda_ handle prefix with {setting}: {out.stdout.strip() or out.stderr.strip()[-200:]}",
              flush=True)


# ---- main ----------------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--export", nargs=2, metavar=("NBYTES", "UUID"))
    parser.add_argument("--bundle", default=os.path.join(ROOT, "target", "gpu-bundle", "pd-gpu-bundle.tar.zst"),
                        help="the GPU bundle (scripts/gpu-bundle.sh) the services check runs pd-connector from")
    parser.add_argument("--logs", default=os.path.join(ROOT, "target", "gpu-check"),
                        help="where the services check keeps both pd-connectors' logs")
    parser.add_argument("--dry-run-on-cpu", action="store_true",
                        help="this script's own test where no GPU is: the copy checks on CPU tensors; proves nothing "
                             "about a GPU and says so")
    args = parser.parse_args()
    if args.export:
        return export_main(int(args.export[0]), args.export[1])
    if args.dry_run_on_cpu:
        import torch
        from kv_cases import CASES
        for case in CASES:
            run_check(f"copies {case.name} (CPU dry run)", check_copies, torch, case, torch.bfloat16, "cpu")
        from service_check import check_services
        run_check("services from the bundle (CPU dry run: dram, CPU caches)", check_services, torch, args.bundle,
                  "dram", args.logs)
        failed = [n for s, n, _ in RESULTS if s == "FAIL"]
        print(f"GPU CHECK DRY RUN ON CPU {'FAILED' if failed else 'ran'}: the script's copy checks on CPU tensors and "
              "its services check in host memory; NOTHING WAS CHECKED ON A GPU", flush=True)
        return 1 if failed else 2
    started = time.time()
    try:
        torch, cuda, uuid = environment()
    except DidNotRun as e:
        print(f"GPU CHECK DID NOT RUN: {e}. Nothing was checked on a GPU: this is no pass.", flush=True)
        return 2
    from kv_cases import CASES
    for case in CASES:
        for dtype in (torch.bfloat16, torch.float32):
            run_check(f"copies {case.name} {str(dtype).replace('torch.', '')}", check_copies, torch, case, dtype)
    try:
        print(f"INFO copy speed: {check_copy_speed(torch)}", flush=True)
    except Exception as e:  # noqa: BLE001 - information only
        print(f"INFO copy speed not measured: {e}", flush=True)
    run_check("ipc pool exported by another process, opened by the plugin", check_ipc, torch, cuda, uuid)
    try:
        info_expandable_segments(torch)
    except Exception as e:  # noqa: BLE001 - information only
        print(f"INFO expandable segments not probed: {e}", flush=True)
    from worker_check import check_worker
    run_check("worker P save and D load through an exported pool", check_worker, torch, uuid, Exporter)
    from service_check import check_services
    run_check("services from the bundle, UCX as deployed", check_services, torch, args.bundle, "vram",
              os.path.join(args.logs, "as-deployed"))
    run_check("services from the bundle, UCX_CUDA_IPC_ENABLE_GET_ZCOPY=y", check_services, torch, args.bundle,
              "vram", os.path.join(args.logs, "get-zcopy"), {"UCX_CUDA_IPC_ENABLE_GET_ZCOPY": "y"})
    failed = [n for s, n, _ in RESULTS if s == "FAIL"]
    passed = [n for s, n, _ in RESULTS if s == "PASS"]
    skipped = [n for s, n, _ in RESULTS if s == "DID NOT RUN"]
    print(f"GPU CHECK {'FAILED' if failed else 'PASSED'}: {len(passed)} passed, {len(failed)} failed, "
          f"{len(skipped)} did not run ({', '.join(skipped) or 'none'}) in {time.time() - started:.0f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
