"""Worker side of the plugin: the KV copies, next to vLLM's KV cache tensors.

One PdWorker per vLLM TP worker, each with its own KV heads and the pd-connector rank of the same number.
P: the prompt's KV goes into the granted blocks of this rank's shared KV file (pd-connector holds it from
then on) by the end of ``wait_for_save``, before the scheduler hands the params out in this step's
``request_finished`` (vLLM's executor waits for every worker's step before the scheduler sees its output):
in the step, or layer by layer beside the forward (saving.py). D: ``start_loads`` hands the step's loads to the
load threads (loading.py), which pull, copy from D's shared KV file into vLLM's blocks and release;
``take_results`` reports finished and failed loads to vLLM, which counts a request received only when every
worker reported it, and failed when any worker failed it.

On D the pulls and releases go over D's engine socket (a Unix domain socket, ``engine_socket``) when kv-layout
names one and ``pd_engine_channel`` allows it, a step's in one request each way when that pd-connector reads
op pulls; else over HTTP, one call each (:meth:`PdWorker.register` chooses).

Where the blocks are is kv_places': the rank's KV file (pd.kv.memory=dram), or, when kv-layout shares a VRAM
pool for the rank, that pool over CUDA IPC, with each copy waited for before the save returns (P) or the load
is released and reported (D).
"""

from __future__ import annotations

import logging
from typing import Callable, Sequence

import torch

from . import kv_dtype
from .client import ENGINE_CHANNELS, PdClient, choose_engine_channel
from .kv_groups import block_order
from .kv_places import FileKv, LayerGroups, PoolKv
from .layout import (MLA, GeometryMismatch, PdGeometry, check_geometry, kv_groups_problems, numpy_copies,
                     order_layers)
from .loading import LoadResults, PdLoader
from .saving import PdSaver
from .specs import LoadSpec, SaveSpec

log = logging.getLogger("vllm.pd_connector")
__all__ = ["LoadResults", "PdWorker"]


