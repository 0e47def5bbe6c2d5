"""PdClient over D's engine socket: pull and release as frames (4-byte big-endian length, UTF-8 JSON) after a
hello with the engine token, one connection per thread, each call within its deadline, every failure one
PdError with the reason HTTP would give (or a local one), and nothing sent twice."""

import base64
import json
import socket
import threading
import time

import pytest

from pd_connector_vllm.client import PdClient, PdError
from pd_connector_vllm.engine_socket import MAX_FRAME

from engine_socket_server import CLOSE, SILENCE, FakeEngineSocket, Raw, frame

TOKEN = "tok-engine-0123456789"
PULL_REPLY = {"request_id": "r1", "state": "received", "block_ids": [3, 4], "bytes": 2048, "block_bytes": 1024,
              "ranks": [{"rank": 0, "kv_file": "/dev/shm/pd-d0-d0.kv", "region_bytes": 8192}],
              "timings": {"pull_ms": 1.5}}
PARAMS = {"do_remote_prefill": True, "remote_engine_id": "p0", "lease": {"slot": 7, "nonce": "n-é"}}


def problem(status, reason, detail):
    return {"status": status, "body": {"type": f"https://pd-connector/problems/{reason}", "title": "refused",
                                       "status": status, "detail": detail, "reason": reason}}


@pytest.fixture
def connect(engine, dead_http):
    clients = []

    def make(token=None, **kw):
        c = PdClient(dead_http, token, **kw)
        clients.append(c)
        c.use_engine_socket(engine.path)
        return c

    yield make
    for c in clients:
        c.close()


def test_a_pull_is_one_frame_holding_the_http_pulls_body_after_a_hello(engine, connect):
    engine.answers["pull"] = {"status": 200, "body": PULL_REPLY}
    c = connect(TOKEN)
    assert c.engine_socket == engine.path
    assert c.pull("r1", [5, 6, 7], PARAMS, 1) == PULL_REPLY
    (conn,) = engine.connections
    assert conn.requests == [{"op": "hello", "token": TOKEN},
                             {"op": "pull", "body": {"request_id": "r1", "token_ids": [5, 6, 7],
                                                     "kv_transfer_params": PARAMS, "decode_rank": 1}}]
    for f in conn.frames:
        assert int.from_bytes(f[:4], "big") == len(f) - 4
        json.loads(f[4:].decode("utf-8"))


def test_a_release_names_the_request_and_rank_and_a_204_returns_nothing(engine, connect):
    engine.answers["release"] = {"status": 204}
    c = connect()
    assert c.release("r1", 3) is None
    assert engine.requests("release") == [{"op": "release", "request_id": "r1", "decode_rank": 3}]


@pytest.mark.parametrize("token", [TOKEN, None])
def test_a_connection_opens_with_a_hello_carrying_the_token_or_null(engine, connect, token):
    connect(token)
    assert engine.requests() == [{"op": "hello", "token": token}]


def test_a_problem_reply_is_a_pd_error_with_its_status_reason_and_detail_and_the_connection_stays(engine, connect):
    engine.answers["pull"] = problem(409, "lease_mismatch", "P released the blocks")
    engine.answers["release"] = [problem(404, "unknown-request", "no such request"),
                                 {"status": 502, "body": {"detail": "no reason token"}}]
    c = connect()
    with pytest.raises(PdError) as e:
        c.pull("r1", [1], PARAMS, 0)
    assert (e.value.status, e.value.reason) == (409, "lease_mismatch")
    assert e.value.detail == f"pull over {engine.path}: P released the blocks"
    with pytest.raises(PdError) as e:
        c.release("r1", 0)
    assert (e.value.status, e.value.reason) == (404, "unknown-request")
    with pytest.raises(PdError) as e:   # not a problem document: as the HTTP path says it
        c.release("r1", 0)
    assert (e.value.status, e.value.reason) == (502, "http-error") and "no reason token" in e.value.detail
    assert len(engine.connections) == 1


