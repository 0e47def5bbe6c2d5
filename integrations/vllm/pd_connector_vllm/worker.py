"""Worker side of the plugin: the KV copies, next to vLLM's KV cache tensors.

P: ``save`` runs in wait_for_save, after the step's forward wrote the prompt's KV, and copies it into
the granted blocks of P's shared KV file (pd-connector holds it from then on), before the scheduler
hands the params out in this step's ``request_finished``. D: ``start_loads`` hands each load to a
bounded pool of threads (a pull blocks on pd-connector for as long as the transfer and the lease
check take); ``take_results`` reports finished and failed loads to vLLM.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import torch

from .client import PdClient, PdError
from .layout import KvFiles, PdGeometry, check_geometry, order_layers, read_pd_blocks, write_pd_blocks
from .specs import LoadSpec, SaveSpec

log = logging.getLogger("vllm.pd_connector")


@dataclass
class LoadResults:
    finished: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)  # request id -> reason


class PdWorker:

    def __init__(self, client: PdClient, tp_rank: int, tp_size: int, load_threads: int,
                 timing_level: int = logging.DEBUG):
        self._client = client
        self._rank = tp_rank
        self._tp = tp_size
        self._layers: list[torch.Tensor] = []
        self._geometry: PdGeometry | None = None
        self._files = KvFiles()
        self._pool = ThreadPoolExecutor(max_workers=load_threads, thread_name_prefix="pd-load")
        self._lock = threading.Lock()
        self._results = LoadResults()
        self._timing_level = timing_level  # the level of the per-request timing lines

    def register(self, kv_caches: dict[str, torch.Tensor], layout: dict) -> None:
        """Checks vLLM's caches against pd-connector's geometry; raises GeometryMismatch if they differ."""
        ordered = order_layers(kv_caches)
        geometry = PdGeometry.from_layout(layout)
        check_geometry(ordered, geometry, self._tp)
        self._layers = [t for _, t in ordered]
        self._geometry = geometry
        log.info("pd-connector plugin: %d layers, %d heads/rank, head dim %d, %d-token blocks, %s; "
                 "pd-connector %s (%s)", geometry.layers, geometry.heads_per_rank, geometry.head_dim,
                 geometry.block_tokens, self._layers[0].dtype, layout.get("engine_id"), layout.get("role"))

    # ---- P ------------------------------------------------------------------------------------

    def save(self, specs: list[SaveSpec]) -> None:
        for spec in specs:
            try:
                self._save(spec)
            except Exception as e:  # noqa: BLE001 - any failure: no decoder may take these blocks for the KV
                # The scheduler hands the params out after this step without knowing; giving the whole grant
                # back now, before this step ends, zeroes its slots first, so a decoder declines them and
                # P refuses the commit. Other requests of the grant not yet committed are declined too.
                log.error("P request %s: KV copy into pd-connector failed (%s); giving grant %s back",
                          spec.request_id, e, spec.grant_id)
                try:
                    self._client.batch({"returns": [spec.grant_id]})
                except PdError as return_error:
                    log.error("grant %s not given back either (%s): a decoder may read blocks without this "
                              "request's KV until the grant expires", spec.grant_id, return_error)

    def _save(self, spec: SaveSpec) -> None:
        g = self._require_registered()
        path, region_bytes = spec.rank_files[self._rank]
        if path is None:
            raise RuntimeError("pd-connector keeps its KV in anonymous memory (no kv_file); "
                               "this plugin writes through the shared file only")
        start = time.perf_counter()
        dst = self._files.blocks(path, region_bytes, g, self._layers[0].dtype)
        write_pd_blocks(self._layers, spec.vllm_blocks, dst, spec.pd_blocks)
        log.log(self._timing_level, "P saved %s: vLLM blocks %s -> pd blocks %s, copy %.2f ms", spec.request_id,
                spec.vllm_blocks, spec.pd_blocks, 1000 * (time.perf_counter() - start))

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
        reason = None
        try:
            reason = self._pull_and_copy(spec)
        except Exception as e:  # noqa: BLE001 - a load that breaks fails its request, never the engine
            log.exception("D request %s: load failed", spec.request_id)
            reason = f"plugin-error: {e}"
        with self._lock:
            self._results.finished.add(spec.request_id)
            if reason is not None:
                self._results.failed[spec.request_id] = reason

    def _pull_and_copy(self, spec: LoadSpec) -> str | None:
        """None when the KV is in vLLM's blocks, else the reason it is not."""
        g = self._require_registered()
        t0 = time.perf_counter()
        try:
            pulled = self._client.pull(spec.pd_request_id, spec.token_ids, spec.params)
        except PdError as e:
            log.warning("D request %s: pull declined or failed: %s", spec.request_id, e)
            if e.status == 0:
                self._release(spec)  # no answer: the pull may still be held on D's pd-connector
            return e.reason
        t_pulled = time.perf_counter()
        try:
            data = self._client.read_kv(spec.pd_request_id)  # this also releases D's pd blocks
        except PdError as e:
            self._release(spec)
            return e.reason
        t1 = time.perf_counter()
        n_total = -(-len(spec.token_ids) // g.block_tokens)
        slice_bytes = g.block_bytes
        if len(data) != n_total * self._tp * slice_bytes:
            return (f"bad-length: {len(data)} bytes for {n_total} blocks of {self._tp} x {slice_bytes}")
        src = (torch.frombuffer(data, dtype=torch.uint8).view(self._layers[0].dtype)
               .view(n_total, self._tp, *g.block_shape())[:, self._rank])
        end = spec.first_pd_block + len(spec.vllm_blocks)
        if end > n_total:
            return f"bad-blocks: vLLM asks for pd blocks up to {end}, P sent {n_total}"
        read_pd_blocks(src[spec.first_pd_block:end], self._layers, spec.vllm_blocks)
        t2 = time.perf_counter()
        log.log(self._timing_level, "D loaded %s: pd blocks %d..%d -> vLLM blocks %s, %d bytes; pull %.2f ms "
                "(pd-connector's own %.2f ms), read-out %.2f ms, copy %.2f ms", spec.request_id, spec.first_pd_block,
                end - 1, spec.vllm_blocks, len(data), 1000 * (t_pulled - t0),
                float(((pulled or {}).get("timings") or {}).get("pull_ms", -1)), 1000 * (t1 - t_pulled), 1000 * (t2 - t1))
        return None

    def _release_only(self, spec: LoadSpec) -> None:
        """Pull and drop: P learns its KV was read and frees it now rather than at lease expiry."""
        try:
            self._client.pull(spec.pd_request_id, spec.token_ids, spec.params)
            self._client.release(spec.pd_request_id)
        except PdError as e:
            log.info("release of %s's remote KV: %s", spec.request_id, e)

    def _release(self, spec: LoadSpec) -> None:
        try:
            self._client.release(spec.pd_request_id)
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
        self._files.close()
        self._client.close()

