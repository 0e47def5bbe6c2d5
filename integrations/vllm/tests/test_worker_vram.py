"""The worker with pd.kv.memory=vram (kv-layout shares a pool per rank), on CPU tensors with the fake driver of
test_gpu_pool: P's save lands in the pool as the file path would write it and returns only after its copy
was waited for; D's load scatters from the pool and is released and reported only after its copy; the pool is
on vLLM's GPU or refused; a new incarnation is opened again, the old mapping closed first; shutdown unmaps.
The side stream and CUDA events themselves need a GPU: that case says DID NOT RUN here."""

import base64
import contextlib
import functools
import threading

import pytest
import torch

from pd_connector_vllm import gpu_layout
from pd_connector_vllm.gpu_pool import GpuPoolError, IpcPool
from pd_connector_vllm.kv_places import PoolKv
from pd_connector_vllm.layout import GeometryMismatch, write_pd_blocks
from pd_connector_vllm.specs import SaveSpec
from pd_connector_vllm.worker import PdWorker

from fakes import FakeClient
from test_gpu_pool import OTHER, UUID, FakeDriver, fake_wrap
from test_worker import D_BLOCKS, LAYOUT, NB, L, caches, load, p_kv, results_within

POOL_BLOCKS = 8


def entry(incarnation=1, rank=0, uuid=UUID):
    return {"rank": rank, "gpu_uuid": uuid, "bytes": POOL_BLOCKS * LAYOUT["block_bytes"],
            "ipc_handle": base64.b64encode(bytes(range(64))).decode(), "incarnation": incarnation}


def vram_layout(*entries):
    return dict(LAYOUT, pools=list(entries) or [entry()])


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def vram_worker(client, driver, layout=None, clock=None, kv=None, check_s=2.0, streams=None):
    opened = []

    def opener(e, device):
        pool = IpcPool(driver, base64.b64decode(e["ipc_handle"]), int(e["bytes"]), e["gpu_uuid"],
                       torch.device("cuda", 0), wrap=fake_wrap)
        opened.append(pool)
        return pool

    w = PdWorker(client, tp_rank=0, tp_size=1, load_threads=2)
    kv = kv if kv is not None else caches()
    pool_kv = functools.partial(PoolKv, opener=opener, clock=clock or Clock(), check_s=check_s, streams=streams)
    w.register(kv, layout or vram_layout(), gpu_layout.CPU_ATTN, pool_kv=pool_kv)
    return w, kv, opened


def pool_of(opened):
    return opened[-1].blocks(torch.float32, (L, 2, 2, 4, 8))


def record_waits(monkeypatch, events):
    """Wraps the copier's copies so the test sees when each CopyDone was waited for."""
    for name in ("gather", "scatter"):
        real = getattr(gpu_layout.BlockCopier, name)

        def wrapped(self, *args, _real=real, _name=name):
            done = _real(self, *args)
            events.append(f"{_name} queued")

            class Recorded:
                def wait(self_inner):
                    done.wait()
                    events.append(f"{_name} waited")
            return Recorded()
        monkeypatch.setattr(gpu_layout.BlockCopier, name, wrapped)


def test_p_saves_into_the_pool_what_the_file_path_writes_and_returns_after_the_copy(monkeypatch):
    events = []
    record_waits(monkeypatch, events)
    driver = FakeDriver()
    w, kv, opened = vram_worker(FakeClient(), driver, kv=caches())
    layers = list(kv.values())
    for l, t in enumerate(layers):
        t.copy_(torch.randn(t.shape, generator=torch.Generator().manual_seed(l)))
    w.save([SaveSpec("r1", "r1", [3, 0], [6, 2], 5, [(None, 0)], "g1")])
    assert events == ["gather queued", "gather waited"], "save returned only after its copy was waited for"
    expected = torch.zeros(POOL_BLOCKS, L, 2, 2, 4, 8)
    write_pd_blocks(layers, [3, 0], expected, [6, 2])
    assert torch.equal(pool_of(opened), expected), "byte for byte what the file path writes, other blocks zero"
    w.shutdown()