def test_a_server_that_closes_is_unreachable_and_the_pull_is_not_sent_again(engine, connect):
    engine.answers["pull"] = [CLOSE, {"status": 200, "body": PULL_REPLY}]
    c = connect()
    with pytest.raises(PdError) as e:
        c.pull("r1", [1], PARAMS, 0)
    assert (e.value.status, e.value.reason) == (0, "unreachable")
    assert len(engine.requests("pull")) == 1, "a pull is not idempotent: never retried"
    assert c.pull("r2", [1], PARAMS, 0) == PULL_REPLY   # the next call on a new connection, hello first
    assert [r["op"] for r in engine.connections[1].requests] == ["hello", "pull"]


@pytest.mark.parametrize("op", ["pull", "release"])
def test_a_server_that_never_answers_is_a_timeout_within_the_calls_deadline(engine, connect, op):
    """The pull waits pull_timeout_s, the release timeout_s; a silent connection is dropped, not reused."""
    engine.answers[op] = [SILENCE, {"status": 200, "body": PULL_REPLY} if op == "pull" else {"status": 204}]
    c = connect(timeout_s=0.3 if op == "release" else 30, pull_timeout_s=0.3 if op == "pull" else 30)
    t0 = time.monotonic()
    with pytest.raises(PdError) as e:
        c.pull("r1", [1], PARAMS, 0) if op == "pull" else c.release("r1", 0)
    took = time.monotonic() - t0
    assert (e.value.status, e.value.reason) == (0, "timeout")
    assert 0.3 <= took < 15, took   # its own 0.3 s, not the other call's 30 s (generous: a busy 2-core VM)
    c.pull("r2", [1], PARAMS, 0) if op == "pull" else c.release("r2", 0)
    assert len(engine.connections) == 2


@pytest.mark.parametrize("length", [MAX_FRAME + 1, 0, 2**32 - 1])
def test_a_frame_length_outside_1_to_4_mib_is_refused_as_a_bad_answer_at_once(engine, connect, length):
    """Refused on its length alone: reading on would wait for bytes that never come (a timeout) or hold 4 GiB."""
    engine.answers["pull"] = [Raw(length.to_bytes(4, "big")), {"status": 200, "body": PULL_REPLY}]
    c = connect(pull_timeout_s=30)
    with pytest.raises(PdError) as e:
        c.pull("r1", [1], PARAMS, 0)
    assert (e.value.status, e.value.reason) == (0, "bad-answer") and str(length) in e.value.detail
    assert c.pull("r2", [1], PARAMS, 0) == PULL_REPLY
    assert len(engine.connections) == 2, "the connection past a refused length is dropped"


def test_a_frame_of_exactly_4_mib_and_a_large_pull_get_through(engine, connect):
    empty = len(json.dumps({"status": 200, "body": {"pad": ""}}).encode())
    engine.answers["pull"] = Raw(frame({"status": 200, "body": {"pad": "x" * (MAX_FRAME - empty)}}))
    c = connect()
    tokens = list(range(100_000, 300_000))   # about 1.4 MB of request
    assert len(c.pull("r1", tokens, PARAMS, 0)["pad"]) == MAX_FRAME - empty
    assert engine.requests("pull")[0]["body"]["token_ids"] == tokens


def test_a_request_over_4_mib_is_refused_before_anything_is_sent(engine, connect):
    engine.answers["pull"] = {"status": 200, "body": PULL_REPLY}
    c = connect()
    with pytest.raises(PdError) as e:
        c.pull("r1", [123456] * 600_000, PARAMS, 0)
    assert (e.value.status, e.value.reason) == (0, "frame-too-large")
    assert c.pull("r2", [1], PARAMS, 0) == PULL_REPLY
    assert [r["body"]["request_id"] for r in engine.requests("pull")] == ["r2"]
    assert len(engine.connections) == 1


