"""PdConnector: vLLM's KV connector that moves KV through the pd-connector service beside each
instance. Loaded by vLLM with ``kv_connector_module_path="pd_connector_vllm.connector"`` and
``kv_connector="PdConnector"``; no change to vLLM.

vLLM builds it twice: with the SCHEDULER role (decides what to reserve, save, finish and load:
``scheduler.PdScheduler``) and with the WORKER role (copies the KV: ``worker.PdWorker``).

Settings (``kv_connector_extra_config``):

============================  =========  ================================================================
key                           default    meaning
============================  =========  ================================================================
``pd_url``                    required   the pd-connector beside this instance, ``http://127.0.0.1:8080``
``pd_token``                  none       its engine-role bearer token (or env ``PD_ENGINE_TOKEN``); of a
                                         rotation list ``new,old`` the first is presented
``pd_http_timeout_s``         10         deadline of each call but the pull
``pd_pull_timeout_s``         150        deadline of a pull (above pd.consumer.pull-timeout, 120 s)
``pd_connect_timeout_s``      60         how long start-up waits for pd-connector to answer
``pd_load_threads``           8          concurrent pulls on D
``pd_credit_blocks``          0 (auto)   P: pd-connector blocks to hold granted (auto: all of them)
``pd_credit_leases``          0 (auto)   P: lease slots to hold granted (auto: as many as the blocks)
``pd_credit_wait_s``          10         P: how long a request waits (unscheduled) for its share of the grant
``pd_log_timings``            false      log each request's scheduler-thread time, copy, batch and pull at INFO
``pd_save_overlap``           false      P: copy each layer's KV into pd-connector's file on a copy thread as
                                         soon as the forward wrote it, instead of after the forward; the step
                                         still ends only once every copy is done (saving.py)
``pd_save_timeout_s``         30         P: how long the step waits for its copies beside the forward before
                                         the engine stops (a copy that never ends)
``pd_log_kv_digest``          false      log a digest of each request's KV as vLLM holds it, after P's copy
                                         into pd-connector (in the step) and after D's load, at INFO ("KV
                                         digest"): for tests that compare D's bytes with P's; costs a hash of
                                         every block
``pd_engine_channel``         auto       P's batch, D's pull and release over pd-connector's engine socket (a
                                         Unix domain socket) when kv-layout names one (``auto``), always
                                         (``socket``: start-up fails without one) or never (``http``)
============================  =========  ================================================================

What to do when a pull is declined is vLLM's own ``kv_load_failure_policy`` (``fail`` or
``recompute``), a field of the KV transfer config.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from vllm.distributed.kv_transfer.kv_connector.v1.base import (
    KVConnectorBase_V1,
    KVConnectorMetadata,
    KVConnectorRole,
    KVConnectorTransferResults,
    SupportsHMA,
)

from . import kv_dtype
from .client import ENGINE_CHANNELS, PdClient, PdError, choose_engine_channel
from .control import PdControl
from .cpu_tiles import request_amx_tiles
from .kv_groups import group_names, group_windows, kv_groups_refusal, layer_groups
from .parallel import Parallelism, tp_rank
from .params import wants_remote_decode
from .scheduler import PdScheduler
from .specs import StepPlan
from .worker import PdWorker

if TYPE_CHECKING:
    from vllm.config import VllmConfig
    from vllm.forward_context import ForwardContext
    from vllm.v1.attention.backend import AttentionMetadata
    from vllm.v1.core.kv_cache_manager import KVCacheBlocks
    from vllm.v1.core.sched.output import SchedulerOutput
    from vllm.v1.kv_cache_interface import KVCacheConfig
    from vllm.v1.request import Request

# the plugin's logger: vLLM's init_logger(__name__) would name pd_connector_vllm.connector, which vLLM does not
# configure, and its lines never showed
logger = logging.getLogger("vllm.pd_connector")


@dataclass
class PdConnectorMetadata(KVConnectorMetadata):
    plan: StepPlan = field(default_factory=StepPlan)


@dataclass(frozen=True)
class PdSettings:
    url: str
    token: str | None
    http_timeout_s: float
    pull_timeout_s: float
    connect_timeout_s: float
    load_threads: int
    log_timings: bool
    credit_blocks: int = 0
    credit_leases: int = 0
    credit_wait_s: float = 10.0
    engine_channel: str = "auto"
    save_overlap: bool = False
    save_timeout_s: float = 30.0
    log_kv_digest: bool = False

    @classmethod
    def from_extra(cls, extra: dict[str, Any]) -> "PdSettings":
        url = extra.get("pd_url")
        if not url:
            raise ValueError("PdConnector needs kv_connector_extra_config.pd_url, the pd-connector "
                             "beside this vLLM instance (e.g. http://127.0.0.1:8080)")
        if extra.get("pd_token"):
            token = current_token(str(extra["pd_token"]), "kv_connector_extra_config.pd_token")
        else:
            token = current_token(os.environ.get("PD_ENGINE_TOKEN") or "", "env PD_ENGINE_TOKEN")
        s = cls(str(url), token,
                float(extra.get("pd_http_timeout_s", 10)), float(extra.get("pd_pull_timeout_s", 150)),
                float(extra.get("pd_connect_timeout_s", 60)), int(extra.get("pd_load_threads", 8)),
                _flag(extra, "pd_log_timings"),
                int(extra.get("pd_credit_blocks", 0)), int(extra.get("pd_credit_leases", 0)),
                float(extra.get("pd_credit_wait_s", 10)), str(extra.get("pd_engine_channel", "auto")),
                _flag(extra, "pd_save_overlap"), float(extra.get("pd_save_timeout_s", 30)),
                _flag(extra, "pd_log_kv_digest"))
        for name, value in (("pd_http_timeout_s", s.http_timeout_s), ("pd_pull_timeout_s", s.pull_timeout_s),
                            ("pd_connect_timeout_s", s.connect_timeout_s), ("pd_load_threads", s.load_threads),
                            ("pd_credit_wait_s", s.credit_wait_s), ("pd_save_timeout_s", s.save_timeout_s)):
            if value <= 0:
                raise ValueError(f"kv_connector_extra_config.{name} must be positive, got {value}")
        for name, value in (("pd_credit_blocks", s.credit_blocks), ("pd_credit_leases", s.credit_leases)):
            if value < 0:
                raise ValueError(f"kv_connector_extra_config.{name} must be 0 (auto) or positive, got {value}")
        if s.engine_channel not in ENGINE_CHANNELS:
            raise ValueError(f"kv_connector_extra_config.pd_engine_channel must be one of "
                             f"{', '.join(ENGINE_CHANNELS)}, got {s.engine_channel!r}")
        return s

    def control(self, layout: dict[str, Any]) -> PdControl | None:
        """P's control path when the pd-connector beside this instance is a producer, else None."""
        if layout.get("role") not in ("producer", "both"):
            return None
        # Auto: every block pd-connector has free. Beside vLLM the plugin is P's only writer, and blocks held
        # under leases come back into the grant as decoders release them.
        blocks = self.credit_blocks or max(1, int(layout["num_blocks"]))
        verify = bool(layout.get("lease_verification", True))
        client = self.client()
        choose_engine_channel(client, layout, self.engine_channel, "P's per-step batches")
        return PdControl(client, blocks, self.credit_leases or blocks, verify, self.timing_level())

    def timing_level(self) -> int:
        return logging.INFO if self.log_timings else logging.DEBUG

    def client(self, vocab_size: int | None = None) -> PdClient:
        return PdClient(self.url, self.token, self.http_timeout_s, self.pull_timeout_s, vocab_size)