# D's pull as D's pd-connector answers it under vram: P's three blocks landed in D's pool blocks 6, 2 and 4.
PULLED = {"state": "received", "block_ids": [6, 2, 4], "block_bytes": LAYOUT["block_bytes"],
          "ranks": [{"rank": 0, "kv_file": None, "region_bytes": POOL_BLOCKS * LAYOUT["block_bytes"]}],
          "timings": {"pull_ms": 1.0}}


def land_in_pool(opened, pd):
    """What D's READs leave in the pool for PULLED: P's blocks ``pd`` in pool blocks 6, 2, 4."""
    pool = pool_of(opened)
    for i, b in enumerate(PULLED["block_ids"]):
        pool[b] = pd[i]


def test_d_scatters_from_the_pool_then_releases_and_reports(monkeypatch):
    events = []
    record_waits(monkeypatch, events)
    p_layers, pd = p_kv()
    client = FakeClient({"pull": PULLED, "release": lambda *a: events.append("released")})
    w, kv, opened = vram_worker(client, FakeDriver())
    land_in_pool(opened, pd)
    w.start_loads([load()], [])
    r = results_within(w)
    assert r.finished == {"req-d"} and r.failed == {}
    assert events == ["scatter queued", "scatter waited", "released"], "released only after the copy"
    d_layers = list(kv.values())
    for l in range(L):
        assert torch.equal(d_layers[l][5], p_layers[l][2]) and torch.equal(d_layers[l][1], p_layers[l][4])
        assert not d_layers[l][0].any()
    w.shutdown()


class FakeStreams:
    """torch.cuda's stream API as the copier uses it, recording what the side stream waited on before each copy.
    Each thread has its own current stream: ``use(name)`` names the calling thread's (a thread that never did is on
    the default stream, as a load thread is)."""

    def __init__(self):
        self.waits = []
        self._local = threading.local()

    def use(self, name):
        self._local.name = name

    def Stream(self, device=None):
        return _FakeStream(self, "side")

    def current_stream(self, device=None):
        return _FakeStream(self, getattr(self._local, "name", "default"))

    def stream(self, s):
        return contextlib.nullcontext()

    def Event(self):
        return _FakeEvent()


class _FakeStream:
    def __init__(self, api, name):
        self.api, self.name = api, name

    def wait_event(self, event):
        self.api.waits.append(f"{self.name} waits for an event recorded on {event.recorded_on}")

    def wait_stream(self, other):
        self.api.waits.append(f"{self.name} waits for stream {other.name}")


class _FakeEvent:
    recorded_on = None

    def record(self, stream):
        self.recorded_on = stream.name

    def query(self):
        return True

    def synchronize(self):
        pass


def test_ds_copy_comes_after_what_vllm_queued_before_the_load_not_after_the_load_threads_stream():
    """vLLM zeroes newly allocated blocks on its own stream and starts the connector's loads after that, in its
    step. The load's copy runs on a load thread, whose current stream is the default one: ordered after that
    stream, vLLM's zeroing could land after the copy and wipe the loaded KV. It must wait for an event recorded on
    vLLM's stream when the step started the load; P's copy, on vLLM's thread, waits for vLLM's stream itself."""
    streams = FakeStreams()
    streams.use("vllm")   # this thread plays vLLM's worker thread
    _, pd = p_kv()
    w, kv, opened = vram_worker(FakeClient({"pull": PULLED}), FakeDriver(), streams=streams)
    land_in_pool(opened, pd)
    w.start_loads([load()], [])
    r = results_within(w)
    assert r.finished == {"req-d"} and r.failed == {}
    assert streams.waits == ["side waits for an event recorded on vllm"], streams.waits
    streams.waits.clear()
    w.save([SaveSpec("r1", "r1", [3], [1], 4, [(None, POOL_BLOCKS * LAYOUT["block_bytes"])])])
    assert streams.waits == ["side waits for stream vllm"], streams.waits
    w.shutdown()


def test_a_pool_on_another_gpu_or_for_no_rank_is_refused_holding_nothing():
    driver = FakeDriver()
    with pytest.raises(GpuPoolError, match=f"pool is on GPU {OTHER}"):
        vram_worker(FakeClient(), driver, layout=vram_layout(entry(uuid=OTHER)))
    with pytest.raises(GpuPoolError, match="shares 0 VRAM pools for TP rank 0"):
        vram_worker(FakeClient(), driver, layout=vram_layout(entry(rank=1)))
    assert driver.retains == 0 and driver.mapped == {}