@pytest.mark.parametrize("payload,status", [(b"not json", 0), (b"\xff\xfe{}", 0), (b"[200]", 0),
                                            (b'{"body": {}}', 0), (b'{"status": "200", "body": {}}', 0),
                                            (b'{"status": 200, "body": [1]}', 200), (b'{"status": 200}', 200)])
def test_a_reply_that_is_not_an_object_with_a_status_and_a_body_is_a_bad_answer(engine, connect, payload, status):
    engine.answers["pull"] = Raw(len(payload).to_bytes(4, "big") + payload)
    c = connect()
    with pytest.raises(PdError) as e:
        c.pull("r1", [1], PARAMS, 0)
    assert (e.value.status, e.value.reason) == (status, "bad-answer")


def test_each_thread_has_its_own_connection_opened_with_a_hello(engine, connect):
    both_in_flight = threading.Barrier(2, timeout=5)   # one shared connection could not hold two pulls at once

    def answer(request):
        both_in_flight.wait()
        return {"status": 200, "body": dict(PULL_REPLY, request_id=request["body"]["request_id"])}

    engine.answers["pull"] = answer
    c = connect(TOKEN)
    got, errors = {}, []

    def pull(rid):
        try:
            got[rid] = c.pull(rid, [1], PARAMS, 0)["request_id"]
        except Exception as e:  # noqa: BLE001 - reported by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=pull, args=(f"r{i}",)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not errors and got == {"r0": "r0", "r1": "r1"}
    assert len(engine.connections) == 3   # this thread's (the probe's) and one per pulling thread
    assert all(conn.requests[0] == {"op": "hello", "token": TOKEN} for conn in engine.connections)
    engine.answers["pull"] = {"status": 200, "body": PULL_REPLY}
    c.pull("r2", [1], PARAMS, 0)
    assert len(engine.connections) == 3 and [r["op"] for r in engine.connections[0].requests] == ["hello", "pull"]


def test_close_closes_every_threads_connection_and_a_later_call_opens_a_new_one(engine, connect):
    engine.answers["release"] = {"status": 204}
    c = connect()
    t = threading.Thread(target=c.release, args=("r1", 0))
    t.start()
    t.join(10)
    assert len(engine.connections) == 2
    c.close()
    engine.wait_for(lambda: all(conn.closed_by_client.is_set() for conn in engine.connections), what="both closed")
    c.release("r2", 0)
    assert len(engine.connections) == 3


def test_only_pull_and_release_go_over_the_socket(engine, dead_http):
    c = PdClient(dead_http, pull_timeout_s=5)
    with pytest.raises(PdError, match="POST /v1/consumer/pull"):   # HTTP until use_engine_socket
        c.pull("r1", [1], PARAMS, 0)
    c.use_engine_socket(engine.path)
    with pytest.raises(PdError) as e:
        c.kv_layout()
    assert (e.value.status, e.value.reason) == (0, "unreachable") and "GET /v1/kv-layout" in e.value.detail
    assert engine.requests() == [{"op": "hello", "token": None}]
    c.close()


def test_a_connection_d_closed_while_idle_is_replaced_before_the_pull_is_sent(tmp_path, engine, connect):
    """D's pd-connector restarted between two pulls: the thread's old connection is noticed closed before
    anything is written to it, so the pull goes out once, on a new connection."""
    c = connect()
    engine.stop()
    restarted = FakeEngineSocket(engine.path, {"pull": {"status": 200, "body": PULL_REPLY}})
    try:
        assert c.pull("r1", [1], PARAMS, 0) == PULL_REPLY
        assert [r["op"] for r in restarted.requests()] == ["hello", "pull"]
    finally:
        restarted.stop()


def test_use_engine_socket_fails_on_a_socket_nobody_listens_on_and_the_client_stays_on_http(tmp_path, dead_http):
    c = PdClient(dead_http)
    with pytest.raises(PdError) as e:
        c.use_engine_socket(str(tmp_path / "missing.sock"))
    assert (e.value.status, e.value.reason) == (0, "unreachable") and "missing.sock" in e.value.detail
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)   # a dead pd-connector's socket file
    stale.bind(str(tmp_path / "stale.sock"))
    try:
        with pytest.raises(PdError) as e:
            c.use_engine_socket(str(tmp_path / "stale.sock"))
        assert (e.value.status, e.value.reason) == (0, "unreachable")
    finally:
        stale.close()
    assert c.engine_socket is None


