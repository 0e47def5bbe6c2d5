"""P's control path (control.PdControl) against a scripted pd-connector: the scheduler thread takes
granted blocks and slots without waiting, params are built from the grant, commits and aborts leave in
batches from the control thread, grants are retired and given back, and a refused or failed batch is
handled. Every wait in these tests is bounded."""

import threading
import time

import pytest

from pd_connector_vllm.client import PdError
from pd_connector_vllm.control import PdControl

TEMPLATE = {"do_remote_prefill": True, "do_remote_decode": False, "remote_engine_id": "p0",
            "remote_host": "127.0.0.1", "remote_port": 8081, "tp_size": 1, "transfer_mode": "pull"}


class ScriptedP:
    """Answers batches like pd-connector: grants fresh blocks and slots, commits what it granted."""

    base_url = "http://127.0.0.1:1 (scripted)"

    def __init__(self, free_blocks=64, ttl_ms=600_000):
        self.free = list(range(free_blocks))
        self.ttl_ms = ttl_ms
        self.bodies = []
        self.granted = {}
        self.next_nonce = 1000
        self.lock = threading.Lock()
        self.gate = threading.Event()
        self.gate.set()
        self.fail = None
        self.lose = None                 # a batch this matches (once) is applied, and its answer lost
        self.fail_withdrawals = 0        # this many batches carrying withdrawals fail unapplied
        self.by_ask = {}                 # ask id -> the grant it made
        self.committed = set()           # request ids committed: P refuses a second commit of one
        self.lost = []                   # the answers lost
        self.twice = None                # a batch this matches (once) reaches P twice, the first answer lost

    def batch(self, body):
        assert self.gate.wait(10), "test gate never opened"
        with self.lock:
            self.bodies.append(body)
            if self.fail:
                raise self.fail
            if body.get("withdraw") and self.fail_withdrawals > 0:
                self.fail_withdrawals -= 1
                raise PdError(0, "unreachable", "connection refused (scripted)")
            answer = self._apply(body)
            if self.twice is not None and self.twice(body):
                self.twice = None
                self.lost.append(answer)
                answer = self._apply(body)
            if self.lose is not None and self.lose(body):
                self.lose = None
                self.lost.append(answer)
                raise PdError(0, "timeout", "batch: no answer within 10.0 s (scripted)")
            return answer

    def _apply(self, body):
        answer = {"commits": [], "aborts": [], "returns": [], "withdrawn": []}
        for c in body.get("commits", []):
            ok = c["grant_id"] in self.granted and c["request_id"] not in self.committed
            detail = (None if ok else f"request {c['request_id']} still holds a lease" if c["grant_id"] in self.granted
                      else f"grant {c['grant_id']} is unknown")
            answer["commits"].append({"id": c["request_id"], "status": 200 if ok else 409,
                                      "reason": None if ok else "wrong-state", "detail": detail})
            if ok:
                self.committed.add(c["request_id"])
        for a in body.get("aborts", []):
            answer["aborts"].append({"id": a, "status": 204})
        for r in body.get("returns", []):
            self.free.extend(self.granted.pop(r, []))
        for ask in body.get("withdraw", []):
            gid = self.by_ask.pop(ask, None)
            answer["withdrawn"].append({"id": ask, "status": 404 if gid is None else 204})
            self.free.extend(self.granted.pop(gid, []))
        if "grant" in body:
            n = min(body["grant"]["blocks"], len(self.free))
            blocks, self.free = self.free[:n], self.free[n:]
            leases = []
            for _ in range(body["grant"]["leases"]):
                leases.append({"slot": len(leases), "nonce": self.next_nonce})
                self.next_nonce += 1
            gid = body["grant"].get("extend") or f"g1-{len(self.granted) + len(self.bodies)}"
            if body["grant"].get("extend") and gid not in self.granted:
                answer["grant_refused"] = {"id": "grant", "status": 409, "reason": "wrong-state", "detail": "gone"}
                self.free[:0] = blocks
                return answer
            if body["grant"].get("ask_id") in self.by_ask:
                answer["grant_refused"] = {"id": "grant", "status": 409, "reason": "ask-id-used", "detail": "used"}
                self.free[:0] = blocks
                return answer
            self.granted.setdefault(gid, []).extend(blocks)
            if "ask_id" in body["grant"]:
                self.by_ask[body["grant"]["ask_id"]] = gid
            answer["grant"] = {"grant_id": gid, "block_ids": blocks, "leases": leases,
                               "expires_in_ms": self.ttl_ms, "block_bytes": 64,
                               "ranks": [{"rank": 0, "kv_file": "/dev/shm/pd-p0-r0.kv", "region_bytes": 6400}],
                               "params_template": dict(TEMPLATE)}
        return answer


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def started(p, blocks=16, leases=8, clock=time.monotonic):
    c = PdControl(p, blocks, leases, verify=True, clock=clock)
    c.start()
    c.wait_for_credit(10)
    return c


