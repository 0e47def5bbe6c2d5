"""The worker side: a received pull is copied from D's KV file into vLLM's blocks and released (no KV
over HTTP), every other outcome is a load failure (vLLM then applies kv_load_failure_policy), P's copy
goes into the file, and no thread outlives shutdown."""

import logging
import os
import re
import threading
import time

import numpy as np
import pytest
import torch

from pd_connector_vllm.client import PdClient, PdError
from pd_connector_vllm import timing_lines
from pd_connector_vllm.layout import GeometryMismatch, write_pd_blocks
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
    return p_layers, pd


D_BLOCKS = 8


def d_file(path, pd, d_blocks=(6, 2, 4), fill=0.0, epoch=None):
    """D's KV file as D's pd-connector leaves it after a pull: the pulled blocks at ``d_blocks``, other
    blocks ``fill``; and the pull's reply that says so. With ``epoch``, the file's epoch table after the
    blocks gives the pulled blocks that epoch (the others older ones) and the reply names it."""
    region = torch.full((D_BLOCKS, L, 2, H, T, D), fill)
    for i, b in enumerate(d_blocks):
        region[b] = pd[i]
    data = region.numpy().tobytes()
    if epoch is not None:
        table = np.arange(1, D_BLOCKS + 1, dtype="<u8")
        table[list(d_blocks)] = epoch
        data += table.tobytes()
    tmp = path.with_suffix(".new")
    tmp.write_bytes(data)
    tmp.replace(path)   # a new file (inode), as a restarted pd-connector makes
    reply = {"state": "received", "block_ids": list(d_blocks), "block_bytes": LAYOUT["block_bytes"],
             "bytes": len(d_blocks) * LAYOUT["block_bytes"],
             "ranks": [{"rank": 0, "kv_file": str(path), "region_bytes": D_BLOCKS * LAYOUT["block_bytes"]}],
             "timings": {"pull_ms": 1.5, "to_loop_ms": 0.1, "read_ms": 0.9, "slot_check_ms": 0.3}}
    return reply if epoch is None else dict(reply, blocks_epoch=epoch)


def stamp(path, block, epoch):
    """What D's step loop does when a later pull gets ``block``: a new epoch in the table, before any write."""
    table = np.memmap(path, dtype="<u8", mode="r+", offset=D_BLOCKS * LAYOUT["block_bytes"], shape=(D_BLOCKS,))
    table[block] = epoch
    table.flush()
    del table


def test_a_received_pull_is_copied_from_ds_file_into_vllms_blocks_then_released(tmp_path):
    p_layers, pd = p_kv()
    client = FakeClient({"pull": d_file(tmp_path / "pd-d-d0.kv", pd, fill=7.0)})
    w, kv = worker(client)
    w.start_loads([load()], [])
    r = results_within(w)
    assert r.finished == {"req-d"} and r.failed == {}
    d_layers = list(kv.values())
    for l in range(L):
        assert torch.equal(d_layers[l][5], p_layers[l][2])   # pd block 1 (D block 2) <- P's vLLM block 2
        assert torch.equal(d_layers[l][1], p_layers[l][4])   # pd block 2 (D block 4) <- P's vLLM block 4
        assert not d_layers[l][0].any() and not d_layers[l][2].any()   # nothing of D's other blocks (7.0)
    assert client.names() == ["pull", "release"]   # no KV over HTTP; released once copied
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


def test_a_pull_whose_blocks_do_not_cover_the_prompt_is_a_load_failure_and_is_released(tmp_path):
    _, pd = p_kv()
    reply = d_file(tmp_path / "pd-d-d0.kv", pd)
    reply["block_ids"] = reply["block_ids"][:2]
    client = FakeClient({"pull": reply})
    w, kv = worker(client)
    w.start_loads([load()], [])
    assert results_within(w).failed["req-d"].startswith("bad-blocks")
    assert all(not t.any() for t in kv.values())
    assert client.names() == ["pull", "release"]
    w.shutdown()


