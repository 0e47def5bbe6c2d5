"""The worker side: a received pull lands in vLLM's blocks, every other outcome is a load failure
(vLLM then applies kv_load_failure_policy), P's copy goes into the file, and no thread outlives
shutdown."""

import threading
import time

import torch

from pd_connector_vllm.client import PdError
from pd_connector_vllm.layout import write_pd_blocks
from pd_connector_vllm.specs import LoadSpec, SaveSpec
from pd_connector_vllm.worker import PdWorker

from fakes import FakeClient

L, H, T, D, NB = 2, 2, 4, 8, 6
LAYOUT = {"layers": L, "heads_per_rank": H, "head_dim": D, "block_tokens": T, "dtype_bytes": 4, "tp_size": 1,
          "block_bytes": L * 2 * H * T * D * 4, "engine_id": "d0", "role": "consumer"}


def caches(fill=0.0):
    return {f"model.layers.{i}.self_attn.attn": torch.full((NB, H, T, 2 * D), fill) for i in range(L)}


def worker(client, kv=None):
    w = PdWorker(client, tp_rank=0, tp_size=1, load_threads=2)
    kv = kv if kv is not None else caches()
    w.register(kv, LAYOUT)
    return w, kv


def results_within(w, seconds=10.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        r = w.take_results()
        if r.finished:
            return r
        time.sleep(0.01)
    raise AssertionError("no load result before the deadline")


def load(prompt_len=10, vllm_blocks=(5, 1), first=1):
    return LoadSpec("req-d", "req-d", list(range(prompt_len)), {"do_remote_prefill": True},
                    list(vllm_blocks), first)


def p_kv(seed=3):
    """What P's pd-connector serves for a 10-token prompt: 3 blocks, from P's own vLLM cache."""
    gen = torch.Generator().manual_seed(seed)
    p_layers = [torch.randn(NB, H, T, 2 * D, generator=gen) for _ in range(L)]
    pd = torch.zeros(3, L, 2, H, T, D)
    write_pd_blocks(p_layers, [0, 2, 4], pd, [0, 1, 2])
    return p_layers, bytearray(pd.numpy().tobytes())


def test_a_received_pull_lands_in_vllms_blocks_and_is_reported_finished():
    p_layers, data = p_kv()
    client = FakeClient({"pull": {"state": "received"}, "read_kv": data})
    w, kv = worker(client)
    w.start_loads([load()], [])
    r = results_within(w)
    assert r.finished == {"req-d"} and r.failed == {}
    d_layers = list(kv.values())
    for l in range(L):
        assert torch.equal(d_layers[l][5], p_layers[l][2])   # pd block 1 <- P's vLLM block 2
        assert torch.equal(d_layers[l][1], p_layers[l][4])   # pd block 2 <- P's vLLM block 4
        assert not d_layers[l][0].any() and not d_layers[l][2].any()
    assert client.names() == ["pull", "read_kv"]
    w.shutdown()


def test_a_declined_pull_is_a_load_failure_with_its_reason_and_writes_nothing():
    client = FakeClient({"pull": PdError(409, "lease_mismatch", "P released the blocks")})
    w, kv = worker(client)
    w.start_loads([load()], [])
    r = results_within(w)
    assert r.finished == {"req-d"} and r.failed == {"req-d": "lease_mismatch"}
    assert all(not t.any() for t in kv.values())
    assert client.names() == ["pull"]     # a declined pull is forgotten by pd-connector: nothing to release
    w.shutdown()


def test_a_pull_without_answer_fails_the_load_and_releases_whatever_d_holds():
    client = FakeClient({"pull": PdError(0, "timeout", "no answer")})
    w, _ = worker(client)
    w.start_loads([load()], [])
    assert results_within(w).failed == {"req-d": "timeout"}
    assert client.names() == ["pull", "release"]
    w.shutdown()


def test_kv_of_the_wrong_length_is_a_load_failure_not_wrong_kv():
    _, data = p_kv()
    client = FakeClient({"pull": {"state": "received"}, "read_kv": data[:-4]})
    w, kv = worker(client)
    w.start_loads([load()], [])
    assert results_within(w).failed["req-d"].startswith("bad-length")
    assert all(not t.any() for t in kv.values())
    w.shutdown()


def test_a_release_only_pull_is_released_and_never_reported_to_vllm():
    client = FakeClient({"pull": {"state": "received"}})
    w, _ = worker(client)
    w.start_loads([], [load(vllm_blocks=())])
    w.shutdown()
    assert client.names() == ["pull", "release", "close"]
    assert w.take_results().finished == set()


def test_p_copy_goes_into_the_shared_file_and_a_failed_copy_aborts_the_reservation(tmp_path):
    gen = torch.Generator().manual_seed(9)
    kv = {f"model.layers.{i}.self_attn.attn": torch.randn(NB, H, T, 2 * D, generator=gen) for i in range(L)}
    client = FakeClient()
    w, _ = worker(client, kv)
    path = tmp_path / "pd-p-r0.kv"
    path.write_bytes(bytes(8 * LAYOUT["block_bytes"]) )
    w.save([SaveSpec("r1", "r1", [3, 0], [6, 2], 5, [(str(path), 8 * LAYOUT["block_bytes"])])])
    on_disk = torch.frombuffer(bytearray(path.read_bytes()), dtype=torch.float32).view(8, L, 2, H, T, D)
    expected = torch.zeros(8, L, 2, H, T, D)
    write_pd_blocks(list(kv.values()), [3, 0], expected, [6, 2])   # whole blocks, as vLLM holds them
    assert torch.equal(on_disk, expected)
    w.save([SaveSpec("r2", "r2", [1], [0], 3, [(str(tmp_path / "missing.kv"), 8 * LAYOUT["block_bytes"])])])
    assert client.calls == [("abort", "r2")]
    w.shutdown()


def test_shutdown_waits_for_loads_under_way_and_leaves_no_thread():
    gate = threading.Event()
    under_way = threading.Semaphore(0)

    def slow_pull(*_):
        under_way.release()
        gate.wait(5)
        raise PdError(409, "aborted", "shutting down")

    client = FakeClient({"pull": slow_pull})
    w, _ = worker(client)
    w.start_loads([load(), load()], [])
    for i in range(2):  # both loads under way, not merely started
        assert under_way.acquire(timeout=5), f"load {i + 1} of 2 did not reach its pull within 5 s"
    gate.set()
    w.shutdown()
    assert not [t for t in threading.enumerate() if t.name.startswith("pd-load")]