def wait_until(condition, what, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError(f"not within {timeout} s: {what}")


def test_take_builds_the_params_p_will_export_and_the_commit_leaves_in_a_batch():
    p = ScriptedP()
    c = started(p)
    bound = c.take(3)
    assert bound is not None and len(bound.blocks) == 3
    params = c.params(bound, "req-1", 10)
    assert params == {**TEMPLATE, "remote_request_id": "req-1", "remote_block_ids": [bound.blocks],
                      "remote_num_tokens": 10, "remote_lease_slot": bound.slot, "remote_lease_nonce": bound.nonce}
    c.commit(bound, "req-1", 10)
    wait_until(lambda: any(b.get("commits") for b in p.bodies), "the commit was sent")
    (commit,) = [x for b in p.bodies for x in b["commits"]]
    assert commit == {"grant_id": bound.grant.id, "request_id": "req-1", "num_tokens": 10,
                      "block_ids": bound.blocks, "lease_slot": bound.slot, "lease_nonce": bound.nonce}
    c.close(5)


def test_the_scheduler_thread_takes_and_commits_while_pd_connector_does_not_answer():
    p = ScriptedP()
    c = started(p)
    p.gate.clear()                       # pd-connector stops answering
    c.abort("gone")                      # the control thread is now stuck in a batch
    wait_until(lambda: len(p.bodies) >= 1, "first grant recorded")
    done = threading.Event()

    def scheduler_step():
        for i in range(5):
            b = c.take(1)
            assert b is not None
            c.commit(b, f"r{i}", 4)
        done.set()

    t = threading.Thread(target=scheduler_step)
    t.start()
    t.join(5)
    assert done.is_set(), "the scheduler thread waited on pd-connector"
    p.gate.set()
    wait_until(lambda: sum(len(b.get("commits", [])) for b in p.bodies) == 5, "all five commits sent once answering")
    c.close(5)


class CountedWakeups:
    """Counts the scheduler thread's wake-ups of the control thread (each costs it a thread switch)."""

    def __init__(self, control):
        self.count = 0
        cond = control._cond
        notify = cond.notify

        def counted(n=1):
            self.count += 1
            notify(n)
        cond.notify = counted


def test_while_the_engine_commits_the_control_thread_finds_the_commits_without_being_woken_for_each():
    clock = Clock()
    p = ScriptedP()
    c = started(p, blocks=64, leases=32, clock=clock)  # credit for all seven: no take asks for more
    wakeups = CountedWakeups(c)

    def committed():
        return sum(len(b.get("commits", [])) for b in p.bodies)

    first = c.take(1)
    c.commit(first, "r0", 4)
    assert wakeups.count == 1, "a commit after a quiet spell wakes the control thread"
    wait_until(lambda: committed() == 1 and c.polling, "the first commit sent, the control thread polling")
    for i in range(1, 6):  # the engine keeps committing: no wake-ups, every commit still leaves
        c.commit(c.take(1), f"r{i}", 4)
    assert wakeups.count == 1, "the scheduler thread woke the control thread while it was polling"
    wait_until(lambda: committed() == 6, "the commits found by the polling control thread sent")

    clock.now += 2.0  # a quiet spell: the control thread stops polling and sleeps until woken
    wait_until(lambda: not c.polling, "the control thread asleep after a second without commits")
    c.commit(c.take(1), "r6", 4)
    assert wakeups.count == 2, "the first commit after the quiet spell did not wake the control thread"
    wait_until(lambda: committed() == 7, "that commit sent")
    c.close(5)


def test_a_take_wakes_the_sleeping_control_thread_only_when_it_runs_the_credit_down_to_half():
    clock = Clock()
    p = ScriptedP()
    c = started(p, blocks=16, leases=16, clock=clock)
    wakeups = CountedWakeups(c)
    clock.now += 2.0  # no commits yet: the control thread sleeps until woken
    wait_until(lambda: not c.polling, "the control thread asleep")
    c.take(4)
    assert wakeups.count == 0, "12 of 16 blocks left: the take woke the control thread for nothing"
    c.take(4)
    assert wakeups.count == 1, "8 of 16 blocks left: the take did not wake the control thread to top the credit up"
    wait_until(lambda: sum("grant" in b for b in p.bodies) == 2, "more credit asked of P")
    c.close(5)


def test_distinct_requests_get_distinct_blocks_and_nonces_and_a_given_back_share_is_reused():
    c = started(ScriptedP())
    a, b = c.take(2), c.take(2)
    assert not set(a.blocks) & set(b.blocks) and a.nonce != b.nonce
    c.give_back(a)
    again = c.take(2)
    assert again.blocks == a.blocks and again.nonce == a.nonce, "an aborted request's share serves the next one"
    c.close(5)


def test_a_refused_commit_is_counted_and_its_grant_is_used_no_more():
    p = ScriptedP()
    c = started(p)
    bound = c.take(1)
    p.granted.clear()                    # P lost the grant (expired, or restarted)
    c.commit(bound, "late", 4)
    wait_until(lambda: c.stats.commits_refused == 1, "the refusal was counted")
    assert bound.grant.dead and not c.usable(bound)
    c.close(5)


def test_a_failed_batch_sends_its_commits_again():
    p = ScriptedP()
    c = started(p)
    bound = c.take(1)
    p.fail = PdError(0, "unreachable", "connection refused")
    c.commit(bound, "retry-me", 4)
    wait_until(lambda: len([b for b in p.bodies if b.get("commits")]) >= 1, "a first attempt")
    p.fail = None
    wait_until(lambda: len([b for b in p.bodies if b.get("commits")]) >= 2, "the commit sent again")
    c.close(5)


def test_a_commit_sent_again_after_a_lost_answer_and_refused_as_applied_is_no_refused_commit(caplog):
    p = ScriptedP()
    c = started(p)
    bound = c.take(1)
    p.lose = lambda b: bool(b.get("commits"))   # P applies the commit; its answer is lost
    c.commit(bound, "applied-once", 4)
    wait_until(lambda: len([b for b in p.bodies if b.get("commits")]) >= 2, "the commit sent again")
    wait_until(lambda: "P applied it the first time" in caplog.text, "the second refusal logged as what it is")
    assert c.stats.commits_refused == 0
    assert not bound.grant.dead, "the grant is still used"
    assert not c._resent, "nothing is remembered once P answered"
    c.close(5)


def test_a_grant_past_half_its_life_takes_no_new_request_and_goes_back_once_unused():
    clock = Clock()
    p = ScriptedP(ttl_ms=100_000)
    c = started(p, clock=clock)
    first = c.take(1)
    clock.now += 60                      # past half of 100 s
    assert c.usable(first), "params of a share taken earlier may still go out"
    c.commit(first, "old", 4)
    second = c.take(1)
    assert second is None or second.grant.id != first.grant.id, "a retired grant took a new request"
    wait_until(lambda: any(first.grant.id in b.get("returns", []) for b in p.bodies), "the retired grant given back")
    c.close(5)


def test_the_credit_is_topped_up_in_the_same_grant_and_a_refused_extension_starts_a_new_one():
    p = ScriptedP(free_blocks=40)
    c = started(p, blocks=8, leases=4)
    first = c.take(6)
    wait_until(lambda: any(b.get("grant", {}).get("extend") == first.grant.id for b in p.bodies), "an extension asked")
    wait_until(lambda: len(first.grant.blocks) >= 4, "the extension's blocks joined the grant")
    p.granted.clear()                    # P no longer holds it
    c.take(len(first.grant.blocks))      # run the grant low again: the next extension is refused
    wait_until(lambda: len({b["grant"].get("extend") for b in p.bodies if "grant" in b} - {None}) >= 1
               and any("grant" in b and "extend" not in b["grant"] for b in p.bodies[2:]), "a new grant asked")
    c.close(5)


def test_a_grant_whose_answer_was_lost_is_withdrawn_by_its_ask_id_until_p_answers_the_withdrawal():
    p = ScriptedP(free_blocks=20)
    p.lose = lambda b: "ask_id" in b.get("grant", {})
    p.fail_withdrawals = 1               # the first batch that withdraws it fails too
    c = started(p, blocks=16, leases=8)
    (lost,) = p.lost
    lost_ask = p.bodies[0]["grant"]["ask_id"]
    second_ask = p.bodies[1]["grant"]["ask_id"]   # asked beside the first withdrawal, whose batch failed
    withdrawing = [b["withdraw"] for b in p.bodies if b.get("withdraw")]
    assert withdrawing == [[lost_ask], [lost_ask, second_ask]], "sent until answered, and no more"
    assert lost["grant"]["grant_id"] not in p.granted, "P took the lost grant back"
    assert not any(g.id == lost["grant"]["grant_id"] for g in c._grants), "the plugin never held it"
    asks = [b["grant"]["ask_id"] for b in p.bodies if "ask_id" in b.get("grant", {})]
    assert len(asks) == len(set(asks)), f"an ask id used twice: {asks}"
    assert c.take(4) is not None
    c.close(5)


def test_an_ask_that_reached_p_twice_is_withdrawn_so_the_grant_of_its_lost_first_answer_goes_back():
    p = ScriptedP(free_blocks=40)
    p.twice = lambda b: "ask_id" in b.get("grant", {})   # as a client's retry of a request P did get would
    c = PdControl(p, 16, 8, verify=True)
    c.start()
    try:
        wait_until(lambda: any(b.get("withdraw") for b in p.bodies), "the ask withdrawn")
        (first,) = p.lost
        assert p.bodies[0]["grant"]["ask_id"] in next(b["withdraw"] for b in p.bodies if b.get("withdraw"))
        wait_until(lambda: first["grant"]["grant_id"] not in p.granted, "the grant of the lost answer went back")
        c.wait_for_credit(10)
    finally:
        c.close(5)


def test_withdrawals_waiting_are_bounded_and_the_newest_are_kept():
    c = PdControl(ScriptedP(), 16, 8, verify=True)   # not started: only its bookkeeping
    with c._cond:
        for i in range(100):
            c._queue_withdrawal(f"a.{i}")
        assert c._withdraw == [f"a.{i}" for i in range(36, 100)]


def test_a_lost_extension_answer_retires_its_grant_which_goes_back_once_no_request_holds_a_share():
    p = ScriptedP(free_blocks=60)
    c = started(p, blocks=16, leases=8)
    p.lose = lambda b: "extend" in b.get("grant", {})
    held = c.take(10)                     # runs the credit low: the control thread extends this grant
    wait_until(lambda: p.lost, "an extension applied by P, its answer lost")
    wait_until(lambda: any(g.id != held.grant.id for g in c._grants), "a new grant instead")
    nxt = c.take(1)
    assert nxt is not None and nxt.grant.id != held.grant.id, "a new request took from the grant whose extension was lost"
    assert not any(held.grant.id in b.get("returns", []) for b in p.bodies), "returned while a request holds a share"
    c.commit(held, "held", 40)
    wait_until(lambda: any(held.grant.id in b.get("returns", []) for b in p.bodies), "returned once unused")
    assert held.grant.id not in p.granted, "with it, what the lost extension added went back"
    c.close(5)


def test_with_no_free_blocks_p_is_not_asked_in_a_loop():
    p = ScriptedP(free_blocks=0)
    c = PdControl(p, 16, 8, verify=True)
    started_at = time.monotonic()
    c.start()
    with pytest.raises(RuntimeError, match="granted no blocks"):
        c.wait_for_credit(1)
    # asks only (each empty grant's return is a batch of its own), against the time they had: a count per
    # second of wall time failed on a loaded machine, where the wait above returns late
    asked = sum(1 for b in list(p.bodies) if "grant" in b)
    elapsed = time.monotonic() - started_at
    assert asked <= elapsed / 0.25 + 2, f"{asked} grant requests in {elapsed:.2f} s with nothing free"
    c.close(5)


def test_close_gives_every_grant_back_and_stops_the_thread():
    p = ScriptedP()
    c = started(p)
    gid = c.take(1).grant.id
    c.close(5)
    assert any(gid in b.get("returns", []) for b in p.bodies)
    assert not c.alive(), "the control thread outlived close"


def _os_thread_name(native_id: int) -> str:
    with open(f"/proc/self/task/{native_id}/comm") as f:
        return f.read().strip()


def test_the_control_thread_carries_its_name_at_the_os_level():
    """What `top -H` or `ps -L` shows an operator looking at vLLM's engine process (and the benches' per-thread CPU)."""
    c = started(ScriptedP())
    try:
        assert _os_thread_name(c._thread.native_id) == "pd-control"
    finally:
        c.close(5)
