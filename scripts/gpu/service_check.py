"""Check 4 of gpu_check.py: the whole VRAM path with the Java side. P's and D's pd-connectors run from the GPU bundle
(scripts/gpu-bundle.sh: a jlinked runtime, the packaged app, the NIXL libraries the service and the image load) with
pd.kv.memory=vram on this machine's GPU; the plugin's real PdWorker, as vLLM runs it, saves FlashAttention-layout CUDA
caches into P's pool and loads D's pulls into a second cache, through the plugin's real HTTP client. About ten pulls
of about 100 MB, each with the lease check; D's blocks are compared bit for bit with P's; the transport D's
pd-connector learned from UCX, the READ rate from its own metrics, both JVMs' RSS, and after the teardown the GPU's
free memory back where it was.

``--dry-run-on-cpu`` runs the same steps here with pd.kv.memory=dram, CPU caches and P's KV files: a test of this
script and of the bundle, never of a GPU."""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

KV_HEADS, HEAD_DIM, BLOCK_TOKENS = 8, 128, 16
BLOCKS_PER_PULL, POOL_BLOCKS, CACHE_BLOCKS = 48, 64, 112
# on the GPU 32 layers, 2 MiB a block in bf16, 96 MiB a pull; the dry run on this machine's two cores, less
GPU_SHAPE, DRY_RUN_SHAPE = (32, 10), (4, 3)  # (layers, pulls)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def unpack(bundle: str, into: str) -> None:
    """The bundle is tar.zst (zstd --long=27): the zstd tool unpacks it, or Python's zstandard module."""
    if shutil.which("zstd"):
        with subprocess.Popen(["zstd", "-q", "-d", "--long=27", "-c", bundle], stdout=subprocess.PIPE) as z:
            subprocess.run(["tar", "-C", into, "-xf", "-"], stdin=z.stdout, check=True)
            if z.wait() != 0:
                raise RuntimeError(f"zstd could not unpack {bundle}")
        return
    import tarfile
    try:
        import zstandard
        with open(bundle, "rb") as f, zstandard.ZstdDecompressor(max_window_size=1 << 27).stream_reader(f) as r:
            tarfile.open(fileobj=r, mode="r|").extractall(into, filter="tar")
        return
    except ImportError:
        pass
    tar = os.path.join(into, "bundle.tar")
    with open(bundle, "rb") as src, open(tar, "wb") as dst:
        LibZstd().decompress(src, dst)  # libzstd.so.1: the system's, where neither the tool nor the module is
    with tarfile.open(tar) as t:
        t.extractall(into, filter="tar")
    os.remove(tar)


class LibZstd:
    """Streaming decompression through libzstd.so.1 (ctypes): ZSTD_decompressStream with a 2^27 window."""

    def __init__(self):
        import ctypes
        import ctypes.util
        self.ct = ctypes
        name = ctypes.util.find_library("zstd") or "libzstd.so.1"
        try:
            self.lib = ctypes.CDLL(name)
        except OSError as e:
            raise RuntimeError("no zstd tool, no zstandard module and no libzstd.so.1 to unpack the bundle") from e
        self.lib.ZSTD_createDCtx.restype = ctypes.c_void_p
        self.lib.ZSTD_DCtx_setParameter.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        self.lib.ZSTD_decompressStream.restype = ctypes.c_size_t
        self.lib.ZSTD_decompressStream.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        self.lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
        self.lib.ZSTD_freeDCtx.argtypes = [ctypes.c_void_p]

    def decompress(self, src, dst, chunk: int = 1 << 20) -> None:
        ct = self.ct

        class Buffer(ct.Structure):
            _fields_ = [("ptr", ct.c_void_p), ("size", ct.c_size_t), ("pos", ct.c_size_t)]

        dctx = self.lib.ZSTD_createDCtx()
        out = ct.create_string_buffer(chunk)
        try:
            self.lib.ZSTD_DCtx_setParameter(dctx, 100, 27)  # ZSTD_d_windowLogMax: the bundle is --long=27
            last = 0
            while data := src.read(chunk):
                inb = ct.create_string_buffer(data, len(data))
                ib = Buffer(ct.cast(inb, ct.c_void_p), len(data), 0)
                while ib.pos < ib.size:
                    ob = Buffer(ct.cast(out, ct.c_void_p), chunk, 0)
                    last = self.lib.ZSTD_decompressStream(dctx, ct.byref(ob), ct.byref(ib))
                    if self.lib.ZSTD_isError(last):
                        raise RuntimeError(f"libzstd could not decompress the bundle (code {last})")
                    dst.write(out.raw[:ob.pos])
            while last != 0:  # frames done only when it says 0
                ob = Buffer(ct.cast(out, ct.c_void_p), chunk, 0)
                ib = Buffer(None, 0, 0)
                last = self.lib.ZSTD_decompressStream(dctx, ct.byref(ob), ct.byref(ib))
                if self.lib.ZSTD_isError(last) or ob.pos == 0 and last != 0:
                    raise RuntimeError("the bundle ends inside a zstd frame")
                dst.write(out.raw[:ob.pos])
        finally:
            self.lib.ZSTD_freeDCtx(dctx)


