"""D's loads batched per engine step over an engine socket that reads op pulls (pull-batch): one request carries
the step's pulls, each reply is copied as it comes, one request carries the releases the step owes; every load
is reported once, with the same outcome it has one call at a time."""

import base64
import logging

import pytest
import torch

from pd_connector_vllm import loading
from pd_connector_vllm.client import PdClient, PdError
from pd_connector_vllm.specs import LoadSpec
from pd_connector_vllm.worker import PdWorker

from engine_socket_server import Raw, frame
from test_worker import LAYOUT, caches, d_file, p_kv, results_within

BATCHING = {"status": 200, "body": {"protocol": 1, "features": ["token-ids-le32", "pull-batch"]}}


def spec(request_id, prompt_len=10, vllm_blocks=(5, 1), first=1):
    return LoadSpec(request_id, request_id, list(range(prompt_len)), {"do_remote_prefill": True}, list(vllm_blocks),
                    first)


def replies(*frames):
    """op pulls' answer: one frame per (index, status, body), in the order given."""
    return Raw(b"".join(frame({"status": s, "index": i, "body": b}) for i, s, b in frames))


def released(*statuses):
    return {"status": 200, "body": {"results": [{"status": s} if s == 204 else
                                                {"status": s, "body": {"status": s, "reason": "unknown-request",
                                                                       "detail": "no such pull"}}
                                                for s in statuses]}}


def declined(reason):
    return {"status": 409, "reason": reason, "detail": f"the pull was declined: {reason}"}


@pytest.fixture
def client(dead_http):
    c = PdClient(dead_http, timeout_s=2, pull_timeout_s=5)
    yield c
    c.close()


def d_worker(client, engine, kv=None, hello=BATCHING):
    engine.answers["hello"] = hello
    w = PdWorker(client, tp_rank=0, tp_size=1, load_threads=2)
    w.register(kv if kv is not None else caches(), dict(LAYOUT, engine_socket=engine.path))
    return w


def all_results(w, n, seconds=10.0):
    got = {"finished": set(), "failed": {}}
    while len(got["finished"]) < n:
        r = results_within(w, seconds)
        got["finished"] |= r.finished
        got["failed"].update(r.failed)
    return got


def test_a_steps_loads_go_as_one_pulls_request_and_one_releases_request_whatever_order_d_answers(
        tmp_path, engine, client, caplog):
    p_layers, pd = p_kv()
    reply = d_file(tmp_path / "pd-d-d0.kv", pd, fill=7.0, epoch=41)
    engine.answers.update(pulls=replies((1, 200, reply), (0, 200, reply)), releases=released(204, 204))
    kv_a = caches()
    with caplog.at_level(logging.INFO, logger="vllm.pd_connector"):
        w = d_worker(client, engine, kv_a)
    assert "TP rank 0 sends an engine step's pulls in one request and their releases in one" in caplog.text

    w.start_loads([spec("a"), spec("b", vllm_blocks=(3, 0))], [])
    got = all_results(w, 2)
    engine.wait_for(lambda: engine.requests("releases"), what="the releases")
    w.shutdown()

    assert got == {"finished": {"a", "b"}, "failed": {}}
    for l, t in enumerate(kv_a.values()):
        assert torch.equal(t[5], p_layers[l][2]) and torch.equal(t[1], p_layers[l][4])
        assert torch.equal(t[3], p_layers[l][2]) and torch.equal(t[0], p_layers[l][4])
    assert [r["op"] for r in engine.requests() if r["op"] != "hello"] == ["pulls", "releases"]
    pulls = engine.requests("pulls")[0]["pulls"]
    assert [p["request_id"] for p in pulls] == ["a", "b"] and all(p["decode_rank"] == 0 for p in pulls)
    assert base64.b64decode(pulls[0]["token_ids_le32"]) == b"".join(i.to_bytes(4, "little") for i in range(10))
    assert engine.requests("releases")[0]["releases"] == [{"request_id": "b", "decode_rank": 0},
                                                         {"request_id": "a", "decode_rank": 0}], \
        "released in the order the copies ended"


def test_a_declined_pull_fails_its_load_alone_and_is_not_released(tmp_path, engine, client):
    _, pd = p_kv()
    reply = d_file(tmp_path / "pd-d-d0.kv", pd, epoch=41)
    engine.answers.update(pulls=replies((0, 409, declined("lease_mismatch")), (1, 200, reply)),
                          releases=released(204))
    w = d_worker(client, engine)

    w.start_loads([spec("a"), spec("b")], [])
    got = all_results(w, 2)
    engine.wait_for(lambda: engine.requests("releases"), what="the releases")
    w.shutdown()

    assert got == {"finished": {"a", "b"}, "failed": {"a": "lease_mismatch"}}
    assert engine.requests("releases")[0]["releases"] == [{"request_id": "b", "decode_rank": 0}]


