"""D's loads: each pull of P's KV, the copy from where D's pd-connector received it into vLLM's blocks, the
release, and the report to vLLM, on a bounded pool of threads (a pull blocks on pd-connector for as long as the
transfer and the lease check take).

Every TP worker asks for the pull with its rank and joins the one pull D's pd-connector runs for the request;
each copies its rank's blocks and releases its rank (D frees the blocks once every rank did). Where the pull
names its blocks' epoch, the copy checks the epochs in D's file after it (still the pull's: no later pull had
them meanwhile), so the load is reported first and released after; otherwise the release comes first and the
report after.

Over an engine socket that reads op pulls (``pull-batch``) an engine step's loads and releases go as one
request: the step's pulls in one frame, each copied as its reply comes, then one frame with the releases the
batch owes (a lone load too: two runs of bench/d_load_bench.py found it neither quicker nor slower than one
call each way). Otherwise each load is a task of its own, one call per pull and release.
"""

from __future__ import annotations

import logging
import platform
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from .client import PdClient, PdError
from .kv_places import FileKv, PoolKv
from .layout import PdGeometry
from .osthread import name_current_thread
from .specs import LoadSpec

log = logging.getLogger("vllm.pd_connector")
_LOADS_IN_ORDER = platform.machine() in ("x86_64", "AMD64")
MAX_BATCH_PULLS = 32       # pulls in one request; pd-connector takes up to 64
# Their prompts' tokens: a request's copies run one after another on its load thread, so long prompts spread
# over the load threads (4,096-token prompts go four to a request) while short ones share one request.
MAX_BATCH_TOKENS = 16 * 1024


@dataclass
class LoadResults:
    finished: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)  # request id -> reason


@dataclass
class _Pulled:
    """What a pull's reply left to do: ``reason`` None when the KV is in vLLM's blocks; ``release`` "first" when
    only a release that succeeds vouches for the copy (reported after it), "after" when the release waits on
    nothing, None when nothing is held on D."""
    reason: str | None
    release: str | None
    timing: Callable[[float | None], None] | None = None  # logs the load's timing line, given when released