class Service:
    """One pd-connector from the bundle: started, asked, and stopped (SIGTERM: its pools freed, then the process)."""

    def __init__(self, run: str, name: str, memory: str, logs: str, layers: int, ucx_env: dict[str, str] | None,
                 *settings: str):
        self.name, self.port = name, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        os.makedirs(os.path.join(run, f"shm-{name}"), exist_ok=True)
        self.log_path = os.path.join(logs, f"{name}.log")
        gpu = ["-Dpd.kv.gpu-uuid=sole-visible"] if memory == "vram" else []
        cmd = [os.path.join(run, "jre", "bin", "java"), "--enable-native-access=ALL-UNNAMED", "-Xmx512m",
               "-Dquarkus.http.host=127.0.0.1", f"-Dquarkus.http.port={self.port}", f"-Dpd.engine-id=gpu-check-{name}",
               f"-Dpd.nixl.home={os.path.join(run, 'nixl')}", f"-Dpd.kv.shm-dir={os.path.join(run, f'shm-{name}')}",
               f"-Dpd.lease.state-dir={os.path.join(run, f'state-{name}')}", "-Dpd.advertised-host=127.0.0.1",
               f"-Dpd.kv.memory={memory}", *gpu, f"-Dpd.model.layers={layers}", f"-Dpd.model.kv-heads={KV_HEADS}",
               f"-Dpd.model.head-dim={HEAD_DIM}", f"-Dpd.model.block-tokens={BLOCK_TOKENS}",
               "-Dpd.model.dtype-bytes=2", f"-Dpd.kv.num-blocks={POOL_BLOCKS}", "-Dpd.kv.max-num-seqs=8",
               *settings, "-jar", os.path.join(run, "app", "quarkus-run.jar")]
        env = dict(os.environ, **(ucx_env or {}))
        self.proc = subprocess.Popen(cmd, stdout=open(self.log_path, "w"), stderr=subprocess.STDOUT, env=env)

    def get(self, path: str) -> str:
        with urllib.request.urlopen(self.url + path, timeout=10) as r:
            return r.read().decode()

    def await_ready(self, seconds: float = 120) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.name} exited {self.proc.returncode}: {self.tail()}")
            try:
                self.get("/q/health/ready")
                return
            except OSError:
                time.sleep(0.5)
        raise AssertionError(f"{self.name} not ready within {seconds:.0f} s: {self.tail()}")

    def metric(self, name: str) -> list[tuple[str, float]]:
        out = []
        for line in self.get("/q/metrics").splitlines():
            m = re.match(re.escape(name) + r"(\{[^}]*\})?\s+(\S+)$", line)
            if m:
                out.append((m.group(1) or "", float(m.group(2))))
        return out

    def await_producer(self, engine_id: str, seconds: float = 30) -> None:
        """A decoder lists the producer at its static registry's first refresh."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if re.search(r'"engine_id"\s*:\s*"' + re.escape(engine_id) + '"', self.get("/v1/registry")):
                return
            time.sleep(0.5)
        raise AssertionError(f"{self.name} does not list {engine_id} within {seconds:.0f} s: {self.tail()}")

    def rss_mib(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        return kb / 1024

    def tail(self, n: int = 15) -> str:
        with open(self.log_path) as f:
            return " | ".join(f.read().splitlines()[-n:])

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                raise AssertionError(f"{self.name} did not stop within 30 s of SIGTERM")
        return self.proc.returncode


GPU_TRANSPORTS = {"cuda_ipc", "rc_mlx5", "rc_verbs", "dc_mlx5"}


def check_services(torch, bundle: str, memory: str, logs: str, ucx_env: dict[str, str] | None = None) -> str:
    """``ucx_env``: UCX settings both services start with (none: as deployed)."""
    from kv_cases import CASES
    from pd_connector_vllm.client import PdClient
    from pd_connector_vllm.gpu_layout import BlockCopier, resolve_layout
    from pd_connector_vllm.layout import PdGeometry
    from pd_connector_vllm.specs import LoadSpec, SaveSpec
    from pd_connector_vllm.worker import PdWorker

    if not os.path.isfile(bundle):
        raise FileNotFoundError(f"no GPU bundle at {bundle}: scripts/gpu-bundle.sh writes it (carry it with the run)")
    gpu = memory == "vram"
    layers, pulls = GPU_SHAPE if gpu else DRY_RUN_SHAPE
    device = torch.device("cuda", 0) if gpu else torch.device("cpu")
    case = next(c for c in CASES if c.name == ("FLASH_ATTN packed LBHNC" if gpu else "CPU_ATTN"))
    free_before = torch.cuda.mem_get_info(0)[0] if gpu else 0
    run = tempfile.mkdtemp(prefix="pd-gpu-check-")
    os.makedirs(logs, exist_ok=True)
    services: list[Service] = []
    workers: list = []
    lines = []
    try:
        t0 = time.monotonic()
        unpack(bundle, run)
        p = Service(run, "p", memory, logs, layers, ucx_env, "-Dpd.role=producer")
        services.append(p)
        d = Service(run, "d", memory, logs, layers, ucx_env, "-Dpd.role=consumer", "-Dpd.registry.store=static",
                    f"-Dpd.registry.static.peers=127.0.0.1:{p.port}", "-Dpd.registry.static.refresh-interval=500ms")
        services.append(d)
        p.await_ready()
        d.await_ready()
        d.await_producer("gpu-check-p")
        lines.append(f"bundle unpacked and both services ready in {time.monotonic() - t0:.0f} s")

        gen = torch.Generator().manual_seed(44)
        p_layers = case.build(layers, CACHE_BLOCKS, KV_HEADS, BLOCK_TOKENS, HEAD_DIM, torch.bfloat16, device, gen)
        d_layers = [torch.zeros_like(t) for t in p_layers]
        names = lambda layers: {f"model.layers.{i}.self_attn.attn": t for i, t in enumerate(layers)}  # noqa: E731
        p_client, d_client = PdClient(p.url), PdClient(d.url)
        pw = PdWorker(p_client, tp_rank=0, tp_size=1, load_threads=1)
        workers.append(pw)
        pw.register(names(p_layers), p_client.kv_layout(), case.backend)
        dw = PdWorker(d_client, tp_rank=0, tp_size=1, load_threads=1)
        workers.append(dw)
        dw.register(names(d_layers), d_client.kv_layout(), case.backend)
        g = PdGeometry.from_layout(p_client.kv_layout())
        p_copier = BlockCopier(resolve_layout(case.backend, p_layers, g), p_layers, g)
        d_copier = BlockCopier(resolve_layout(case.backend, d_layers, g), d_layers, g)

        pick = random.Random(7)
        tokens = BLOCKS_PER_PULL * BLOCK_TOKENS
        pulled = 0
        started = time.monotonic()
        for i in range(pulls):
            rid = f"gpu-check-{i}"
            src = pick.sample(range(CACHE_BLOCKS), BLOCKS_PER_PULL)
            dst = pick.sample(range(CACHE_BLOCKS), BLOCKS_PER_PULL)
            grant = p_client.reserve(rid, tokens)
            if not grant["has_lease"]:
                raise AssertionError(f"{rid}: P reserved without a lease slot; the lease check would decline it")
            files = [(r["kv_file"], r["region_bytes"]) for r in grant["ranks"]]
            pw.save([SaveSpec(rid, rid, src, grant["block_ids"], tokens, files)])
            params = p_client.finish(rid)["kv_transfer_params"]
            ids = [(i * 7919 + t) % 32000 for t in range(tokens)]
            dw.start_loads([LoadSpec(rid, rid, ids, params, dst, 0)], [])
            results = wait_loaded(dw, rid)
            if results.failed or rid not in results.finished:
                raise AssertionError(f"{rid}: D's load did not finish cleanly: {results}; D: {d.tail(5)}")
            want = torch.zeros(BLOCKS_PER_PULL, *g.block_shape(), dtype=torch.bfloat16, device=device)
            got = torch.zeros_like(want)
            p_copier.gather(src, want, list(range(BLOCKS_PER_PULL))).wait()
            d_copier.gather(dst, got, list(range(BLOCKS_PER_PULL))).wait()
            held = p_blocks(torch, pw, files, grant["block_ids"], g, device)
            if not torch.equal(want.view(torch.int16), held.view(torch.int16)):  # bits: NaNs compare unequal
                raise AssertionError(f"{rid}: P's pd-connector does not hold what P's vLLM blocks held")
            if not torch.equal(want.view(torch.int16), got.view(torch.int16)):
                raise AssertionError(f"{rid}: D's vLLM blocks do not hold what P's held")
            pulled += BLOCKS_PER_PULL * g.block_bytes
        seconds = time.monotonic() - started
        lines.append(f"{pulls} pulls of {BLOCKS_PER_PULL * g.block_bytes / 1e6:.0f} MB ({case.name}, "
                     f"{memory}): every block equal bit for bit in P's pd-connector and in D's cache, the lease checked; {pulled / seconds / 1e9:.2f} GB/s "
                     f"end to end (save, pull, load, compare) over {seconds:.1f} s")
        transports = [labels for labels, value in d.metric("pd_kv_read_transport") if value == 1.0]
        if len(transports) != 1 or "gpu-check-p" not in transports[0]:
            raise AssertionError(f"D's pd-connector reports no one transport for P: {transports}")
        transport = re.search(r'transport="([^"]*)"', transports[0]).group(1)
        kv_memory = re.search(r'kv_memory="([^"]*)"', transports[0]).group(1)
        if gpu and not set(transport.split("+")) <= GPU_TRANSPORTS:
            raise AssertionError(f"D read P's GPU memory over {transport}, not a GPU transport")
        lines.append(f"transport D's pd-connector learned from UCX: {transport} ({kv_memory} memory)")
        read_bytes = sum(v for _, v in d.metric("nixl_bytes_transferred_sum"))
        read_seconds = sum(v for _, v in d.metric("nixl_xfer_time_seconds_sum"))
        if read_bytes <= 0 or read_seconds <= 0:
            raise AssertionError("D's metrics show no READ")
        lines.append(f"READ rate from D's metrics: {read_bytes / read_seconds / 1e9:.2f} GB/s "
                     f"({read_bytes / 1e6:.0f} MB in {read_seconds * 1e3:.0f} ms of READs)")
        lines.append(f"RSS: P {p.rss_mib():.0f} MiB, D {d.rss_mib():.0f} MiB")
    finally:
        for w in workers:
            w.shutdown()  # the plugin unmaps before pd-connector frees (CUDA's rule for legacy IPC)
        codes = [s.stop() for s in services]
        shutil.rmtree(run, ignore_errors=True)
    if any(c not in (0, 143) for c in codes):  # 143: the JVM's exit after SIGTERM, its shutdown run
        raise AssertionError(f"a service did not exit cleanly on SIGTERM: {codes}")
    if gpu:
        torch.cuda.synchronize()
        free_after = torch.cuda.mem_get_info(0)[0]
        if free_after < free_before - (64 << 20):
            raise AssertionError(f"GPU memory not given back: {free_before >> 20} MiB free before, "
                                 f"{free_after >> 20} MiB after")
        lines.append(f"teardown: both stopped on SIGTERM, GPU free memory {free_before >> 20} MiB before, "
                     f"{free_after >> 20} MiB after")
    else:
        lines.append("teardown: both stopped on SIGTERM")
    return "; ".join(lines)


def p_blocks(torch, worker, files, blocks, g, device):
    """P's pd blocks as P's pd-connector holds them: through the plugin's mapping of the VRAM pool, or P's KV file."""
    kv = worker._kv  # the check reads the worker's own place of P's blocks: PoolKv's mapping, or the file FileKv writes
    pool = getattr(kv, "_pool", None)
    if pool is not None:
        return pool.blocks(torch.bfloat16, g.block_shape())[blocks].clone()
    import numpy as np
    region = np.memmap(files[0][0], dtype=np.int16, mode="r", shape=(files[0][1] // 2,))
    per_block = g.block_bytes // 2
    rows = [torch.from_numpy(np.array(region[b * per_block:(b + 1) * per_block])) for b in blocks]
    return torch.stack(rows).view(torch.bfloat16).view(len(blocks), *g.block_shape()).to(device)


def wait_loaded(worker, rid: str, seconds: float = 60):
    deadline = time.monotonic() + seconds
    results = worker.take_results()
    while rid not in results.finished and rid not in results.failed and time.monotonic() < deadline:
        time.sleep(0.01)
        more = worker.take_results()
        results.finished |= more.finished
        results.failed.update(more.failed)
    return results