def test_use_engine_socket_fails_when_the_hello_is_refused_or_unanswered(engine, dead_http):
    engine.answers["hello"] = [problem(401, "unauthenticated", "no engine token"), SILENCE]
    c = PdClient(dead_http, "wrong-token-0123456789", timeout_s=0.3)
    with pytest.raises(PdError) as e:
        c.use_engine_socket(engine.path)
    assert (e.value.status, e.value.reason) == (401, "unauthenticated")
    engine.wait_for(lambda: engine.connections[0].closed_by_client.is_set(), what="the refused connection closed")
    t0 = time.monotonic()
    with pytest.raises(PdError) as e:
        c.use_engine_socket(engine.path)
    assert (e.value.status, e.value.reason) == (0, "timeout") and time.monotonic() - t0 < 15  # its 0.3 s, not the pull's 150 s
    assert c.engine_socket is None
    c.close()


def test_a_hello_answered_with_another_protocol_is_refused(engine, dead_http):
    engine.answers["hello"] = {"status": 200, "body": {"protocol": 2}}
    with pytest.raises(PdError) as e:
        PdClient(dead_http).use_engine_socket(engine.path)
    assert (e.value.status, e.value.reason) == (200, "bad-answer") and "protocol 2" in e.value.detail


def packed_ids(text: str) -> list[int]:
    raw = base64.b64decode(text, validate=True)
    return [int.from_bytes(raw[i:i + 4], "little") for i in range(0, len(raw), 4)]


FEATURED_HELLO = {"status": 200, "body": {"protocol": 1, "features": ["token-ids-le32"]}}


def test_a_server_that_reads_packed_token_ids_gets_them_packed(engine, connect):
    engine.answers.update(hello=FEATURED_HELLO, pull={"status": 200, "body": PULL_REPLY})
    c = connect()
    ids = [0, 1, 127, 128, 65_535, 151_935, 2**31, 2**32 - 1]
    assert c.pull("r1", ids, PARAMS, 1) == PULL_REPLY
    (request,) = engine.requests("pull")
    body = request["body"]
    assert "token_ids" not in body
    assert packed_ids(body["token_ids_le32"]) == ids
    assert {k: v for k, v in body.items() if k != "token_ids_le32"} == {
        "request_id": "r1", "kv_transfer_params": PARAMS, "decode_rank": 1}


def test_ids_that_are_no_32_bit_words_go_as_the_list_for_the_server_to_refuse(engine, connect):
    engine.answers.update(hello=FEATURED_HELLO, pull={"status": 200, "body": PULL_REPLY})
    c = connect()
    c.pull("r1", [5, -1], PARAMS, 0)
    c.pull("r2", [5, 2**32], PARAMS, 0)
    c.pull("r3", [5, 1.5], PARAMS, 0)
    assert [r["body"].get("token_ids") for r in engine.requests("pull")] == [[5, -1], [5, 2**32], [5, 1.5]]


def test_each_connection_packs_by_its_own_hello(engine, connect):
    """D's pd-connector restarted at a version that does not read packed ids: the new connection's hello says
    so, and the next pull sends the list."""
    engine.answers.update(hello=FEATURED_HELLO, pull={"status": 200, "body": PULL_REPLY})
    c = connect()
    c.pull("r1", [1, 2], PARAMS, 0)
    assert "token_ids_le32" in engine.requests("pull")[0]["body"]
    engine.stop()
    older = FakeEngineSocket(engine.path, {"pull": {"status": 200, "body": PULL_REPLY}})
    try:
        c.pull("r2", [1, 2], PARAMS, 0)
        assert older.requests("pull")[0]["body"]["token_ids"] == [1, 2]
    finally:
        older.stop()