def test_a_reply_without_ds_kv_file_is_a_load_failure_and_is_released(tmp_path):
    _, pd = p_kv()
    for broken in ({"ranks": [{"rank": 0, "kv_file": None, "region_bytes": 0}]}, {"ranks": None}):
        reply = dict(d_file(tmp_path / "pd-d-d0.kv", pd), **broken)
        client = FakeClient({"pull": reply})
        w, kv = worker(client)
        w.start_loads([load()], [])
        reason = results_within(w).failed["req-d"]
        assert reason.startswith("no-kv-file" if broken["ranks"] else "bad-answer"), reason
        assert all(not t.any() for t in kv.values())
        assert client.names() == ["pull", "release"]
        w.shutdown()


def test_a_pull_released_before_its_copy_ended_is_a_load_failure(tmp_path):
    """pd.consumer.retention passed (or D restarted) between the reply and the release: the blocks may
    have gone to another pull meanwhile, so what was copied is not trusted."""
    _, pd = p_kv()
    client = FakeClient({"pull": d_file(tmp_path / "pd-d-d0.kv", pd),
                         "release": PdError(404, "unknown-request", "no such request")})
    w, _ = worker(client)
    w.start_loads([load()], [])
    assert results_within(w).failed == {"req-d": "kv-released-early"}
    client.answers["release"] = PdError(0, "timeout", "no answer")
    w.start_loads([load()], [])
    assert results_within(w).failed == {"req-d": "release-failed: timeout"}
    w.shutdown()


class BlockingRelease:
    """A release that does not return until the test lets it."""

    def __init__(self):
        self.entered, self.go = threading.Event(), threading.Event()

    def __call__(self, request_id, decode_rank):
        self.entered.set()
        assert self.go.wait(10), "the test never let the release return"


def test_a_pull_naming_its_blocks_epoch_is_reported_loaded_before_its_release_returns(tmp_path):
    p_layers, pd = p_kv()
    release = BlockingRelease()
    client = FakeClient({"pull": d_file(tmp_path / "pd-d-d0.kv", pd, epoch=77), "release": release})
    w, kv = worker(client)
    w.start_loads([load()], [])
    r = results_within(w)
    assert r.finished == {"req-d"} and r.failed == {}
    for l in range(L):
        assert torch.equal(list(kv.values())[l][5], p_layers[l][2])
    assert release.entered.wait(5), "the release still comes, after the load"
    release.go.set()
    w.shutdown()
    assert client.names() == ["pull", "release", "close"]


def test_a_block_that_went_to_a_later_pull_during_the_copy_fails_the_load(tmp_path, monkeypatch):
    """The epochs are read after the copy: D stamping a block for a later pull while the copy ran (retention
    passed, the block reused) fails the load, although every epoch was the pull's when the copy began."""
    import pd_connector_vllm.kv_places as kv_places
    path = tmp_path / "pd-d-d0.kv"
    _, pd = p_kv()
    copy = kv_places.read_pd_blocks

    def copy_meanwhile_block_2_is_reused(*args):
        copy(*args)
        stamp(path, 2, 78)

    monkeypatch.setattr(kv_places, "read_pd_blocks", copy_meanwhile_block_2_is_reused)
    client = FakeClient({"pull": d_file(path, pd, epoch=77)})
    w, _ = worker(client)
    w.start_loads([load()], [])
    reason = results_within(w).failed["req-d"]
    assert reason.startswith("kv-released-early: D blocks [2] went to a later pull"), reason
    assert client.names() == ["pull", "release"]
    w.shutdown()


def test_a_file_made_again_by_a_restarted_d_fails_a_pull_of_the_old_one(tmp_path):
    """The new D's table holds none of its predecessor's epochs (zero, or its own, which start elsewhere)."""
    path = tmp_path / "pd-d-d0.kv"
    _, pd = p_kv()
    reply = d_file(path, pd, epoch=77)
    d_file(path, pd, epoch=5)        # restarted before the copy: a new file, other epochs
    client = FakeClient({"pull": reply, "release": PdError(404, "unknown-request", "no such request")})
    w, _ = worker(client)
    w.start_loads([load()], [])
    assert results_within(w).failed["req-d"].startswith("kv-released-early")
    w.shutdown()


