"""Worker side of the plugin: the KV copies, next to vLLM's KV cache tensors.

One PdWorker per vLLM TP worker, each with its own KV heads and the pd-connector rank of the same number.
P: the prompt's KV goes into the granted blocks of this rank's shared KV file (pd-connector holds it from
then on) by the end of ``wait_for_save``, before the scheduler hands the params out in this step's
``request_finished`` (vLLM's executor waits for every worker's step before the scheduler sees its output):
in the step, or layer by layer beside the forward (saving.py). D: ``start_loads`` hands each load to a
bounded pool of threads (a pull blocks on pd-connector for as long as the transfer and the lease check take);
every worker asks for the pull with its rank and joins the one pull D's pd-connector runs for the request; each
copies its rank's blocks from D's shared KV file into vLLM's blocks, checks the blocks' epochs in that file
(still the pull's: no later pull had them meanwhile) and releases its rank after reporting the load (D frees
the blocks once every rank did), or, where there are no epochs, releases first and reports after;
``take_results`` reports finished and failed loads to vLLM, which counts a request received only when every
worker reported it, and failed when any worker failed it.

On D the pull and the release go over D's engine socket (a Unix domain socket, ``engine_socket``) when kv-layout
names one and ``pd_engine_channel`` allows it, else over HTTP (:meth:`PdWorker.register` chooses).

Where the blocks are is kv_places': the rank's KV file (pd.kv.memory=dram), or, when kv-layout shares a VRAM
pool for the rank, that pool over CUDA IPC, with each copy waited for before the save returns (P) or the load
is released and reported (D).
"""

from __future__ import annotations

import logging
import platform
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Sequence

import torch

from .client import ENGINE_CHANNELS, PdClient, PdError, choose_engine_channel
from .kv_places import FileKv, PoolKv
from .layout import GeometryMismatch, PdGeometry, check_geometry, numpy_copies, order_layers
from .osthread import name_current_thread
from .saving import PdSaver
from .specs import LoadSpec, SaveSpec

log = logging.getLogger("vllm.pd_connector")
_LOADS_IN_ORDER = platform.machine() in ("x86_64", "AMD64")


@dataclass
class LoadResults:
    finished: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)  # request id -> reason