def test_a_release_only_pull_rides_in_the_same_requests_and_is_never_reported(tmp_path, engine, client):
    _, pd = p_kv()
    reply = d_file(tmp_path / "pd-d-d0.kv", pd, epoch=41)
    engine.answers.update(pulls=replies((0, 200, reply), (1, 200, reply)), releases=released(204, 204))
    w = d_worker(client, engine)

    w.start_loads([spec("a")], [spec("gone")])
    got = all_results(w, 1)
    engine.wait_for(lambda: engine.requests("releases"), what="the releases")
    w.shutdown()

    assert got == {"finished": {"a"}, "failed": {}}, "a release-only pull is nobody's load"
    assert [p["request_id"] for p in engine.requests("pulls")[0]["pulls"]] == ["a", "gone"]
    assert sorted(r["request_id"] for r in engine.requests("releases")[0]["releases"]) == ["a", "gone"]


def test_a_connection_lost_mid_way_fails_the_unanswered_loads_and_releases_what_d_may_hold(tmp_path, engine,
                                                                                            client):
    _, pd = p_kv()
    reply = d_file(tmp_path / "pd-d-d0.kv", pd, epoch=41)
    engine.answers.update(pulls=Raw(frame({"status": 200, "index": 0, "body": reply}), close=True),
                          releases=released(204, 204))
    w = d_worker(client, engine)

    w.start_loads([spec("a"), spec("b")], [])
    got = all_results(w, 2)
    engine.wait_for(lambda: engine.requests("releases"), what="the releases")
    w.shutdown()

    assert got["finished"] == {"a", "b"}
    assert got["failed"] == {"b": "unreachable"}, got
    assert engine.requests("releases")[0]["releases"] == [{"request_id": "a", "decode_rank": 0},
                                                         {"request_id": "b", "decode_rank": 0}]


def test_without_epochs_a_load_is_reported_only_once_its_release_in_the_batch_succeeded(tmp_path, engine, client,
                                                                                        monkeypatch):
    _, pd = p_kv()
    reply = d_file(tmp_path / "pd-d-d0.kv", pd, epoch=41)
    monkeypatch.setattr(loading, "_LOADS_IN_ORDER", False)   # as on a CPU that reorders loads
    engine.answers.update(pulls=replies((0, 200, reply), (1, 200, reply)), releases=released(204, 404))
    w = d_worker(client, engine)

    w.start_loads([spec("a"), spec("b")], [])
    got = all_results(w, 2)
    w.shutdown()

    assert got == {"finished": {"a", "b"}, "failed": {"b": "kv-released-early"}}


def test_a_pulls_request_refused_whole_fails_every_load_of_it(engine, client):
    engine.answers.update(pulls={"status": 400, "body": {"status": 400, "reason": "invalid-argument",
                                                         "detail": "op pulls carries 'pulls', a list of 1 to 64"}})
    w = d_worker(client, engine)

    w.start_loads([spec("a"), spec("b")], [])
    got = all_results(w, 2)
    w.shutdown()

    assert got == {"finished": {"a", "b"}, "failed": {"a": "invalid-argument", "b": "invalid-argument"}}
    assert engine.requests("releases") == [], "nothing was pulled"


def test_a_pd_connector_whose_hello_names_no_pull_batch_gets_one_pull_and_one_release_per_load(tmp_path, engine,
                                                                                               client):
    _, pd = p_kv()
    engine.answers.update(pull={"status": 200, "body": d_file(tmp_path / "pd-d-d0.kv", pd, epoch=41)},
                          release={"status": 204})
    w = d_worker(client, engine, hello={"status": 200, "body": {"protocol": 1, "features": ["token-ids-le32"]}})

    w.start_loads([spec("a"), spec("b")], [])
    got = all_results(w, 2)
    engine.wait_for(lambda: len(engine.requests("release")) == 2, what="both releases")
    w.shutdown()

    assert got == {"finished": {"a", "b"}, "failed": {}}
    assert sorted(r["op"] for r in engine.requests() if r["op"] != "hello") == ["pull", "pull", "release", "release"]