def test_ds_file_is_mapped_once_and_again_when_d_restarts_with_a_new_file(tmp_path):
    path = tmp_path / "pd-d-d0.kv"
    first_p, first_pd = p_kv(seed=3)
    client = FakeClient({"pull": d_file(path, first_pd)})
    w, kv = worker(client)
    w.start_loads([load()], [])
    assert results_within(w).failed == {}
    mapped = w._kv._files.blocks(str(path), D_BLOCKS * LAYOUT["block_bytes"], w._geometry, torch.float32)
    w.start_loads([load()], [])
    assert results_within(w).failed == {}
    assert w._kv._files.blocks(str(path), D_BLOCKS * LAYOUT["block_bytes"], w._geometry, torch.float32) is mapped
    second_p, second_pd = p_kv(seed=4)
    client.answers["pull"] = d_file(path, second_pd, d_blocks=(1, 3, 0))   # D restarted: a new file
    w.start_loads([load()], [])
    assert results_within(w).failed == {}
    for l in range(L):
        assert torch.equal(list(kv.values())[l][5], second_p[l][2])
        assert torch.equal(list(kv.values())[l][1], second_p[l][4])
    w.shutdown()


@pytest.mark.parametrize("epoch, release", [(None, r"release [0-9.]+ ms"), (9, "release after the load")])
def test_the_timing_line_says_pull_with_pd_connectors_phases_copy_and_release(tmp_path, caplog, epoch, release):
    """A load its epochs vouch for is reported before its release: the line says so instead of a time."""
    _, pd = p_kv()
    client = FakeClient({"pull": d_file(tmp_path / "pd-d-d0.kv", pd, epoch=epoch)})
    w = PdWorker(client, tp_rank=0, tp_size=1, load_threads=1, timing_level=logging.INFO)
    w.register(caches(), LAYOUT)
    with caplog.at_level(logging.INFO, logger="vllm.pd_connector"):
        w.start_loads([load()], [])
        results_within(w)
        w.shutdown()
    line = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("D loaded req-d"))
    assert re.search(r"pd blocks \[2, 4\] -> vLLM blocks \[5, 1\], 2048 bytes; pull [0-9.]+ ms "
                     r"\(pd-connector's own 1\.50 ms: to_loop 0\.10 read 0\.90 slot_check 0\.30\), "
                     r"copy [0-9.]+ ms, " + release + "$", line), line
    # and the benches read it: a release after the load is off the load's clock, 0 ms of it
    (match,) = timing_lines.LOAD_LINE.finditer(line)
    pull, pd_pull, copy, released = timing_lines.load_times(match)
    assert pd_pull == 1.5 and pull >= 0 and copy >= 0
    assert released == 0.0 if epoch is not None else released >= 0


def test_a_release_only_pull_is_released_and_never_reported_to_vllm():
    client = FakeClient({"pull": {"state": "received"}})
    w, _ = worker(client)
    w.start_loads([], [load(vllm_blocks=())])
    deadline = time.monotonic() + 5  # shutdown drops a load not yet under way: wait until this one ran
    while "release" not in client.names() and time.monotonic() < deadline:
        time.sleep(0.01)
    w.shutdown()
    assert client.names() == ["pull", "release", "close"]
    assert w.take_results().finished == set()


def test_p_copys_timing_line_names_the_blocks_and_the_copy_time_benches_read(tmp_path, caplog):
    client = FakeClient()
    w = PdWorker(client, tp_rank=0, tp_size=1, load_threads=1, timing_level=logging.INFO)
    w.register(caches(), LAYOUT)
    path = tmp_path / "pd-p-r0.kv"
    path.write_bytes(bytes(8 * LAYOUT["block_bytes"]))
    with caplog.at_level(logging.INFO, logger="vllm.pd_connector"):
        w.save([SaveSpec("r1", "r1", [3, 0], [6, 2], 5, [(str(path), 8 * LAYOUT["block_bytes"])])])
    w.shutdown()
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("P saved r1")]
    assert "vLLM blocks [3, 0] -> pd blocks [6, 2]" in line, line
    (match,) = timing_lines.SAVE_LINE.finditer(line)
    assert float(match.group(1)) >= 0, line


def test_p_copy_goes_into_the_shared_file_and_a_failed_copy_gives_its_grant_back(tmp_path):
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
    w.save([SaveSpec("r2", "r2", [1], [0], 3, [(str(tmp_path / "missing.kv"), 8 * LAYOUT["block_bytes"])], "g1-7")])
    assert client.calls == [("batch", {"returns": ["g1-7"]})], "the grant goes back before the step hands out params"
    w.shutdown()