def test_vram_needs_the_attention_backend():
    w = PdWorker(FakeClient(), tp_rank=0, tp_size=1, load_threads=1)
    with pytest.raises(GeometryMismatch, match="need vLLM's attention backend"):
        w.register(caches(), vram_layout())
    w.shutdown()


def test_a_new_incarnation_is_opened_again_after_the_old_mapping_closed():
    driver = FakeDriver()
    clock = Clock()
    client = FakeClient({"kv_layout": lambda: vram_layout(entry(incarnation=1))})
    w, kv, opened = vram_worker(client, driver, clock=clock)
    clock.now = 1.0
    w.save([SaveSpec("r1", "r1", [0], [0], 2, [(None, 0)])])
    assert "kv_layout" not in client.names(), "not asked again within the interval"
    clock.now = 3.0
    w.save([SaveSpec("r2", "r2", [0], [1], 2, [(None, 0)])])
    assert client.names().count("kv_layout") == 1 and len(opened) == 1, "same incarnation: same mapping"
    client.answers["kv_layout"] = lambda: vram_layout(entry(incarnation=2))
    driver.calls.clear()
    clock.now = 6.0
    w.save([SaveSpec("r3", "r3", [0], [2], 2, [(None, 0)])])
    assert len(opened) == 2
    assert driver.calls.index("cuIpcCloseMemHandle") < driver.calls.index("cuIpcOpenMemHandle_v2"), driver.calls
    assert driver.retains == 1 and len(driver.mapped) == 1, "one mapping held: the new one"
    w.shutdown()
    assert driver.retains == 0 and driver.mapped == {}, "shutdown unmaps: the one release path"


def test_by_default_kv_layout_is_asked_before_every_copy_so_a_grant_of_a_new_instance_finds_its_pool():
    driver = FakeDriver()
    client = FakeClient({"kv_layout": lambda: vram_layout(entry(incarnation=1))})
    w, kv, opened = vram_worker(client, driver, check_s=0.0)
    w.save([SaveSpec("r1", "r1", [0], [0], 2, [(None, 0)])])
    client.answers["kv_layout"] = lambda: vram_layout(entry(incarnation=2))
    w.save([SaveSpec("r2", "r2", [0], [1], 2, [(None, 0)])])
    assert client.names().count("kv_layout") == 2 and len(opened) == 2, "the second save went to the new pool"
    w.shutdown()


def test_with_dram_there_is_no_pool_and_no_driver():
    """kv-layout without pools: the KV file path as before (tests/test_worker.py holds its bytes)."""
    w = PdWorker(FakeClient(), tp_rank=0, tp_size=1, load_threads=1)
    w.register(caches(), LAYOUT, None, pool_kv=lambda *a: pytest.fail("no pool without pools in kv-layout"))
    w.shutdown()


def test_cuda_copies_are_ordered_by_their_events():
    if not torch.cuda.is_available():
        pytest.skip("DID NOT RUN: no CUDA device here (the side stream and its events need a GPU; "
                    "scripts/gpu-check.sh checks them)")
    layers = [torch.randn(NB, 2, 4, 16, device="cuda") for _ in range(L)]
    g = gpu_layout.PdGeometry.from_layout(LAYOUT)
    copier = gpu_layout.BlockCopier(gpu_layout.resolve_layout(gpu_layout.CPU_ATTN, layers, g), layers, g)
    pool = torch.zeros(D_BLOCKS, *g.block_shape(), device="cuda")
    layers[0][1].fill_(5.0)  # queued on the compute stream right before the gather
    done = copier.gather([1], pool, [3])
    done.wait()
    assert done.done() and float(pool[3, 0].sum()) == 5.0 * pool[3, 0].numel()


def test_several_kv_cache_groups_beside_a_vram_pool_are_refused_before_any_pool_is_opened():
    w = PdWorker(FakeClient(), tp_rank=0, tp_size=1, load_threads=1,
                 layer_groups={name: i for i, name in enumerate(caches())})
    with pytest.raises(GeometryMismatch, match="several KV cache groups .* the VRAM pool's copies take one group"):
        w.register(caches(), vram_layout(), gpu_layout.CPU_ATTN,
                   pool_kv=lambda *a: pytest.fail("no pool for a model of several groups"))