def test_a_step_of_many_or_long_prompts_goes_in_several_requests():
    many = [(spec(f"r{i}"), True) for i in range(loading.MAX_BATCH_PULLS + 3)]
    assert [len(c) for c in loading._chunks(many)] == [loading.MAX_BATCH_PULLS, 3]
    long = [(spec(f"l{i}", prompt_len=loading.MAX_BATCH_TOKENS // 2), True) for i in range(5)]
    assert [len(c) for c in loading._chunks(long)] == [2, 2, 1]
    alone = [(spec("huge", prompt_len=loading.MAX_BATCH_TOKENS + 1), True), (spec("s"), False)]
    assert [len(c) for c in loading._chunks(alone)] == [1, 1]


class PullsBreakMidway:
    """A client whose step of pulls answers the first load, then fails unexpectedly (a bug, not a refusal)."""

    def __init__(self):
        self.released = []

    def batches_pulls(self):
        return True

    def pulls(self, items, on_reply):
        on_reply(0, PdError(409, "lease_mismatch", "declined"), None)
        raise TypeError("not JSON serializable")

    def releases(self, items):
        self.released += items
        return [None] * len(items)

    def close(self):
        pass


def test_a_step_whose_pulls_fail_unexpectedly_still_reports_every_load_and_releases_what_d_may_hold():
    client = PullsBreakMidway()
    w = PdWorker(client, tp_rank=0, tp_size=1, load_threads=1)
    w.register(caches(), LAYOUT)

    w.start_loads([spec("a"), spec("b")], [])
    got = all_results(w, 2)
    w.shutdown()

    assert got["finished"] == {"a", "b"}
    assert got["failed"] == {"a": "lease_mismatch", "b": "plugin-error"}, got
    assert client.released == [("b", 0)], "b had no answer: D may hold its pull"


OLDER = {"status": 200, "body": {"protocol": 1, "features": ["token-ids-le32"]}}


def test_a_pd_connector_restarted_at_an_older_version_mid_step_gets_the_steps_releases_one_by_one(
        tmp_path, engine, client, monkeypatch):
    _, pd = p_kv()
    reply = d_file(tmp_path / "pd-d-d0.kv", pd, epoch=41)
    monkeypatch.setattr(loading, "_LOADS_IN_ORDER", False)   # the loads wait for their releases
    w = d_worker(client, engine)
    # the step's pulls are answered on a connection that then ends; the one opened for the releases meets a
    # pd-connector without op releases (a rollback), which answers it 400 unknown-op
    engine.answers.update(hello=[BATCHING, OLDER], pulls=Raw(frame({"status": 200, "index": 0, "body": reply})
                                                             + frame({"status": 200, "index": 1, "body": reply}),
                                                             close=True),
                          release={"status": 204})

    w.start_loads([spec("a"), spec("b")], [])
    got = all_results(w, 2)
    w.shutdown()

    assert got == {"finished": {"a", "b"}, "failed": {}}, "each vouched for by its own release"
    assert [r["op"] for r in engine.requests() if r["op"] != "hello"][-2:] == ["release", "release"]
    assert engine.requests("releases") == []


def test_a_step_whose_releases_fail_unexpectedly_still_reports_every_load(tmp_path, engine, client, monkeypatch):
    _, pd = p_kv()
    reply = d_file(tmp_path / "pd-d-d0.kv", pd, epoch=41)
    monkeypatch.setattr(loading, "_LOADS_IN_ORDER", False)
    engine.answers.update(pulls=replies((0, 200, reply), (1, 200, reply)))
    w = d_worker(client, engine)

    def broken(items):
        raise OSError(24, "Too many open files")  # what socket.socket() raises out of file descriptors
    monkeypatch.setattr(client, "releases", broken)

    w.start_loads([spec("a"), spec("b")], [])
    got = all_results(w, 2)
    w.shutdown()

    assert got == {"finished": {"a", "b"}, "failed": {"a": "release-failed: plugin-error",
                                                      "b": "release-failed: plugin-error"}}, \
        "a copy its release did not vouch for is not used, and vLLM hears of each"


def test_a_pull_d_stopped_waiting_for_is_released_as_one_d_may_still_hold(tmp_path, engine, client):
    _, pd = p_kv()
    reply = d_file(tmp_path / "pd-d-d0.kv", pd, epoch=41)
    late = {"status": 503, "reason": "deadline-exceeded", "detail": "pull a got no answer within PT30S"}
    engine.answers.update(pulls=replies((1, 200, reply), (0, 503, late)), releases=released(204, 204))
    w = d_worker(client, engine)

    w.start_loads([spec("a"), spec("b")], [])
    got = all_results(w, 2)
    engine.wait_for(lambda: engine.requests("releases"), what="the releases")
    w.shutdown()

    assert got == {"finished": {"a", "b"}, "failed": {"a": "deadline-exceeded"}}
    assert sorted(r["request_id"] for r in engine.requests("releases")[0]["releases"]) == ["a", "b"], \
        "a rank that joined a shared pull does not abort it when its wait runs out: its release frees it"