def test_p_copy_beside_the_forward_writes_the_same_file_as_the_copy_in_the_step(tmp_path):
    """pd_save_overlap: each layer's blocks go into the file on the copy thread as vLLM names the layer; after
    wait_for_save the file holds what the copy in the step writes, and shutdown leaves no copy thread."""
    gen = torch.Generator().manual_seed(13)
    kv = {f"model.layers.{i}.self_attn.attn": torch.randn(NB, H, T, 2 * D, generator=gen) for i in range(L)}
    files = {}
    for overlap in (False, True):
        w = PdWorker(FakeClient(), tp_rank=0, tp_size=1, load_threads=1, save_overlap=overlap)
        w.register(kv, LAYOUT)
        path = files[overlap] = tmp_path / f"pd-p-r0-{overlap}.kv"
        path.write_bytes(bytes(8 * LAYOUT["block_bytes"]))
        specs = [SaveSpec("r1", "r1", [3, 0], [6, 2], 5, [(str(path), 8 * LAYOUT["block_bytes"])]),
                 SaveSpec("r2", "r2", [4], [1], 2, [(str(path), 8 * LAYOUT["block_bytes"])])]
        w.layer_written("model.layers.1.self_attn.attn", specs)   # layer 0 is left to wait_for_save
        w.save(specs)
        w.shutdown()
    assert any(files[True].read_bytes()) and files[True].read_bytes() == files[False].read_bytes()
    assert not [t for t in threading.enumerate() if t.name == "pd-save"]


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
    os_names = {open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task")}
    assert "pd-load" in os_names, "a load thread does not carry its name at the OS level (top -H, ps -L)"
    gate.set()
    w.shutdown()
    assert not [t for t in threading.enumerate() if t.name.startswith("pd-load")]


# ---- tensor parallelism: one PdWorker per vLLM TP worker, each with its own heads and pd-connector rank ----

def tp2_layout():
    return dict(LAYOUT, tp_size=2)


def test_a_tp_worker_joins_the_pull_with_its_rank_copies_its_ranks_file_and_releases_its_rank(tmp_path):
    """Rank 1 of 2: its KV heads are in D's rank-1 file; the pull and the release name rank 1, so D's
    pd-connector runs one pull for both workers and frees the blocks after both released."""
    p_layers, pd = p_kv()
    reply = d_file(tmp_path / "pd-d-d1.kv", pd, fill=7.0)
    other = d_file(tmp_path / "pd-d-d0.kv", torch.full_like(pd, -1.0))   # rank 0's heads: never this worker's
    reply["ranks"] = [other["ranks"][0], dict(reply["ranks"][0], rank=1)]
    client = FakeClient({"pull": reply})
    w = PdWorker(client, tp_rank=1, tp_size=2, load_threads=1)
    kv = caches()
    w.register(kv, tp2_layout())
    w.start_loads([load()], [])
    r = results_within(w)
    assert r.finished == {"req-d"} and r.failed == {}
    for l, t in enumerate(kv.values()):
        assert torch.equal(t[5], p_layers[l][2]) and torch.equal(t[1], p_layers[l][4])
    assert [(c[0], c[-1]) for c in client.calls] == [("pull", 1), ("release", 1)]
    w.shutdown()


def test_a_tp_worker_refuses_a_reply_naming_another_number_of_ranks(tmp_path):
    _, pd = p_kv()
    client = FakeClient({"pull": d_file(tmp_path / "pd-d-d0.kv", pd)})   # one rank's file for a TP 2 decoder
    w = PdWorker(client, tp_rank=0, tp_size=2, load_threads=1)
    w.register(caches(), tp2_layout())
    w.start_loads([load()], [])
    assert results_within(w).failed["req-d"].startswith("bad-answer: the pull reply names 1 ranks' KV files, "
                                                        "vLLM runs TP 2")
    assert client.names() == ["pull", "release"]   # this rank lets go of the pull: the request fails as a whole
    w.shutdown()


def test_a_tp_worker_on_p_writes_its_heads_into_its_ranks_file(tmp_path):
    gen = torch.Generator().manual_seed(11)
    kv = {f"model.layers.{i}.self_attn.attn": torch.randn(NB, H, T, 2 * D, generator=gen) for i in range(L)}
    w = PdWorker(FakeClient(), tp_rank=1, tp_size=2, load_threads=1)
    w.register(kv, tp2_layout())
    files = [tmp_path / f"pd-p-r{r}.kv" for r in range(2)]
    for f in files:
        f.write_bytes(bytes(4 * LAYOUT["block_bytes"]))
    w.save([SaveSpec("r1", "r1", [3], [2], 4, [(str(f), 4 * LAYOUT["block_bytes"]) for f in files], "g1")])
    expected = torch.zeros(4, L, 2, H, T, D)
    write_pd_blocks(list(kv.values()), [3], expected, [2])
    assert torch.equal(torch.frombuffer(bytearray(files[1].read_bytes()), dtype=torch.float32).view(expected.shape),
                       expected)
    assert not any(files[0].read_bytes()), "rank 0's file is rank 0's worker's"
    w.save([SaveSpec("r2", "r2", [1], [0], 3, [(str(files[0]), 4 * LAYOUT["block_bytes"])], "g2")])
    assert w._client.calls == [("batch", {"returns": ["g2"]})], "a grant naming one rank's file cannot serve TP 2"
    w.shutdown()


# ---- the channel of D's pulls and releases: D's engine socket or HTTP (pd_engine_channel) ----

@pytest.fixture
def http_nowhere(dead_http):
    """A PdClient whose HTTP calls are refused: what it does, it does over the socket."""
    client = PdClient(dead_http, timeout_s=2)
    yield client
    client.close()


def test_under_auto_d_loads_over_the_engine_socket_kv_layout_names(tmp_path, engine, http_nowhere, caplog):
    p_layers, pd = p_kv()
    engine.answers.update(pull={"status": 200, "body": d_file(tmp_path / "pd-d-d0.kv", pd, fill=7.0)},
                          release={"status": 204})
    w = PdWorker(http_nowhere, tp_rank=0, tp_size=1, load_threads=1)
    kv = caches()
    with caplog.at_level(logging.INFO, logger="vllm.pd_connector"):
        w.register(kv, dict(LAYOUT, engine_socket=engine.path))
    assert f"pulls and releases over the engine socket {engine.path} " \
           "(kv_connector_extra_config.pd_engine_channel=auto)" in caplog.text
    w.start_loads([load()], [])
    r = results_within(w)
    assert r.finished == {"req-d"} and r.failed == {}
    for l, t in enumerate(kv.values()):
        assert torch.equal(t[5], p_layers[l][2]) and torch.equal(t[1], p_layers[l][4])
    w.shutdown()
    assert [r["op"] for r in engine.requests()] == ["hello", "hello", "pull", "release"]   # the probe, the load thread
    assert engine.requests("pull")[0]["body"]["decode_rank"] == 0
    assert engine.requests("release") == [{"op": "release", "request_id": "req-d", "decode_rank": 0}]


def test_under_auto_without_an_engine_socket_d_stays_on_http(http_nowhere, caplog):
    w = PdWorker(http_nowhere, tp_rank=0, tp_size=1, load_threads=1)
    with caplog.at_level(logging.INFO, logger="vllm.pd_connector"):
        w.register(caches(), LAYOUT)
    assert http_nowhere.engine_socket is None
    assert "pulls and releases over HTTP (kv_connector_extra_config.pd_engine_channel=auto; kv-layout names " \
           "no engine socket)" in caplog.text
    w.shutdown()


def test_under_http_d_never_touches_the_engine_socket(engine, http_nowhere, caplog):
    w = PdWorker(http_nowhere, tp_rank=0, tp_size=1, load_threads=1, engine_channel="http")
    with caplog.at_level(logging.INFO, logger="vllm.pd_connector"):
        w.register(caches(), dict(LAYOUT, engine_socket=engine.path))
    assert http_nowhere.engine_socket is None and engine.connections == []
    assert "pulls and releases over HTTP (kv_connector_extra_config.pd_engine_channel=http" in caplog.text
    w.shutdown()


def test_under_socket_start_up_fails_when_kv_layout_names_no_engine_socket(http_nowhere):
    w = PdWorker(http_nowhere, tp_rank=0, tp_size=1, load_threads=1, engine_channel="socket")
    with pytest.raises(RuntimeError, match="pd_engine_channel=socket, but pd-connector's kv-layout names no "
                                           "engine socket"):
        w.register(caches(), LAYOUT)
    w.shutdown()


@pytest.mark.parametrize("channel", ["auto", "socket"])
def test_a_named_engine_socket_that_cannot_be_reached_fails_start_up_naming_it(tmp_path, http_nowhere, channel):
    """Never HTTP in its stead: a D that cannot reach its socket is a broken deployment, not a slower one."""
    gone = str(tmp_path / "pd-gone.sock")
    w = PdWorker(http_nowhere, tp_rank=0, tp_size=1, load_threads=1, engine_channel=channel)
    with pytest.raises(RuntimeError) as e:
        w.register(caches(), dict(LAYOUT, engine_socket=gone))
    assert gone in str(e.value) and f"pd_engine_channel={channel}" in str(e.value)
    assert http_nowhere.engine_socket is None
    w.shutdown()


def test_p_ignores_the_engine_channel():
    client = FakeClient()   # it has no use_engine_socket: any attempt would fail the test
    w = PdWorker(client, tp_rank=0, tp_size=1, load_threads=1, engine_channel="socket")
    w.register(caches(), dict(LAYOUT, role="producer", engine_socket="/nonexistent/pd.sock"))
    w.shutdown()
    assert client.names() == ["close"]


def test_an_unknown_engine_channel_is_refused():
    with pytest.raises(ValueError, match="pd_engine_channel"):
        PdWorker(FakeClient(), tp_rank=0, tp_size=1, load_threads=1, engine_channel="unix")


def test_with_pd_log_kv_digest_p_and_d_log_the_same_digest_of_the_kv_d_loaded(tmp_path, caplog):
    """P's saved KV and D's loaded KV hashed as vLLM holds them: equal when D's blocks hold P's bytes, and a
    block that differs changes D's digest."""
    gen = torch.Generator().manual_seed(21)
    p_caches = {f"model.layers.{i}.self_attn.attn": torch.randn(NB, H, T, 2 * D, generator=gen) for i in range(L)}
    p_file = tmp_path / "pd-p-r0.kv"
    p_file.write_bytes(bytes(3 * LAYOUT["block_bytes"]))
    p = PdWorker(FakeClient(), tp_rank=0, tp_size=1, load_threads=1, log_kv_digest=True)
    p.register(p_caches, dict(LAYOUT, role="producer"))
    caplog.set_level(logging.INFO, logger="vllm.pd_connector")
    p.save([SaveSpec("r1", "req-d", [0, 2, 4], [0, 1, 2], 10, [(str(p_file), 3 * LAYOUT["block_bytes"])])])
    pd = torch.frombuffer(bytearray(p_file.read_bytes()), dtype=torch.float32).view(3, L, 2, H, T, D)
    digests = []
    for fill in (None, 5.0):
        served = pd.clone()
        if fill is not None:
            served[1, 1, 0, 0, 0, 0] = fill   # one element of one block other than P's
        client = FakeClient({"pull": d_file(tmp_path / "pd-d-d0.kv", served)})
        d = PdWorker(client, tp_rank=0, tp_size=1, load_threads=1, log_kv_digest=True)
        d.register(caches(), LAYOUT)
        d.start_loads([load(vllm_blocks=(5, 1, 3), first=0)], [])
        assert results_within(d).failed == {}
        d.shutdown()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("KV digest")]
    saved = [l.rsplit(" ", 1)[1] for l in lines if "P rank 0 saved req-d" in l]
    loaded = [l.rsplit(" ", 1)[1] for l in lines if "D rank 0 loaded req-d" in l]
    assert len(saved) == 1 and len(loaded) == 2, lines
    assert loaded[0] == saved[0] and loaded[1] != saved[0]
    p.shutdown()