def _flag(extra: dict[str, Any], key: str, default: bool = False) -> bool:
    """A true/false setting: a bool, or one of true/false, yes/no, 1/0; anything else names the setting."""
    value = extra.get(key, default)
    word = str(value).strip().lower()
    if word in ("1", "true", "yes"):
        return True
    if word in ("0", "false", "no", ""):
        return False
    raise ValueError(f"kv_connector_extra_config.{key} must be true or false, got {value!r}")


def current_token(configured: str, setting: str) -> str | None:
    """The token to present out of ``configured``, which may be a rotation list ``new,old``.

    In Kubernetes ``PD_ENGINE_TOKEN`` comes from the same Secret key as the service's own
    ``PD_AUTH_TOKENS_ENGINE``, which holds every token being accepted during a rotation. Sent whole,
    ``Bearer new,old`` is no token the service knows (401 on every call). The first entry is the current
    one: the same rule as the service's own clients (``config.ClientTokens``). An empty first entry
    would send a token nobody chose, so start-up stops naming ``setting`` (never the value: messages are logged).
    Nothing configured is no token (auth off).
    """
    if not configured:
        return None
    first = configured.split(",", 1)[0].strip()
    if not first:
        raise ValueError(f"PdConnector: {setting} is a token list whose first entry, the token presented "
                         "to pd-connector, is empty; put the current token first (e.g. new,old)")
    return first


