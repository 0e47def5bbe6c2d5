"""The P side's control path: everything the scheduler thread needs from pd-connector, without waiting on it.

pd-connector grants this plugin blocks and lease slots in bulk (``grant`` in ``POST /v1/producer/batch``);
every granted slot already holds its nonce on every P rank. The scheduler thread binds a request to
granted blocks and one granted slot locally (``take``), the worker copies the prompt's KV into those
blocks within the same engine step, and ``request_finished`` hands out the params built from the grant
(``params``) and queues the commit. One background thread ("pd-control") sends what was queued since its
last round trip in one batch: commits, aborts, returned grants and a new grant when the credit runs low.
So the scheduler thread never waits on the network, and a whole engine step costs one loopback round
trip, off that thread.

Nor does the scheduler thread wake that thread for each commit: with the caches as cold as a forward
leaves them, waking it was about a fifth of the hooks' time (docs/performance.md, `--cold`).
While commits come, the control thread looks for them every ``_POLL_S`` on its own; only after
``_DOZE_AFTER_S`` without any does it sleep until woken, and then the next commit wakes it. A commit is
not urgent: the params are out before it, and it only has to reach P within the grant's life.

Why it is safe to hand the params out before P has the commit: the nonce is in the slot since the grant
(L2), and the copy is done before ``request_finished`` runs; a decoder that reads before the commit
gets the right bytes and P counts its read notification at the commit. A commit that never comes (the
engine died) ends with the grant: P zeroes its slots, then frees its blocks, and a late decoder declines.

A batch whose answer never comes (P, or P's whole JVM, held up past the client's wait) may still be
applied later. Its commits, aborts and returns are sent again; P refuses a commit it already applied (the
request holds its lease, or its blocks are no longer the grant's), which is logged as such and not counted
as a refused commit, since the params handed out for it are good. Its grant
would be one the plugin never heard of, holding P's blocks until it expires, so every ask for a new
grant carries an ``ask_id`` of the plugin's own, and the next batches ``withdraw`` it until P answers:
P takes back the grant that ask made, or refuses the ask if it comes later still. An extension whose
answer was lost cannot be named that way; the plugin stops taking from that grant and returns it once
no request holds a share, which gives back whatever the extension added.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from .client import PdClient, PdError
from .osthread import name_current_thread

log = logging.getLogger("vllm.pd_connector")

# A grant is used for new requests during the first half of its life, and its params are handed out
# only while this much of it is left: enough for the commit to reach P over a slow loopback.
_HAND_OUT_MARGIN_S = 30.0
# While the engine commits, the control thread polls for queued work this often (a commit reaches P at
# most this much later than at once); after this long without a commit or abort it sleeps until woken.
_POLL_S = 0.005
_DOZE_AFTER_S = 1.0
# Ask ids a batch withdraws at most: while P is unreachable every failed batch adds one; the oldest go first
# (a grant they may still make expires by itself, as every grant did before withdrawals).
_MAX_WITHDRAW = 64


@dataclass
class Grant:
    """One grant as the plugin holds it; times are this process's monotonic clock, taken before asking."""

    id: str
    # taken from the left on the scheduler thread, topped up on the right: a deque, so a take costs its own
    # blocks, not a copy of the whole grant's (about P's whole KV file when the credit is automatic)
    blocks: deque[int]
    leases: deque[tuple[int, int]]  # (slot, nonce); empty on an instance without lease verification
    rank_files: list[tuple[str | None, int]]
    template: dict[str, Any]
    retire_at: float
    valid_until: float
    outstanding: int = 0
    dead: bool = False  # P refused a commit to it as closed: nothing more is taken from it


@dataclass(slots=True)
class Bound:
    """A request's blocks and lease slot, taken from a grant on the scheduler thread."""

    grant: Grant
    blocks: list[int]
    slot: int | None
    nonce: int | None