def test_with_a_window_group_each_layer_saves_and_loads_its_groups_blocks_and_the_digests_agree(tmp_path, caplog):
    """Layer 0 in a sliding-window group (its request's last 2 blocks), layer 1 in the full group (all 4): P writes
    each layer's planes of its group's blocks into the pd blocks they align to (the window group's into the last
    two), the full layer first in a pd block (pd-connector's order, so that a pull reads the window's layers of the
    last blocks only), D reads them back into its own blocks of each group, and P's and D's digests agree."""
    groups = {"model.layers.0.self_attn.attn": 0, "model.layers.1.self_attn.attn": 1}
    named = dict(layer_groups=groups, kv_groups="window:64/1,full/1")
    layout = dict(LAYOUT, kv_groups="window:64/1,full/1")
    gen = torch.Generator().manual_seed(31)
    p_caches = {name: torch.randn(NB + 2, H, T, 2 * D, generator=gen) for name in groups}
    p_file = tmp_path / "pd-p-r0.kv"
    p_file.write_bytes(bytes(4 * LAYOUT["block_bytes"]))
    p = PdWorker(FakeClient(), tp_rank=0, tp_size=1, load_threads=1, log_kv_digest=True, **named)
    p.register(p_caches, dict(layout, role="producer"))
    caplog.set_level(logging.INFO, logger="vllm.pd_connector")
    p.save([SaveSpec("r1", "req-d", [4, 5, 6, 7], [0, 1, 2, 3], 14, [(str(p_file), 4 * LAYOUT["block_bytes"])],
                     group_blocks=[[2, 3], [4, 5, 6, 7]])])
    pd = torch.frombuffer(bytearray(p_file.read_bytes()), dtype=torch.float32).view(4, L, 2, H, T, D)
    window, full = list(p_caches.values())
    expected = torch.zeros_like(pd)
    write_pd_blocks([full, window], [4, 5, 6, 7], expected, [0, 1, 2, 3], only_layers=[0])
    write_pd_blocks([full, window], [2, 3], expected, [2, 3], only_layers=[1])
    assert torch.equal(pd, expected) and not pd[:2, 1].any(), "the window layer's older pd blocks are not written"

    client = FakeClient({"pull": d_file(tmp_path / "pd-d-d0.kv", pd, d_blocks=(6, 2, 4, 7))})
    d = PdWorker(client, tp_rank=0, tp_size=1, load_threads=1, log_kv_digest=True, **named)
    d_caches = {name: torch.zeros(NB + 2, H, T, 2 * D) for name in groups}
    d.register(d_caches, layout)
    spec = LoadSpec("req-d", "req-d", list(range(14)), {"do_remote_prefill": True}, [0, 1, 2, 3], 0,
                    group_blocks=[[5, 6], [0, 1, 2, 3]])
    d.start_loads([spec], [])
    assert results_within(d).failed == {}
    d_window, d_full = list(d_caches.values())
    assert all(torch.equal(d_full[b], full[pb]) for b, pb in zip([0, 1, 2, 3], [4, 5, 6, 7]))
    assert torch.equal(d_window[5], window[2]) and torch.equal(d_window[6], window[3])
    assert not d_window[[0, 1, 2, 3, 4, 7]].any(), "no window block but the group's two is written"
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("KV digest")]
    (saved,) = [l.rsplit(" ", 1)[1] for l in lines if "saved req-d" in l]
    (loaded,) = [l.rsplit(" ", 1)[1] for l in lines if "loaded req-d" in l]
    assert saved == loaded, lines
    for w in (p, d):
        w.shutdown()


def test_a_model_of_several_groups_beside_a_pd_connector_naming_other_groups_does_not_start():
    groups = {"model.layers.0.self_attn.attn": 0, "model.layers.1.self_attn.attn": 1}
    for declared in (None, "window:128/1,full/1"):
        w = PdWorker(FakeClient(), tp_rank=0, tp_size=1, load_threads=1, layer_groups=groups,
                     kv_groups="window:64/1,full/1")
        layout = dict(LAYOUT, **({"kv_groups": declared} if declared else {}))
        with pytest.raises(GeometryMismatch, match="KV cache groups: vLLM"):
            w.register(caches(), layout)
        w.shutdown()
    w = PdWorker(FakeClient(), tp_rank=0, tp_size=1, load_threads=1, layer_groups=groups,
                 kv_groups="window:64/1,full/1")
    w.register(caches(), dict(LAYOUT, kv_groups="window:64/1,full/1"))
    w.shutdown()