class PdWorker:

    def __init__(self, client: PdClient, tp_rank: int, tp_size: int, load_threads: int,
                 timing_level: int = logging.DEBUG, engine_channel: str = "auto", save_overlap: bool = False,
                 save_timeout_s: float = 30.0):
        if engine_channel not in ENGINE_CHANNELS:
            raise ValueError(f"pd_engine_channel must be one of {', '.join(ENGINE_CHANNELS)}, got {engine_channel!r}")
        self._client = client
        self._channel = engine_channel
        self._rank = tp_rank
        self._tp = tp_size
        self._layers: list[torch.Tensor] = []
        self._geometry: PdGeometry | None = None
        self._kv: FileKv | PoolKv | None = None
        self._pool = ThreadPoolExecutor(max_workers=load_threads, thread_name_prefix="pd-load",
                                        initializer=name_current_thread, initargs=("pd-load",))
        self._lock = threading.Lock()
        self._results = LoadResults()
        self._timing_level = timing_level  # the level of the per-request timing lines
        self._save_overlap = save_overlap
        self._save_timeout_s = save_timeout_s
        self._saver: PdSaver | None = None

    def register(self, kv_caches: dict[str, torch.Tensor], layout: dict, backend: str | None = None,
                 pool_kv=PoolKv) -> None:
        """Checks vLLM's caches against pd-connector's geometry (GeometryMismatch if they differ) and opens the
        place of this rank's blocks: the VRAM pool when kv-layout shares pools (then vLLM's attention
        ``backend`` name decides the copies' layout, gpu_layout), else the KV file. On D, chooses the channel
        of the pulls and releases (RuntimeError when ``pd_engine_channel`` cannot be met)."""
        ordered = order_layers(kv_caches)
        geometry = PdGeometry.from_layout(layout)
        layers = [t for _, t in ordered]
        if layout.get("pools"):
            if self._tp != geometry.tp_size:
                raise GeometryMismatch(f"tensor parallel: vLLM TP={self._tp}, pd-connector pd.tp-size={geometry.tp_size}")
            if backend is None:
                raise GeometryMismatch("pd-connector keeps its KV in GPU memory (kv-layout shares pools): the copies "
                                       "need vLLM's attention backend, which was not given")
            kv = pool_kv(backend, layers, geometry, self._rank, layout, self._client.kv_layout)
            copies = kv.describe()
        else:
            check_geometry(ordered, geometry, self._tp)
            kv = FileKv(layers, geometry)
            copies = "%s; copies by %s" % (kv.describe(), "numpy" if numpy_copies(layers)
                                                else "torch (caches numpy cannot view)")
        self._layers, self._geometry, self._kv = layers, geometry, kv
        # Beside the forward only into the file: a VRAM pool's copies are one CUDA stream's, in the step.
        overlap = self._save_overlap and isinstance(kv, FileKv)
        if self._saver is not None:
            self._saver.close()  # registered again: one copy thread per worker
        self._saver = PdSaver(self._copy_layers, self._give_back, [n for n, _ in ordered], overlap,
                              self._save_timeout_s, self._timing_level)
        copies += "; P's copies " + ("beside the forward (a copy thread)" if overlap else "in the step")
        log.info("pd-connector plugin, TP rank %d of %d: %d layers, %d heads/rank, head dim %d, %d-token blocks, %s; "
                 "pd-connector %s (%s); blocks in %s", self._rank, self._tp, geometry.layers, geometry.heads_per_rank,
                 geometry.head_dim, geometry.block_tokens, self._layers[0].dtype, layout.get("engine_id"),
                 layout.get("role"), copies)
        if layout.get("role") in ("consumer", "both"):
            self._choose_channel(layout)

    def _choose_channel(self, layout: dict) -> None:
        choose_engine_channel(self._client, layout, self._channel, f"TP rank {self._rank}'s pulls and releases")

    # ---- P ------------------------------------------------------------------------------------

    def save(self, specs: list[SaveSpec]) -> None:
        """wait_for_save: every copy of the step is in pd-connector's blocks when this returns (saving.py)."""
        if specs:
            self._require_saver().save(specs)

    def layer_written(self, layer_name: str, specs: list[SaveSpec]) -> None:
        """save_kv_layer: with pd_save_overlap, the layer's copies of the step start beside the forward."""
        if self._saver is not None:
            self._saver.layer_written(layer_name, specs)

    def _copy_layers(self, spec: SaveSpec, only_layers: Sequence[int] | None) -> None:
        self._require_registered()
        if len(spec.rank_files) != self._tp:
            raise RuntimeError(f"the grant names {len(spec.rank_files)} ranks' KV files, vLLM runs TP {self._tp}")
        path, region_bytes = spec.rank_files[self._rank]
        if only_layers is None:
            self._kv.save(path, region_bytes, spec.vllm_blocks, spec.pd_blocks)
        else:
            self._kv.save(path, region_bytes, spec.vllm_blocks, spec.pd_blocks, only_layers)

    def _give_back(self, grant_id: str) -> None:
        self._client.batch({"returns": [grant_id]})

    def _require_saver(self) -> PdSaver:
        if self._saver is None:
            raise RuntimeError("register_kv_caches has not run")
        return self._saver

    # ---- D ------------------------------------------------------------------------------------

    def start_loads(self, loads: list[LoadSpec], releases: list[LoadSpec]) -> None:
        for spec in loads:
            self._pool.submit(self._load, spec)
        for spec in releases:
            self._pool.submit(self._release_only, spec)

    def take_results(self) -> LoadResults:
        with self._lock:
            results, self._results = self._results, LoadResults()
        return results

    def _load(self, spec: LoadSpec) -> None:
        reason, release_owed = None, False
        try:
            reason, release_owed = self._pull_and_copy(spec)
        except Exception as e:  # noqa: BLE001 - a load that breaks fails its request, never the engine
            log.exception("D request %s: load failed", spec.request_id)
            reason = f"plugin-error: {e}"
        with self._lock:
            self._results.finished.add(spec.request_id)
            if reason is not None:
                self._results.failed[spec.request_id] = reason
        if release_owed:  # a self-checked load: D frees the blocks now rather than at pd.consumer.retention
            self._release(spec)

    def _pull_and_copy(self, spec: LoadSpec) -> tuple[str | None, bool]:
        """(None, whether the release is still owed) when the KV is in vLLM's blocks, else (the reason, False).

        The pull's blocks stay D's pd-connector's (no other pull gets them) from its reply until the
        release. When the reply names the blocks' epoch (D's KV files carry epoch tables) the copy vouches for
        itself: epochs still the pull's after it mean no later pull had a block meanwhile, so the load is
        reported first and released after (owed). Otherwise the release comes first: bytes copied before a
        successful release are the pull's, and a release that finds the pull gone (404: pd.consumer.retention
        passed, or D restarted) cannot vouch for them: a failed load."""
        g = self._require_registered()
        t0 = time.perf_counter()
        try:
            pulled = self._client.pull(spec.pd_request_id, spec.token_ids, spec.params, self._rank)
        except PdError as e:
            log.warning("D request %s: pull declined or failed: %s", spec.request_id, e)
            if e.status == 0:
                self._release(spec)  # no answer: the pull may still be held on D's pd-connector
            return e.reason, False
        t_pulled = time.perf_counter()
        epoch = _self_checking_epoch(pulled)
        try:
            reason, copied = self._copy_from_d_file(spec, pulled, g, epoch)
        except Exception:
            self._release(spec)
            raise
        t_copied = time.perf_counter()
        if reason is None and epoch is not None:
            self._log_load(spec, pulled, copied, t0, t_pulled, t_copied, None)
            return None, True
        released = self._release_pulled(spec)
        if reason is None and released is not None:
            reason = released
        if reason is None:
            self._log_load(spec, pulled, copied, t0, t_pulled, t_copied, time.perf_counter())
        return reason, False

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

    def _copy_from_d_file(self, spec: LoadSpec, pulled: dict, g: PdGeometry,
                          epoch: int | None) -> tuple[str | None, tuple]:
        """Copies this rank's pulled blocks ``first_pd_block..`` from D's KV file or VRAM pool into ``spec.vllm_blocks``,
        checking their ``epoch`` after the copy when given. (None, (pd blocks, bytes)) when done, else
        (the reason, ()) and the bytes in vLLM's blocks are not the pull's."""
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
        reason = self._kv.load(path, region_bytes, pd_blocks, spec.vllm_blocks, epoch)
        if reason is not None:
            return reason, ()
        return None, (pd_blocks, len(pd_blocks) * g.block_bytes)

    def _release_pulled(self, spec: LoadSpec) -> str | None:
        """DELETE the copied pull: None once D's pd-connector freed it, else why the copy cannot be trusted."""
        try:
            self._client.release(spec.pd_request_id, self._rank)
            return None
        except PdError as e:
            if e.status == 404:
                log.warning("D request %s: the pull was released before its copy ended (pd.consumer.retention "
                            "passed, or D's pd-connector restarted); its blocks may hold other KV", spec.request_id)
                return "kv-released-early"
            log.warning("D request %s: release failed, the copied KV is not trusted: %s", spec.request_id, e)
            return f"release-failed: {e.reason}"

    def _release_only(self, spec: LoadSpec) -> None:
        """Pull and drop: P learns its KV was read and frees it now rather than at lease expiry."""
        try:
            self._client.pull(spec.pd_request_id, spec.token_ids, spec.params, self._rank)
            self._client.release(spec.pd_request_id, self._rank)
        except PdError as e:
            log.info("release of %s's remote KV: %s", spec.request_id, e)

    def _release(self, spec: LoadSpec) -> None:
        """A release nothing depends on (a failed load's, a self-checked load's): a 404 means D freed the pull
        already; any other failure leaves the blocks to pd.consumer.retention."""
        try:
            self._client.release(spec.pd_request_id, self._rank)
        except PdError as e:
            if e.status != 404:
                log.warning("release of %s failed: %s", spec.pd_request_id, e)

    def _require_registered(self) -> PdGeometry:
        if self._geometry is None:
            raise RuntimeError("register_kv_caches has not run")
        return self._geometry

    def shutdown(self) -> None:
        """Waits for loads under way (each HTTP call has its deadline) and drops queued ones."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        if self._saver is not None and not self._saver.close():
            log.warning("P's copy thread did not stop within 5 s")
        if self._kv is not None:
            self._kv.close()  # a VRAM pool is unmapped here, before pd-connector may free it
        self._client.close()



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