@dataclass
class ControlStats:
    batches: int = 0
    batch_ms: list[float] = field(default_factory=list)
    commits_refused: int = 0
    no_credit: int = 0


class PdControl:

    def __init__(self, client: PdClient, target_blocks: int, target_leases: int, verify: bool,
                 timing_level: int = logging.DEBUG, clock=time.monotonic):
        if target_blocks < 1 or (verify and target_leases < 1):
            raise ValueError(f"a credit needs at least one block and one lease slot, got {target_blocks} and "
                             f"{target_leases}")
        self._client = client
        self._target_blocks = target_blocks
        self._target_leases = target_leases if verify else 0
        self._verify = verify
        self._timing_level = timing_level
        self._clock = clock
        # the scheduler thread's methods take the lock itself: entering the Condition is a Python-level call on top,
        # which doubles the lock's cost with the caches as cold as a forward leaves them (docs/performance.md)
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._grants: list[Grant] = []
        self._current: Grant | None = None  # the grant topped up (``extend``) while it is young
        self._commits: list[dict[str, Any]] = []
        self._aborts: list[str] = []
        self._returns: list[str] = []
        self._withdraw: list[str] = []  # ask ids of new-grant asks whose batch got no answer
        self._resent: set[str] = set()  # request ids whose commit is sent again after a batch without answer
        self._ask_prefix = os.urandom(6).hex()  # ask ids are unique across plugin instances and restarts
        self._ask_numbers = itertools.count(1)
        self._withdraw_unread_warned = False
        self._asking = False
        self._short = 0  # blocks a request could not find in any one grant: the next grant asks for them
        self._next_ask_at = 0.0  # after a grant that found too little free, P is not asked again at once
        self._stopping = False
        self._polling = False  # the control thread looks for work every _POLL_S: a commit need not wake it
        self._last_work_at = float("-inf")
        self._first_grant = threading.Event()
        self.stats = ControlStats()
        self._thread = threading.Thread(target=self._run, name="pd-control", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wait_for_credit(self, deadline_s: float) -> None:
        """Start-up only: the first grant, so that the first requests already find credit."""
        if not self._first_grant.wait(deadline_s):
            raise RuntimeError(f"pd-connector at {self._client.base_url} granted no blocks within {deadline_s} s "
                               "(POST /v1/producer/batch); is it a producer, and does it have free blocks?")

    # ---- the scheduler thread: never waits on anything but this object's lock -----------------------

    def take(self, n_blocks: int) -> Bound | None:
        """``n_blocks`` blocks and a slot from one usable grant, or None (then the request gets no params)."""
        now = self._clock()
        with self._lock:
            for g in self._grants:
                if g.dead or now >= g.retire_at or len(g.blocks) < n_blocks or (self._verify and not g.leases):
                    continue
                pop = g.blocks.popleft
                blocks = []
                for _ in range(n_blocks):  # not a comprehension: on Python 3.11 that is one more function call
                    blocks.append(pop())
                slot, nonce = g.leases.popleft() if self._verify else (None, None)
                g.outstanding += 1
                if self._running_low(g):
                    self._cond.notify()
                return Bound(g, blocks, slot, nonce)
            self.stats.no_credit += 1
            self._short = max(self._short, n_blocks)
            self._cond.notify()
        return None

    def usable(self, bound: Bound) -> bool:
        """Whether params for ``bound`` may still be handed out: its grant is alive for the commit to reach P."""
        return not bound.grant.dead and self._clock() < bound.grant.valid_until - _HAND_OUT_MARGIN_S

    def give_back(self, bound: Bound) -> None:
        """A request that hands out no params: its blocks and slot serve another request."""
        with self._lock:
            g = bound.grant
            g.blocks.extendleft(reversed(bound.blocks))
            if bound.slot is not None:
                g.leases.appendleft((bound.slot, bound.nonce))
            g.outstanding -= 1

    def params(self, bound: Bound, pd_id: str, num_tokens: int) -> dict[str, Any]:
        """The kv_transfer_params P will export at the commit, built here from the grant's template."""
        p = dict(bound.grant.template)
        p["remote_request_id"] = pd_id
        p["remote_block_ids"] = [list(bound.blocks)]
        p["remote_num_tokens"] = num_tokens
        if bound.slot is not None:
            p["remote_lease_slot"] = bound.slot
            p["remote_lease_nonce"] = bound.nonce
        return p

    def commit(self, bound: Bound, pd_id: str, num_tokens: int) -> None:
        item = {"grant_id": bound.grant.id, "request_id": pd_id, "num_tokens": num_tokens,
                "block_ids": list(bound.blocks)}
        if bound.slot is not None:
            item["lease_slot"], item["lease_nonce"] = bound.slot, bound.nonce
        with self._lock:
            bound.grant.outstanding -= 1
            self._commits.append(item)
            self._wake_unless_polling()

    def abort(self, pd_id: str) -> None:
        with self._lock:
            self._aborts.append(pd_id)
            self._wake_unless_polling()

    def _wake_unless_polling(self) -> None:
        """Called with the lock held after queueing work: a polling control thread finds it within _POLL_S."""
        if not self._polling:
            self._cond.notify()

    @property
    def polling(self) -> bool:
        """Whether the control thread finds queued commits by itself (the engine is committing)."""
        with self._cond:
            return self._polling

    def _running_low(self, taken_from: Grant) -> bool:
        """_needs_credit after a take from ``taken_from``, without summing over every grant while that grant alone
        is not short (the usable grants together hold at least as much; with cold caches the sums are about half of
        a take)."""
        return self._short_of(len(taken_from.blocks), len(taken_from.leases)) and self._needs_credit()

    # ---- the control thread -------------------------------------------------------------------------

    def _needs_credit(self) -> bool:
        now = self._clock()
        usable = [g for g in self._grants if not g.dead and now < g.retire_at]
        blocks = sum(len(g.blocks) for g in usable)
        leases = sum(len(g.leases) for g in usable)
        return not self._asking and now >= self._next_ask_at and self._short_of(blocks, leases)

    def _short_of(self, blocks: int, leases: int) -> bool:
        """Whether this much credit calls for more: at most half the target left, or a request found too little."""
        return (blocks < self._target_blocks // 2 + 1 or self._short > 0
                or (self._verify and leases < self._target_leases // 2 + 1))

    def _run(self) -> None:
        name_current_thread("pd-control")
        while True:
            with self._cond:
                while not (self._stopping or self._commits or self._aborts or self._returns or self._withdraw
                           or self._needs_credit()):
                    now = self._clock()
                    self._polling = now - self._last_work_at < _DOZE_AFTER_S
                    # short of credit and backing off: wake when P may be asked again, not a second later
                    backoff = self._next_ask_at - now
                    timeout = min(1.0, backoff) if backoff > 0 else 1.0
                    self._cond.wait(timeout=min(_POLL_S, timeout) if self._polling else timeout)
                    self._retire()
                self._retire()
                if self._commits or self._aborts:
                    self._last_work_at = self._clock()
                    self._polling = True  # commits queued during this round trip are found after it
                if self._stopping and not (self._commits or self._aborts):
                    return
                body: dict[str, Any] = {"commits": self._commits, "aborts": self._aborts, "returns": self._returns}
                if self._withdraw:
                    body["withdraw"] = self._withdraw
                self._commits, self._aborts, self._returns, self._withdraw = [], [], [], []
                ask = not self._stopping and self._needs_credit()
                if ask:
                    now = self._clock()
                    usable = [g for g in self._grants if not g.dead and now < g.retire_at]
                    body["grant"] = {
                        "blocks": max(self._short, self._target_blocks - sum(len(g.blocks) for g in usable)),
                        "leases": max(0, self._target_leases - sum(len(g.leases) for g in usable))}
                    current = self._current
                    if current is not None and not current.dead and now < current.retire_at:
                        body["grant"]["extend"] = current.id
                    else:
                        body["grant"]["ask_id"] = f"{self._ask_prefix}.{next(self._ask_numbers)}"
                    self._asking = True
            self._send(body, ask)

    def _send(self, body: dict[str, Any], asked: bool) -> None:
        sent_at = self._clock()
        try:
            answer = self._client.batch(body)
        except PdError as e:
            log.warning("pd-connector batch failed (%s); %d commits and %d aborts are sent again with the next "
                        "batch", e, len(body["commits"]), len(body["aborts"]))
            with self._cond:
                self._commits[:0] = body["commits"]
                self._resent.update(c["request_id"] for c in body["commits"])
                self._aborts[:0] = body["aborts"]
                self._returns[:0] = body["returns"]
                self._withdraw[:0] = body.get("withdraw", [])
                if asked:
                    self._lost_grant_answer(body["grant"])
                self._asking = False
            time.sleep(0.2)  # the service is down or restarting: do not spin
            return
        took_ms = 1000 * (self._clock() - sent_at)
        self.stats.batches += 1
        if len(self.stats.batch_ms) < 100_000:
            self.stats.batch_ms.append(took_ms)
        log.log(self._timing_level, "pd-connector batch: %d commits, %d aborts, %d returns, grant %s: %.2f ms",
                len(body["commits"]), len(body["aborts"]), len(body["returns"]), asked, took_ms)
        with self._cond:
            if asked:
                self._asking = False
                self._short = 0
                g = answer.get("grant")
                if g is not None:
                    self._add_grant(g, sent_at)
                elif answer.get("grant_refused"):
                    refused = answer["grant_refused"]
                    log.info("pd-connector refused the grant (%s); the next one is a new grant", refused.get("detail"))
                    self._current = None
                    if refused.get("reason") == "ask-id-used" and "ask_id" in body["grant"]:
                        self._queue_withdrawal(body["grant"]["ask_id"])  # it reached P twice: the first answer is lost
                if g is None or len(g["block_ids"]) < body["grant"]["blocks"]:
                    self._next_ask_at = self._clock() + 0.25  # P is short of free blocks: ask again later
            for result in answer.get("commits") or ():
                resent = result.get("id") in self._resent
                self._resent.discard(result.get("id"))
                if result.get("status") != 200:
                    self._refused(result, body, resent)
            self._withdrawn(body.get("withdraw", []), answer)
            for result in answer.get("aborts") or ():
                if result.get("status") not in (204, 404):
                    log.warning("abort of %s: %s %s", result.get("id"), result.get("reason"), result.get("detail"))

    def _lost_grant_answer(self, ask: dict[str, Any]) -> None:
        """Called with the lock held: P may have granted what the plugin never heard of, and may still."""
        if "ask_id" in ask:
            self._queue_withdrawal(ask["ask_id"])
            return
        extended = next((g for g in self._grants if g.id == ask.get("extend")), None)
        if extended is not None:
            extended.retire_at = min(extended.retire_at, self._clock())  # returned once no request holds a share
        self._current = None
        log.warning("the answer to extending grant %s was lost; it is returned once no request holds a share of it, "
                    "which gives back what P may have added", ask.get("extend"))

    def _queue_withdrawal(self, ask_id: str) -> None:
        """Called with the lock held."""
        self._withdraw.append(ask_id)
        if len(self._withdraw) > _MAX_WITHDRAW:
            dropped = self._withdraw[:-_MAX_WITHDRAW]
            del self._withdraw[:-_MAX_WITHDRAW]
            log.warning("asks %s are not withdrawn (more than %d wait): a grant they made expires by itself",
                        dropped, _MAX_WITHDRAW)

    def _withdrawn(self, sent: list[str], answer: dict[str, Any]) -> None:
        if not sent:
            return
        results = answer.get("withdrawn")
        if results is None:
            if not self._withdraw_unread_warned:
                self._withdraw_unread_warned = True
                log.warning("this pd-connector does not read withdrawals (it is older than the plugin): a grant "
                            "whose answer was lost (asks %s) holds P's blocks until it expires", sent)
            return
        for result in results:
            if result.get("status") == 204:
                log.warning("the grant of ask %s, whose answer was lost, is given back", result.get("id"))
            elif result.get("status") != 404:
                log.warning("withdrawal of ask %s: %s %s %s", result.get("id"), result.get("status"),
                            result.get("reason"), result.get("detail"))

    def _add_grant(self, g: dict[str, Any], sent_at: float) -> None:
        extended = next((x for x in self._grants if x.id == str(g["grant_id"])), None)
        if extended is not None:  # what was added to the grant being topped up
            extended.blocks.extend(int(b) for b in g["block_ids"])
            extended.leases.extend((int(x["slot"]), int(x["nonce"])) for x in g["leases"])
            return
        ttl = float(g["expires_in_ms"]) / 1000.0
        grant = Grant(str(g["grant_id"]), deque(int(b) for b in g["block_ids"]),
                      deque((int(x["slot"]), int(x["nonce"])) for x in g["leases"]),
                      [(r.get("kv_file"), int(r["region_bytes"])) for r in g["ranks"]], dict(g["params_template"]),
                      retire_at=sent_at + ttl / 2, valid_until=sent_at + ttl)
        if not grant.blocks or (self._verify and not grant.leases):
            self._returns.append(grant.id)  # too little was free to bind any request: nothing to hold
            return
        self._grants.insert(0, grant)  # take() looks at the grant being topped up first
        self._current = grant
        self._first_grant.set()

    def _refused(self, result: dict[str, Any], body: dict[str, Any], resent: bool) -> None:
        # P words a commit to a grant it no longer holds "grant <id> is unknown" or "... is closed ..."
        grant_closed = result.get("reason") == "wrong-state" and str(result.get("detail")).startswith("grant ")
        if resent and not grant_closed:
            log.warning("P request %s: its commit, sent again after a batch without answer, was refused (%s: %s): "
                        "P applied it the first time", result.get("id"), result.get("reason"), result.get("detail"))
            return
        self.stats.commits_refused += 1
        log.error("P request %s: pd-connector refused its commit (%s: %s); the decoder's pull of it is declined",
                  result.get("id"), result.get("reason"), result.get("detail"))
        if grant_closed:
            grant_id = next((c["grant_id"] for c in body["commits"] if c["request_id"] == result.get("id")), None)
            for g in self._grants:
                if g.id == grant_id:
                    g.dead = True

    def _retire(self) -> None:
        """Grants past the first half of their life, or dead, go back once no request holds a share."""
        now = self._clock()
        for g in list(self._grants):
            if (g.dead or now >= g.retire_at) and g.outstanding == 0:
                self._grants.remove(g)
                self._returns.append(g.id)

    def alive(self) -> bool:
        return self._thread.is_alive()

    def close(self, deadline_s: float) -> None:
        """Sends what is queued, gives every grant back, and stops the thread (bounded by ``deadline_s``)."""
        with self._cond:
            self._returns.extend(g.id for g in self._grants)
            self._grants = []
            self._stopping = True
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join(deadline_s)
        with self._cond:
            leftover, withdraw = self._returns, self._withdraw
            self._returns, self._withdraw = [], []
        if leftover or withdraw:
            try:
                self._client.batch({"commits": [], "aborts": [], "returns": leftover, "withdraw": withdraw})
            except PdError as e:
                log.warning("grants %s and the grants of asks %s not given back (%s); pd-connector takes them back "
                            "at their expiry", leftover, withdraw, e)
