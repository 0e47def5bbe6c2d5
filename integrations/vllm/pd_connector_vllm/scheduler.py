"""Scheduler side of the plugin: which requests take granted blocks, save and commit (P), and load (D).

Plain Python over duck-typed vLLM objects (``request.request_id``, ``.prompt_token_ids``,
``.num_prompt_tokens``, ``.num_computed_tokens``, ``.kv_transfer_params``, ``.status``), so its
decisions are unit-tested without an engine. Nothing here waits on the network: P's calls go through
``control.PdControl`` (local credit, a background thread), D's through the worker's load threads. Each
request's time on the scheduler thread is measured (``sched_ms`` in its timing line).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .control import Bound, PdControl
from .params import params_for_pull, pd_request_id, wants_remote_decode, wants_remote_prefill
from .specs import LoadSpec, SaveSpec, StepPlan

log = logging.getLogger("vllm.pd_connector")

# vLLM's RequestStatus names of a request that ended normally (its prefill ran to the end).
FINISHED_NORMALLY = ("FINISHED_STOPPED", "FINISHED_LENGTH_CAPPED")


@dataclass(slots=True)
class _Produced:
    """A P request from its first allocation to request_finished."""

    request: Any
    pd_id: str
    planned: bool = False
    bound: Bound | None = None
    waiting_since: float = 0.0
    # its time on the scheduler thread, by hook: its share of the grant, the allocation, the plan of each step that
    # scheduled it (its own take, and an even part of the rest of that step's plan), the finish
    share_ns: int = 0
    alloc_ns: int = 0
    plan_ns: int = 0


class PdScheduler:
    """``control`` is None when the pd-connector beside this instance is not a producer: then a P request
    gets no params (its decoder prefills itself) and that is said once."""

    def __init__(self, control: PdControl | None, block_size: int, timing_level: int = logging.DEBUG,
                 credit_wait_s: float = 10.0, clock=time.monotonic, windows: Sequence[int] | None = None):
        """``windows``: with several KV cache groups, how many of a request's last blocks each group keeps (a
        sliding-window group: its window's, 0 for a group that keeps all); block ids then come per group."""
        self._control = control
        self._windows = list(windows) if windows else None
        self._full_group = self._windows.index(0) if self._windows and 0 in self._windows else 0
        self._credit_wait_s = credit_wait_s
        self._clock = clock
        self._timing_level = timing_level
        self._block_size = block_size
        self._producing: dict[str, _Produced] = {}
        self._plan = StepPlan()
        self._warned_no_producer = False

    @property
    def grouped(self) -> bool:
        """Whether block ids come per KV cache group (several groups, or a window)."""
        return self._windows is not None

    @property
    def full_group(self) -> int:
        """The KV cache group that keeps every block of a request (with one group, that one)."""
        return self._full_group

    # ---- D: what to load ----------------------------------------------------------------------

    def get_num_new_matched_tokens(self, request: Any, num_computed_tokens: int) -> tuple[int | None, bool]:
        """D: all prompt tokens not computed locally load asynchronously, as vLLM's NIXL connector does; vLLM
        recomputes the last one to sample from it. P: the request takes its share of the grant (blocks and a
        slot) before it is scheduled; while the grant is short of it (P's blocks still held by leases that
        are ending) the answer is None, which makes vLLM keep the request waiting and ask again next step,
        up to ``credit_wait_s``, after which it runs without params (its decoder prefills it)."""
        if wants_remote_decode(request.kv_transfer_params):
            start = time.perf_counter_ns()
            produced = self._producing.get(request.request_id) or self._track(request)
            ready = self._share_for(produced)
            produced.share_ns += time.perf_counter_ns() - start
            return (0, False) if ready else (None, False)
        if not wants_remote_prefill(request.kv_transfer_params):
            return 0, False
        count = len(request.prompt_token_ids or ()) - num_computed_tokens
        return (count, True) if count > 0 else (0, False)

    def _track(self, request: Any) -> _Produced:
        """A P request's record, from the first hook that sees it to request_finished."""
        produced = _Produced(request, pd_request_id(request.request_id), waiting_since=self._clock())
        self._producing[request.request_id] = produced
        return produced

    def _share_for(self, produced: _Produced) -> bool:
        """Whether the P request may be scheduled now: it holds its share of a grant, or it waited long enough."""
        request = produced.request
        if produced.bound is not None or self._control is None or produced.planned:
            return True
        n_blocks = -(-request.num_prompt_tokens // self._block_size)
        produced.bound = self._control.take(n_blocks)
        if produced.bound is not None:
            return True
        if self._clock() - produced.waiting_since >= self._credit_wait_s:
            log.warning("P request %s: no granted pd-connector blocks for %d blocks within %.1f s; it runs without "
                        "kv_transfer_params and its decoder prefills it", request.request_id, n_blocks,
                        self._credit_wait_s)
            produced.planned = True  # runs without a share; never asks again
            return True
        return False

    def update_state_after_alloc(self, request: Any, block_ids: list[int], unhashed_block_ids: list[int],
                                 num_external_tokens: int, group_unhashed: Sequence[list[int]] = ()) -> None:
        """D: ``block_ids`` and ``unhashed_block_ids`` of the group that keeps every block; with several groups,
        ``group_unhashed`` each group's unhashed blocks that are not vLLM's null block (a window group's older
        blocks are), in order."""
        params = request.kv_transfer_params
        if wants_remote_decode(params):
            self.produce_allocated(request)
            return
        if not wants_remote_prefill(params):
            return
        spec = LoadSpec(request.request_id, pd_request_id(request.request_id),
                        list(request.prompt_token_ids or ()), params_for_pull(params))
        if num_external_tokens > 0:
            spec.vllm_blocks = list(unhashed_block_ids)
            spec.first_pd_block = len(block_ids) - len(unhashed_block_ids)
            if self._windows:
                spec.group_blocks = self._clip(group_unhashed)
            self._plan.loads.append(spec)
        else:
            self._plan.releases.append(spec)
        params["do_remote_prefill"] = False  # one pull per request, also after a preemption

    def produce_allocated(self, request: Any) -> None:
        """P: vLLM allocated a ``do_remote_decode`` request's blocks; their ids are read at the step's plan, not
        here (the connector calls this directly for such a request, without reading them)."""
        start = time.perf_counter_ns()
        # vLLM asks for the share first; were it not to, the request is tracked from here
        produced = self._producing.get(request.request_id) or self._track(request)
        produced.alloc_ns += time.perf_counter_ns() - start

    # ---- P: when to take granted blocks and save ------------------------------------------------

    def build_plan(self, num_scheduled_tokens: dict[str, int],
                   block_ids_of: Callable[[str], list[int] | tuple[list[int], ...]]) -> StepPlan:
        """The step's saves (P requests whose prompt's last token is computed in this step: they take
        granted blocks now, and the worker copies into them after this step's forward), loads and
        releases; clears them for the next step.

        The plan's time is the P requests': each take is its own request's, and the rest of the step's plan (the
        walk over the requests in flight) is shared evenly by the P requests this step schedules."""
        start = time.perf_counter_ns()
        in_step: list[_Produced] = []
        taken_ns = 0
        for req_id, produced in self._producing.items():
            scheduled = num_scheduled_tokens.get(req_id)
            if scheduled is None or produced.planned:
                continue
            in_step.append(produced)
            req = produced.request
            if req.num_computed_tokens + scheduled < req.num_prompt_tokens:
                continue
            take_start = time.perf_counter_ns()
            spec = self._take(produced, block_ids_of(req_id))
            if spec is not None:
                self._plan.saves.append(spec)
            take_ns = time.perf_counter_ns() - take_start
            produced.plan_ns += take_ns
            taken_ns += take_ns
        plan, self._plan = self._plan, StepPlan()
        if in_step:
            each = (time.perf_counter_ns() - start - taken_ns) // len(in_step)
            for produced in in_step:
                produced.plan_ns += each
        return plan

    def _clip(self, groups: Sequence[list[int]]) -> list[list[int]]:
        """Each group's blocks, a window group's cut to the last ones its window needs (as vLLM's NIXL
        connector cuts them: the window's blocks and one more, for a window not aligned to blocks)."""
        if len(groups) != len(self._windows):
            raise ValueError(f"{len(groups)} KV cache groups' blocks, the model has {len(self._windows)}")
        return [list(blocks[-keep:]) if keep else list(blocks) for blocks, keep in zip(groups, self._windows)]

    def _take(self, produced: _Produced, block_ids: list[int] | tuple[list[int], ...]) -> SaveSpec | None:
        """``block_ids``: the request's vLLM blocks, per group when there are several (vLLM's null block as -1)."""
        groups = None
        if self._windows:
            groups, block_ids = block_ids, block_ids[self._full_group]
        vllm_blocks = block_ids
        req = produced.request
        produced.planned = True  # once, whatever the answer: a request without credit is not retried
        if self._control is None:
            if not self._warned_no_producer:
                log.warning("the pd-connector beside this instance is not a producer: P requests get no "
                            "kv_transfer_params and their decoders prefill them")
                self._warned_no_producer = True
            return None
        num_tokens = req.num_prompt_tokens
        n_blocks = -(-num_tokens // self._block_size)
        if len(vllm_blocks) < n_blocks:
            log.error("P request %s: %d tokens need %d blocks, vLLM holds %d; not exported",
                      req.request_id, num_tokens, n_blocks, len(vllm_blocks))
            return None
        bound = produced.bound
        if bound is not None and (len(bound.blocks) != n_blocks or not self._control.usable(bound)):
            self._control.give_back(bound)  # not for this prompt, or too late in its grant's life to write into
            bound = None
        if bound is None:
            bound = self._control.take(n_blocks)
        produced.bound = bound
        if bound is None:
            log.warning("P request %s: no granted pd-connector blocks free for %d blocks; the decoder gets no "
                        "kv_transfer_params and prefills itself", req.request_id, n_blocks)
            return None
        spec = SaveSpec(req.request_id, produced.pd_id, vllm_blocks[:n_blocks], list(bound.blocks), num_tokens,
                        list(bound.grant.rank_files), bound.grant.id)
        if groups is not None:
            spec.group_blocks = self._clip([[b for b in g[:n_blocks] if b >= 0] for g in groups])
        return spec

    # ---- both: the end of a request ------------------------------------------------------------

    def request_finished(self, request: Any) -> tuple[bool, dict[str, Any] | None]:
        """P: the worker copied the KV in the step that completed the prompt; hand out the params built
        from the grant and queue the commit (vLLM frees its own blocks at once, pd-connector holds the
        copy). Aborted, unfinished or too late in its grant's life: the blocks and slot go back to the
        credit. D: a request that ended before its load was planned still releases P's lease."""
        start = time.perf_counter_ns()
        produced = self._producing.pop(request.request_id, None)
        if produced is not None:
            params = self._finish(produced, request)
            finish_ns = time.perf_counter_ns() - start
            if log.isEnabledFor(self._timing_level):
                log.log(self._timing_level, "P request %s: %s, sched %.3f ms (share %.3f, alloc %.3f, plan %.3f, "
                        "finish %.3f)", request.request_id,
                        "params handed out, commit queued" if params else "no params",
                        (produced.share_ns + produced.alloc_ns + produced.plan_ns + finish_ns) / 1e6,
                        produced.share_ns / 1e6, produced.alloc_ns / 1e6, produced.plan_ns / 1e6, finish_ns / 1e6)
            return False, params
        if wants_remote_prefill(request.kv_transfer_params):
            self._plan.releases.append(LoadSpec(request.request_id, pd_request_id(request.request_id),
                                                list(request.prompt_token_ids or ()),
                                                params_for_pull(request.kv_transfer_params)))
            request.kv_transfer_params["do_remote_prefill"] = False
        return False, None

    def _finish(self, produced: _Produced, request: Any) -> dict[str, Any] | None:
        bound = produced.bound
        if bound is None or self._control is None:
            return None
        if not produced.planned:  # ended before the step that completes its prompt: nothing was copied
            self._control.give_back(bound)
            return None
        status = getattr(request.status, "name", None) or str(request.status)
        if status not in FINISHED_NORMALLY or not self._control.usable(bound):
            self._control.give_back(bound)
            if status in FINISHED_NORMALLY:
                log.warning("P request %s finished too late in its grant's life to hand out params",
                            request.request_id)
            return None
        params = self._control.params(bound, produced.pd_id, request.num_prompt_tokens)
        self._control.commit(bound, produced.pd_id, request.num_prompt_tokens)
        return params