class PdWorker:

    def __init__(self, client: PdClient, tp_rank: int, tp_size: int, load_threads: int,
                 timing_level: int = logging.DEBUG, engine_channel: str = "auto", save_overlap: bool = False,
                 save_timeout_s: float = 30.0, kv_dtype: str | None = None, log_kv_digest: bool = False,
                 layer_groups: dict[str, int] | None = None, kv_groups: str | None = None,
                 kv_scales: Callable[[list[str]], str] | None = None, vllm_mla: bool = False):
        """``layer_groups``: each attention layer's KV cache group by name, where vLLM made several; ``kv_groups``
        those groups as pd.model.kv-groups names them (None: one group of full attention). ``kv_scales``: for a
        quantized cache, the fingerprint of vLLM's scales of the named layers (kv_dtype.scales_fingerprint), read
        at ``register``, once the weights have loaded. ``vllm_mla``: vLLM runs the model with MLA."""
        if engine_channel not in ENGINE_CHANNELS:
            raise ValueError(f"pd_engine_channel must be one of {', '.join(ENGINE_CHANNELS)}, got {engine_channel!r}")
        self._client = client
        self._kv_dtype = kv_dtype  # vLLM's KV dtype by name (kv_dtype.resolve); None: only its width is checked
        self._channel = engine_channel
        self._rank = tp_rank
        self._tp = tp_size
        self._layers: list[torch.Tensor] = []
        self._geometry: PdGeometry | None = None
        self._kv: FileKv | PoolKv | None = None
        self._log_kv_digest = log_kv_digest
        self._layer_groups = layer_groups or {}
        self._kv_groups = kv_groups
        self._kv_scales = kv_scales
        self._vllm_mla = vllm_mla
        self._loader = PdLoader(client, tp_rank, tp_size, load_threads, timing_level, self._place, log_kv_digest)
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
        problems = kv_dtype.check(self._kv_dtype, layout.get("kv_dtype")) if self._kv_dtype is not None else []
        problems += kv_groups_problems(self._kv_groups, layout.get("kv_groups"))
        if self._kv_scales is not None:
            problems += kv_dtype.scales_problems(self._kv_scales([name for name, _ in ordered]),
                                                 layout.get("kv_scales"))
        if problems:
            raise GeometryMismatch("vLLM's KV cache does not match the pd-connector beside it: " + "; ".join(problems))
        if self._layer_groups and self._kv_groups:
            # a pd block holds the groups' layers in pd-connector's order, so that a pull reads a window's layers of
            # the request's last blocks only
            rank = {g: i for i, g in enumerate(block_order(self._kv_groups))}
            ordered = sorted(ordered, key=lambda item: rank[self._layer_groups[item[0]]])
        layers = [t for _, t in ordered]
        groups = LayerGroups([self._layer_groups[name] for name, _ in ordered] if self._layer_groups else None)
        if layout.get("pools"):
            if groups.several:
                raise GeometryMismatch("a model of several KV cache groups (a sliding window beside full attention) "
                                       "with pd-connector's KV in GPU memory: the VRAM pool's copies take one group")
            if self._tp != geometry.tp_size:
                raise GeometryMismatch(f"tensor parallel: vLLM TP={self._tp}, pd-connector pd.tp-size={geometry.tp_size}")
            if backend is None:
                raise GeometryMismatch("pd-connector keeps its KV in GPU memory (kv-layout shares pools): the copies "
                                       "need vLLM's attention backend, which was not given")
            kv = pool_kv(backend, layers, geometry, self._rank, layout, self._client.kv_layout)
            copies = kv.describe()
        else:
            check_geometry(ordered, geometry, self._tp, self._vllm_mla)
            kv = FileKv(layers, geometry, groups)
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
        log.info("pd-connector plugin, TP rank %d of %d: %d layers, %s, %d heads/rank, head dim %d, %d-token blocks, %s; "
                 "pd-connector %s (%s); blocks in %s", self._rank, self._tp, geometry.layers, geometry.attention,
                 geometry.heads_per_rank,
                 geometry.head_dim, geometry.block_tokens, self._layers[0].dtype, layout.get("engine_id"),
                 layout.get("role"), copies)
        if layout.get("role") in ("consumer", "both"):
            self._choose_channel(layout)

    def _choose_channel(self, layout: dict) -> None:
        choose_engine_channel(self._client, layout, self._channel, f"TP rank {self._rank}'s pulls and releases")
        batches = self._client.batches_pulls()
        self._loader.batch(batches)
        if batches:
            log.info("pd-connector plugin: TP rank %d sends an engine step's pulls in one request and their "
                     "releases in one", self._rank)

    # ---- P ------------------------------------------------------------------------------------

    def save(self, specs: list[SaveSpec]) -> None:
        """wait_for_save: every copy of the step is in pd-connector's blocks when this returns (saving.py)."""
        if specs and self._saves_kv():
            self._require_saver().save(specs)

    def layer_written(self, layer_name: str, specs: list[SaveSpec]) -> None:
        """save_kv_layer: with pd_save_overlap, the layer's copies of the step start beside the forward."""
        if self._saver is not None and self._saves_kv():
            self._saver.layer_written(layer_name, specs)

    def _saves_kv(self) -> bool:
        """Whether this rank's KV goes to pd-connector: every rank's heads, but MLA's latent, the same bytes on
        every rank, from rank 0 alone (pd-connector holds it on one rank: its grants name one file)."""
        return self._geometry is None or self._geometry.attention != MLA or self._rank == 0

    def _copy_layers(self, spec: SaveSpec, only_layers: Sequence[int] | None) -> None:
        g = self._require_registered()
        ranks = 1 if g.attention == MLA else self._tp
        if len(spec.rank_files) != ranks:
            raise RuntimeError(f"the grant names {len(spec.rank_files)} ranks' KV files, vLLM runs TP {self._tp}"
                               + (" of an MLA model (one file)" if g.attention == MLA else ""))
        path, region_bytes = spec.rank_files[self._rank]
        if only_layers is None:
            self._kv.save(path, region_bytes, spec.vllm_blocks, spec.pd_blocks, group_blocks=spec.group_blocks)
            if self._log_kv_digest:
                log.info("KV digest: P rank %d saved %s: %s", self._rank, spec.pd_request_id,
                         self._kv.digest(spec.vllm_blocks, spec.group_blocks))
        else:
            self._kv.save(path, region_bytes, spec.vllm_blocks, spec.pd_blocks, only_layers, spec.group_blocks)

    def _give_back(self, grant_id: str) -> None:
        self._client.batch({"returns": [grant_id]})

    def _require_saver(self) -> PdSaver:
        if self._saver is None:
            raise RuntimeError("register_kv_caches has not run")
        return self._saver

    # ---- D ------------------------------------------------------------------------------------

    def start_loads(self, loads: list[LoadSpec], releases: list[LoadSpec]) -> None:
        """On vLLM's thread in its step (start_load_kv): the loads' copies come after what vLLM queued so far on
        its stream, the zeroing of the blocks they fill among it, whichever thread runs them."""
        after = self._kv.engine_order() if loads and self._kv is not None else None
        self._loader.start(loads, releases, after)

    def take_results(self) -> LoadResults:
        return self._loader.take_results()

    def _place(self) -> tuple[PdGeometry, FileKv | PoolKv]:
        g = self._require_registered()
        return g, self._kv

    def _require_registered(self) -> PdGeometry:
        if self._geometry is None:
            raise RuntimeError("register_kv_caches has not run")
        return self._geometry

    def shutdown(self) -> None:
        """Waits for loads under way (each call has its deadline) and drops queued ones."""
        self._loader.shutdown()
        if self._saver is not None and not self._saver.close():
            log.warning("P's copy thread did not stop within 5 s")
        if self._kv is not None:
            self._kv.close()  # a VRAM pool is unmapped here, before pd-connector may free it
        self._client.close()