def wait_for_layout(client: PdClient, deadline_s: float) -> dict[str, Any]:
    """pd-connector's KV layout, waiting up to ``deadline_s`` for it to come up; fails loudly after."""
    end = time.monotonic() + deadline_s
    while True:
        try:
            return client.kv_layout()
        except PdError as e:
            if e.status != 0 or time.monotonic() >= end:
                raise RuntimeError(f"PdConnector cannot read the KV layout of pd-connector at "
                                   f"{client.base_url}: {e}") from None
        time.sleep(0.5)


class PdConnector(KVConnectorBase_V1, SupportsHMA):
    """``SupportsHMA``: vLLM keeps its hybrid KV cache manager on beside the plugin, so a sliding-window layer keeps
    only its window's blocks; the plugin moves each KV cache group's blocks (kv_groups)."""

    def __init__(self, vllm_config: "VllmConfig", role: KVConnectorRole, kv_cache_config: "KVCacheConfig"):
        super().__init__(vllm_config, role, kv_cache_config)
        settings = PdSettings.from_extra(self._kv_transfer_config.kv_connector_extra_config or {})
        parallelism = Parallelism.of(vllm_config)
        refusal = kv_groups_refusal(kv_cache_config)
        if refusal:
            raise NotImplementedError(refusal)
        windows = group_windows(kv_cache_config)
        self._settings = settings
        self._scheduler: PdScheduler | None = None
        self._worker: PdWorker | None = None
        self._control: PdControl | None = None
        if role == KVConnectorRole.SCHEDULER:
            # Start-up may wait for pd-connector (its layout, a first grant); no request waits on it later.
            layout = wait_for_layout(settings.client(), settings.connect_timeout_s)
            self._control = settings.control(layout)
            if self._control is not None:
                self._control.start()
                self._control.wait_for_credit(settings.connect_timeout_s)
            self._scheduler = PdScheduler(self._control, vllm_config.cache_config.block_size,
                                          settings.timing_level(), settings.credit_wait_s, windows=windows)
        else:
            if request_amx_tiles():  # before vLLM's first forward: its CPU attention needs them (cpu_tiles)
                logger.info(
                    "PdConnector: this worker may use the CPU's AMX tile registers (vLLM's CPU attention runs AMX "
                    "instructions on bf16 caches)")
            rank = tp_rank() if parallelism.tp_size > 1 else 0
            cache_dtype = kv_dtype.resolve(vllm_config.cache_config.cache_dtype, vllm_config.model_config.dtype)
            client = settings.client(vllm_config.model_config.get_vocab_size())
            self._worker = PdWorker(client, tp_rank=rank, tp_size=parallelism.tp_size,
                                    load_threads=settings.load_threads, timing_level=settings.timing_level(),
                                    engine_channel=settings.engine_channel, save_overlap=settings.save_overlap,
                                    save_timeout_s=settings.save_timeout_s, kv_dtype=cache_dtype,
                                    log_kv_digest=settings.log_kv_digest,
                                    layer_groups=layer_groups(kv_cache_config) if windows else None,
                                    kv_groups=group_names(kv_cache_config) if windows else None,
                                    kv_scales=self._scales_fingerprint if cache_dtype in kv_dtype.QUANTIZED else None,
                                    vllm_mla=bool(getattr(vllm_config.model_config, "use_mla", False)))
        logger.info("PdConnector (%s) talks to pd-connector at %s", role.name, settings.url)
        if windows:
            logger.info(
                "PdConnector: %d KV cache group(s) %s, moving of a request's blocks the last %s (0: all)",
                len(windows), [type(g.kv_cache_spec).__name__ for g in kv_cache_config.kv_cache_groups], windows)

    # ---- worker side --------------------------------------------------------------------------

    def _scales_fingerprint(self, layer_names: list[str]) -> str:
        # vLLM fills the attention layers' scales when the weights load, after this connector is made
        context = self._vllm_config.compilation_config.static_forward_context
        return kv_dtype.scales_fingerprint(kv_dtype.layer_scales(context, layer_names))

    def register_kv_caches(self, kv_caches: dict[str, torch.Tensor]):
        assert self._worker is not None
        layout = wait_for_layout(self._settings.client(), self._settings.connect_timeout_s)
        self._worker.register(kv_caches, layout, _attention_backend(self._vllm_config) if layout.get("pools") else None)

    def start_load_kv(self, forward_context: "ForwardContext", **kwargs: Any) -> None:
        assert self._worker is not None
        plan = self._plan()
        if plan.loads or plan.releases:
            self._worker.start_loads(plan.loads, plan.releases)

    def wait_for_layer_load(self, layer_name: str) -> None:
        return  # loads finish before vLLM schedules the request (asynchronous, whole request)

    def save_kv_layer(self, layer_name: str, kv_layer: torch.Tensor, attn_metadata: "AttentionMetadata",
                      **kwargs: Any) -> None:
        assert self._worker is not None
        plan = self._plan()
        if plan.saves:
            self._worker.layer_written(layer_name, plan.saves)

    def wait_for_save(self):
        assert self._worker is not None
        plan = self._plan()
        if plan.saves:
            self._worker.save(plan.saves)

    def get_transfer_results(self, finished_req_ids: set[str]) -> KVConnectorTransferResults:
        assert self._worker is not None
        results = self._worker.take_results()
        return KVConnectorTransferResults(finished_recving=results.finished,
                                          failed_recving=set(results.failed))

    def get_finished(self, finished_req_ids: set[str]) -> tuple[set[str] | None, set[str] | None]:
        results = self.get_transfer_results(finished_req_ids)
        return None, results.finished_recving

    def shutdown(self):
        if self._worker is not None:
            self._worker.shutdown()
        if self._control is not None:
            self._control.close(self._settings.http_timeout_s)

    def _plan(self) -> StepPlan:
        meta = self._connector_metadata
        return meta.plan if isinstance(meta, PdConnectorMetadata) else StepPlan()

    # ---- scheduler side -----------------------------------------------------------------------

    def get_num_new_matched_tokens(self, request: "Request", num_computed_tokens: int) -> tuple[int | None, bool]:
        assert self._scheduler is not None
        return self._scheduler.get_num_new_matched_tokens(request, num_computed_tokens)

    def update_state_after_alloc(self, request: "Request", blocks: "KVCacheBlocks", num_external_tokens: int):
        assert self._scheduler is not None
        if wants_remote_decode(request.kv_transfer_params):  # P reads vLLM's block ids at the plan, not here
            self._scheduler.produce_allocated(request)
            return
        groups = blocks.get_block_ids()
        if not self._scheduler.grouped:
            (block_ids,) = groups
            unhashed = blocks.get_unhashed_block_ids() if num_external_tokens > 0 else []
            self._scheduler.update_state_after_alloc(request, block_ids, unhashed, num_external_tokens)
            return
        # several groups: each group's unhashed blocks but vLLM's null block (a window group's older blocks)
        unhashed_all = blocks.get_unhashed_block_ids_all_groups() if num_external_tokens > 0 else [[] for _ in groups]
        full = self._scheduler.full_group
        self._scheduler.update_state_after_alloc(request, groups[full], unhashed_all[full], num_external_tokens,
                                                 unhashed_all)

    def build_connector_meta(self, scheduler_output: "SchedulerOutput") -> KVConnectorMetadata:
        assert self._scheduler is not None
        manager, scheduler = self._kv_cache_manager, self._scheduler

        def block_ids_of(req_id: str) -> list[int] | tuple[list[int], ...]:
            assert manager is not None, "vLLM did not bind its KV cache manager"
            groups = manager.get_block_ids(req_id)
            if not scheduler.grouped:
                return list(groups[0])
            null = manager.block_pool.null_block.block_id  # a window group's blocks behind its window
            return tuple([-1 if b == null else b for b in g] for g in groups)

        return PdConnectorMetadata(self._scheduler.build_plan(scheduler_output.num_scheduled_tokens, block_ids_of))

    def request_finished(self, request: "Request", block_ids: list[int]) -> tuple[bool, dict[str, Any] | None]:
        assert self._scheduler is not None
        return self._scheduler.request_finished(request)

    def request_finished_all_groups(self, request: "Request",
                                    block_ids: tuple[list[int], ...]) -> tuple[bool, dict[str, Any] | None]:
        """With vLLM's hybrid manager (several groups): the same end, P's copy having taken every group's blocks."""
        return self.request_finished(request, [])


def _attention_backend(vllm_config: "VllmConfig") -> str:
    """vLLM's attention backend name(s) for the model's layers, as the copies into a VRAM pool need it
    (several are joined, and gpu_layout refuses that by name)."""
    from vllm.distributed.kv_transfer.kv_connector.utils import get_current_attn_backends
    return ",".join(sorted({b.get_name() for b in get_current_attn_backends(vllm_config)}))
