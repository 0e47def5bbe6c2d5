"""Scheduler side of the plugin: which requests reserve, save, finish (P) and load (D).

Plain Python over duck-typed vLLM objects (``request.request_id``, ``.prompt_token_ids``,
``.num_prompt_tokens``, ``.num_computed_tokens``, ``.kv_transfer_params``, ``.status``), so its
decisions are unit-tested without an engine.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable

from .client import PdClient, PdError
from .params import params_for_pull, pd_request_id, wants_remote_decode, wants_remote_prefill
from .specs import LoadSpec, SaveSpec, StepPlan

log = logging.getLogger("vllm.pd_connector")

# vLLM's RequestStatus names of a request that ended normally (its prefill ran to the end).
FINISHED_NORMALLY = ("FINISHED_STOPPED", "FINISHED_LENGTH_CAPPED")


@dataclass
class _Produced:
    """A P request from its first allocation to request_finished."""

    request: Any
    pd_id: str
    reserved: bool = False
    saved: bool = False


class PdScheduler:

    def __init__(self, client: PdClient, block_size: int, timing_level: int = logging.DEBUG):
        self._client = client
        self._timing_level = timing_level
        self._block_size = block_size
        self._producing: dict[str, _Produced] = {}
        self._plan = StepPlan()

    # ---- D: what to load ----------------------------------------------------------------------

    def get_num_new_matched_tokens(self, request: Any, num_computed_tokens: int) -> tuple[int, bool]:
        """All prompt tokens not computed locally load asynchronously, as vLLM's NIXL connector does;
        vLLM recomputes the last one to sample from it."""
        if not wants_remote_prefill(request.kv_transfer_params):
            return 0, False
        count = len(request.prompt_token_ids or ()) - num_computed_tokens
        return (count, True) if count > 0 else (0, False)

    def update_state_after_alloc(self, request: Any, block_ids: list[int], unhashed_block_ids: list[int],
                                 num_external_tokens: int) -> None:
        params = request.kv_transfer_params
        if wants_remote_decode(params):
            self._producing.setdefault(request.request_id,
                                       _Produced(request, pd_request_id(request.request_id)))
            return
        if not wants_remote_prefill(params):
            return
        spec = LoadSpec(request.request_id, pd_request_id(request.request_id),
                        list(request.prompt_token_ids or ()), params_for_pull(params))
        if num_external_tokens > 0:
            spec.vllm_blocks = list(unhashed_block_ids)
            spec.first_pd_block = len(block_ids) - len(unhashed_block_ids)
            self._plan.loads.append(spec)
        else:
            self._plan.releases.append(spec)
        params["do_remote_prefill"] = False  # one pull per request, also after a preemption

    # ---- P: when to reserve and save ----------------------------------------------------------

    def build_plan(self, num_scheduled_tokens: dict[str, int],
                   block_ids_of: Callable[[str], list[int]]) -> StepPlan:
        """The step's saves (P requests whose prompt's last token is computed in this step), loads
        and releases; clears them for the next step."""
        for req_id, produced in self._producing.items():
            scheduled = num_scheduled_tokens.get(req_id)
            if scheduled is None or produced.reserved:
                continue
            req = produced.request
            if req.num_computed_tokens + scheduled < req.num_prompt_tokens:
                continue
            spec = self._reserve(produced, block_ids_of(req_id))
            if spec is not None:
                self._plan.saves.append(spec)
        plan, self._plan = self._plan, StepPlan()
        return plan

    def _reserve(self, produced: _Produced, vllm_blocks: list[int]) -> SaveSpec | None:
        req = produced.request
        produced.reserved = True  # once, whatever the answer: a refused reservation is not retried
        num_tokens = req.num_prompt_tokens
        n_blocks = -(-num_tokens // self._block_size)
        if len(vllm_blocks) < n_blocks:
            log.error("P request %s: %d tokens need %d blocks, vLLM holds %d; not exported",
                      req.request_id, num_tokens, n_blocks, len(vllm_blocks))
            return None
        start = time.perf_counter()
        try:
            r = self._client.reserve(produced.pd_id, num_tokens)
        except PdError as e:
            log.warning("P request %s: pd-connector did not reserve (%s); the decoder gets no "
                        "kv_transfer_params and prefills itself", req.request_id, e)
            return None
        produced.saved = True
        log.log(self._timing_level, "P reserved %s: %d tokens, pd blocks %s, %.2f ms", req.request_id, num_tokens,
                r["block_ids"], 1000 * (time.perf_counter() - start))
        return SaveSpec(req.request_id, produced.pd_id, vllm_blocks[:n_blocks], list(r["block_ids"]),
                        num_tokens, [(x["kv_file"], int(x["region_bytes"])) for x in r["ranks"]])

    # ---- both: the end of a request ------------------------------------------------------------

    def request_finished(self, request: Any) -> tuple[bool, dict[str, Any] | None]:
        """P: finish (the worker wrote the KV during the step that completed the prompt) and return
        pd-connector's params verbatim; vLLM frees its own blocks at once, pd-connector holds the
        copy. Aborted or unfinished: give the reservation back. D: a request that ended before its
        load was planned still releases P's lease."""
        produced = self._producing.pop(request.request_id, None)
        if produced is not None:
            return False, self._finish(produced, request)
        if wants_remote_prefill(request.kv_transfer_params):
            self._plan.releases.append(LoadSpec(request.request_id, pd_request_id(request.request_id),
                                                list(request.prompt_token_ids or ()),
                                                params_for_pull(request.kv_transfer_params)))
            request.kv_transfer_params["do_remote_prefill"] = False
        return False, None

    def _finish(self, produced: _Produced, request: Any) -> dict[str, Any] | None:
        if not produced.saved:
            return None
        status = getattr(request.status, "name", str(request.status))
        if status not in FINISHED_NORMALLY:
            self._abort(produced.pd_id, f"the request ended {status}")
            return None
        start = time.perf_counter()
        try:
            params = self._client.finish(produced.pd_id)["kv_transfer_params"]
            log.log(self._timing_level, "P finished %s: %.2f ms", request.request_id, 1000 * (time.perf_counter() - start))
            return params
        except PdError as e:
            log.error("P request %s: pd-connector did not finish (%s); the decoder gets no "
                      "kv_transfer_params", request.request_id, e)
            self._abort(produced.pd_id, "finish failed")
            return None

    def _abort(self, pd_id: str, why: str) -> None:
        try:
            self._client.abort(pd_id)
        except PdError as e:
            if e.status != 404:
                log.warning("abort of %s (%s) failed: %s", pd_id, why, e)