class PdLoader:
    """The loads of one TP worker: ``place()`` gives where its rank's blocks are (a FileKv or PoolKv)."""

    def __init__(self, client: PdClient, rank: int, tp_size: int, load_threads: int, timing_level: int,
                 place: Callable[[], tuple[PdGeometry, FileKv | PoolKv]], log_kv_digest: bool = False):
        self._client = client
        self._rank = rank
        self._tp = tp_size
        self._place = place
        self._log_kv_digest = log_kv_digest
        self._timing_level = timing_level
        self._pool = ThreadPoolExecutor(max_workers=load_threads, thread_name_prefix="pd-load",
                                        initializer=name_current_thread, initargs=("pd-load",))
        self._lock = threading.Lock()
        self._results = LoadResults()
        self._batches = False
        # request id -> what its copy must come after on vLLM's stream (BlockCopier.engine_order), set on vLLM's
        # thread before the load is submitted, taken by the load's copy or its report
        self._order: dict[str, object] = {}

    def batch(self, batches: bool) -> None:
        """Whether a step's pulls and releases go as one request each (the channel reads op pulls)."""
        self._batches = batches

    def start(self, loads: list[LoadSpec], releases: list[LoadSpec], after: object | None = None) -> None:
        """Submits the step's loads and release-only pulls; each load's copy comes after ``after``, vLLM's
        engine order of this step (None: nothing to order, a CPU cache)."""
        if after is not None:
            for spec in loads:
                self._order[spec.request_id] = after
        if self._batches:
            for chunk in _chunks([(s, True) for s in loads] + [(s, False) for s in releases]):
                self._pool.submit(self._batch, chunk)
            return
        for spec in loads:
            self._pool.submit(self._load, spec)
        for spec in releases:
            self._pool.submit(self._release_only, spec)

    def take_results(self) -> LoadResults:
        with self._lock:
            results, self._results = self._results, LoadResults()
        return results

    def shutdown(self) -> None:
        """Waits for loads under way (each call has its deadline) and drops queued ones."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    # ---- one load, one call each ------------------------------------------------------------------

    def _load(self, spec: LoadSpec) -> None:
        t0 = time.perf_counter()
        try:
            pulled, error = self._client.pull(spec.pd_request_id, spec.token_ids, spec.params, self._rank), None
        except PdError as e:
            pulled, error = None, e
        except Exception as e:  # noqa: BLE001 - a load that breaks fails its request, never the engine
            log.exception("D request %s: load failed", spec.request_id)
            self._report(spec.request_id, f"plugin-error: {e}")
            return
        done = self._after_pull(spec, error, pulled, t0)
        if done.release == "first":
            done.reason = _released_reason(spec, self._release_error(spec))
            if done.reason is None and done.timing:
                done.timing(time.perf_counter())
        elif done.reason is None and done.timing:
            done.timing(None)
        self._report(spec.request_id, done.reason)
        if done.release == "after":  # a self-checked load: D frees the blocks now rather than at retention
            self._release(spec)

    def _release_only(self, spec: LoadSpec) -> None:
        """Pull and drop: P learns its KV was read and frees it now rather than at lease expiry."""
        try:
            self._client.pull(spec.pd_request_id, spec.token_ids, spec.params, self._rank)
            self._client.release(spec.pd_request_id, self._rank)
        except PdError as e:
            log.info("release of %s's remote KV: %s", spec.request_id, e)

    def _release_error(self, spec: LoadSpec) -> PdError | None:
        try:
            self._client.release(spec.pd_request_id, self._rank)
            return None
        except PdError as e:
            return e

    def _release(self, spec: LoadSpec) -> None:
        _log_unneeded_release(spec, self._release_error(spec))

    # ---- a step's loads in one request each way ----------------------------------------------------

    def _batch(self, items: list[tuple[LoadSpec, bool]]) -> None:
        """The pulls of ``items`` (a load, or a release-only pull when False) in one request, each load copied
        and, where its epochs vouch for it, reported as its reply comes; then one request with every release."""
        t0 = time.perf_counter()
        owed: list[LoadSpec] = []                       # releases nothing waits for
        vouching: list[tuple[LoadSpec, _Pulled]] = []   # loads reported once their release succeeded
        answered: set[int] = set()

        def on_reply(i: int, error: PdError | None, pulled: dict | None) -> None:
            answered.add(i)
            try:
                handle(i, error, pulled)
            except Exception as e:  # noqa: BLE001 - the rest of the replies are still to be read
                log.exception("D request %s: load failed", items[i][0].request_id)
                self._report(items[i][0].request_id, f"plugin-error: {e}")

        def handle(i: int, error: PdError | None, pulled: dict | None) -> None:
            spec, is_load = items[i]
            if not is_load:
                if error is None or error.status == 0:
                    owed.append(spec)
                else:
                    log.info("release of %s's remote KV: %s", spec.request_id, error)
                return
            done = self._after_pull(spec, error, pulled, t0)
            if done.release == "first":
                vouching.append((spec, done))
                return
            if done.reason is None and done.timing:
                done.timing(None)
            self._report(spec.request_id, done.reason)
            if done.release == "after":
                owed.append(spec)

        try:
            self._client.pulls([(s.pd_request_id, s.token_ids, s.params, self._rank) for s, _ in items], on_reply)
        except Exception as e:  # noqa: BLE001 - every load is reported, or vLLM waits for it forever
            log.exception("D: a step's pulls failed")
            for i in set(range(len(items))) - answered:
                on_reply(i, PdError(0, "plugin-error", f"the step's pulls failed: {e}"), None)
        finally:
            self._release_batch(owed, vouching)

    def _release_batch(self, owed: list[LoadSpec], vouching: list[tuple[LoadSpec, _Pulled]]) -> None:
        specs = owed + [s for s, _ in vouching]
        if not specs:
            return
        try:
            errors = self._client.releases([(s.pd_request_id, self._rank) for s in specs])
        except PdError as e:
            errors = [e] * len(specs)
        except Exception as e:  # noqa: BLE001 - every vouched load is still reported, or vLLM waits for it forever
            log.exception("D: a step's releases failed")
            errors = [PdError(0, "plugin-error", f"the step's releases failed: {e}")] * len(specs)
        t_released = time.perf_counter()
        for spec, error in zip(owed, errors):
            _log_unneeded_release(spec, error)
        for (spec, done), error in zip(vouching, errors[len(owed):]):
            reason = done.reason or _released_reason(spec, error)
            if reason is None and done.timing:
                done.timing(t_released)
            self._report(spec.request_id, reason)

    # ---- both ---------------------------------------------------------------------------------------

    def _after_pull(self, spec: LoadSpec, error: PdError | None, pulled: dict | None, t0: float) -> _Pulled:
        """The copy of a pull's reply into vLLM's blocks, never raising: what is left to do."""
        if error is not None:
            log.warning("D request %s: pull declined or failed: %s", spec.request_id, error)
            # no answer, or D's wait for it ran out (a rank that joined a shared pull does not abort it): the pull
            # may still be held on D's pd-connector
            held = error.status == 0 or error.reason == "deadline-exceeded"
            return _Pulled(error.reason, "after" if held else None)
        t_pulled = time.perf_counter()
        epoch = _self_checking_epoch(pulled)
        try:
            reason, copied = self._copy(spec, pulled, epoch)
        except Exception as e:  # noqa: BLE001 - a load that breaks fails its request, never the engine
            log.exception("D request %s: load failed", spec.request_id)
            return _Pulled(f"plugin-error: {e}", "after")
        if reason is not None:
            return _Pulled(reason, "after")
        t_copied = time.perf_counter()

        def timing(t_released: float | None) -> None:
            try:
                self._log_load(spec, pulled, copied, t0, t_pulled, t_copied, t_released)
            except Exception:  # noqa: BLE001 - a timing line that breaks (a pull_ms that is no number) fails no load
                log.exception("D request %s: its timing line failed", spec.request_id)
        return _Pulled(None, "after" if epoch is not None else "first", timing)

    def _copy(self, spec: LoadSpec, pulled: dict, epoch: int | None) -> tuple[str | None, tuple]:
        """Copies this rank's pulled blocks ``first_pd_block..`` from D's KV file or VRAM pool into
        ``spec.vllm_blocks``, checking their ``epoch`` after the copy when given. (None, (pd blocks, bytes)) when
        done, else (the reason, ()) and the bytes in vLLM's blocks are not the pull's."""
        g, kv = self._place()
        ranks = pulled.get("ranks") if isinstance(pulled, dict) else None
        if not isinstance(ranks, list) or len(ranks) != self._tp:
            return (f"bad-answer: the pull reply names {len(ranks) if isinstance(ranks, list) else 'no'} ranks' "
                    f"KV files, vLLM runs TP {self._tp} (pd-connector too old to share D's KV file?)"), ()
        rank = ranks[self._rank]
        path, region_bytes = rank.get("kv_file"), rank.get("region_bytes")
        if int(pulled.get("block_bytes", g.block_bytes)) != g.block_bytes:
            return f"bad-answer: block_bytes {pulled.get('block_bytes')}, the layout said {g.block_bytes}", ()
        block_ids = pulled.get("block_ids") or []
        n_total = -(-len(spec.token_ids) // g.block_tokens)
        if len(block_ids) != n_total:
            return f"bad-blocks: {len(block_ids)} pulled blocks for {len(spec.token_ids)} tokens ({n_total} blocks)", ()
        end = spec.first_pd_block + len(spec.vllm_blocks)
        if end > n_total:
            return f"bad-blocks: vLLM asks for pd blocks up to {end}, P sent {n_total}", ()
        pd_blocks = [int(b) for b in block_ids[spec.first_pd_block:end]]
        after = self._order.pop(spec.request_id, None)
        reason = kv.load(path, region_bytes, pd_blocks, spec.vllm_blocks, epoch, after, spec.group_blocks)
        if reason is not None:
            return reason, ()
        if self._log_kv_digest and spec.first_pd_block == 0:   # the whole prompt's KV, as P saved it
            log.info("KV digest: D rank %d loaded %s: %s", self._rank, spec.pd_request_id,
                     kv.digest(spec.vllm_blocks, spec.group_blocks))
        return None, (pd_blocks, len(pd_blocks) * g.block_bytes)

    def _report(self, request_id: str, reason: str | None) -> None:
        self._order.pop(request_id, None)  # a load that failed before its copy
        with self._lock:
            self._results.finished.add(request_id)
            if reason is not None:
                self._results.failed[request_id] = reason

    def _log_load(self, spec: LoadSpec, pulled: dict, copied: tuple, t0: float, t_pulled: float, t_copied: float,
                  t_released: float | None) -> None:
        if not log.isEnabledFor(self._timing_level):
            return
        timings = (pulled or {}).get("timings") or {}
        release = "after the load" if t_released is None else "%.2f ms" % (1000 * (t_released - t_copied))
        log.log(self._timing_level, "D loaded %s: pd blocks %s -> vLLM blocks %s, %d bytes; pull %.2f ms "
                "(pd-connector's own %.2f ms: %s), copy %.2f ms, release %s", spec.request_id,
                copied[0], spec.vllm_blocks, copied[1], 1000 * (t_pulled - t0),
                float(timings.get("pull_ms", -1)), _phases(timings), 1000 * (t_copied - t_pulled), release)


def _released_reason(spec: LoadSpec, error: PdError | None) -> str | None:
    """A copy that only its release vouches for: None once D freed the pull, else why it cannot be trusted
    (a 404: pd.consumer.retention passed, or D's pd-connector restarted, and the blocks may hold other KV)."""
    if error is None:
        return None
    if error.status == 404:
        log.warning("D request %s: the pull was released before its copy ended (pd.consumer.retention "
                    "passed, or D's pd-connector restarted); its blocks may hold other KV", spec.request_id)
        return "kv-released-early"
    log.warning("D request %s: release failed, the copied KV is not trusted: %s", spec.request_id, error)
    return f"release-failed: {error.reason}"


def _log_unneeded_release(spec: LoadSpec, error: PdError | None) -> None:
    """A release nothing depends on (a failed load's, a self-checked load's): a 404 means D freed the pull
    already; any other failure leaves the blocks to pd.consumer.retention."""
    if error is not None and error.status != 404:
        log.warning("release of %s failed: %s", spec.pd_request_id, error)


def _chunks(items: list[tuple[LoadSpec, bool]]) -> list[list[tuple[LoadSpec, bool]]]:
    """A step's pulls in requests of at most MAX_BATCH_PULLS pulls and MAX_BATCH_TOKENS tokens (a longer prompt
    alone)."""
    chunks: list[list[tuple[LoadSpec, bool]]] = []
    tokens = 0
    for item in items:
        n = len(item[0].token_ids)
        if not chunks or len(chunks[-1]) >= MAX_BATCH_PULLS or tokens + n > MAX_BATCH_TOKENS:
            chunks.append([])
            tokens = 0
        chunks[-1].append(item)
        tokens += n
    return chunks


def _self_checking_epoch(pulled: dict) -> int | None:
    """The pull's ``blocks_epoch`` if the copy may check it instead of waiting for the release: on x86-64 only,
    whose loads are not reordered with older loads (elsewhere the epoch could be read ahead of the copy's
    last bytes); None when D's pd-connector names none (anonymous memory, VRAM pools, older versions)."""
    epoch = pulled.get("blocks_epoch") if isinstance(pulled, dict) else None
    usable = isinstance(epoch, int) and not isinstance(epoch, bool) and epoch > 0
    return epoch if usable and _LOADS_IN_ORDER else None


def _phases(timings: dict) -> str:
    """pd-connector's own phases of the pull, e.g. ``read 0.41 slot_check 0.12`` (ms), pull_ms left out."""
    return " ".join(f"{k[:-3]} {float(v):.2f}" for k, v in timings.items()
                    if k != "pull_ms" and k.endswith("_ms") and isinstance(v, (int, float))) or "none"
