"""Where this rank's pd-connector blocks are, and how the worker copies to and from them (docs/gpu.md).

``FileKv`` (pd.kv.memory=dram): pd-connector's KV file of the rank, mapped in host memory; the copies are
layout.write_pd_blocks / read_pd_blocks, unchanged (numpy on the calling thread: torch's CPU copies fork into
the OpenMP pool vLLM's forward uses, which made them several times slower on a busy host).

``PoolKv`` (pd.kv.memory=vram, kv-layout carries ``pools``): pd-connector's VRAM pool of the rank, opened over
CUDA IPC (gpu_pool.IpcPool, the GPU checked by UUID), and gpu_layout.BlockCopier for the copies, on its side
stream. Each copy is waited for (its CopyDone) before the call returns: P's save returns, and so the scheduler
commits, only once the bytes D will READ are in the pool; D's load is reported and its pull released only once
vLLM's blocks hold them. A pool made again (pd-connector restarted: a new incarnation in kv-layout) is opened
again, the old mapping closed first; there is no fallback to the file. kv-layout is asked before every copy by
default: P's grant and D's pull come from the pd-connector running now, so a look after them finds its pool,
where a cached answer could send a grant's KV into a dead instance's mapping while the new pool's blocks are
what D READs.
"""

from __future__ import annotations

import base64
import hashlib
import threading
import time
from typing import Any, Callable, Sequence

import torch

from .gpu_layout import BlockCopier, resolve_layout
from .gpu_pool import GpuPoolError, IpcPool, LibCuda
from .layout import MLA, CopyViews, KvFiles, PdGeometry, read_pd_blocks, write_pd_blocks


class LayerGroups:
    """Which KV cache group each layer is in (model order), and so which of a request's vLLM blocks hold its KV:
    with one group, ``vllm_blocks`` for every layer; with several (a sliding-window group beside a full one), each
    group's own blocks, aligned to the end of the request's pd blocks (a window group keeps the last ones)."""

    def __init__(self, groups: Sequence[int] | None = None) -> None:
        """``groups``: each layer's group, where block ids come per group (PdScheduler.grouped); None: one group."""
        self._groups = list(groups) if groups else None
        # each group's layers, once: the copies of every save and load walk them
        self._members = [[l for l, lg in enumerate(self._groups) if lg == g] for g in range(max(self._groups) + 1)] \
            if self._groups else []

    @property
    def several(self) -> bool:
        return self._groups is not None

    def copies(self, vllm_blocks: Sequence[int], pd_blocks: Sequence[int], group_blocks: Sequence[Sequence[int]],
               only_layers: Sequence[int] | None = None):
        """(vLLM blocks, pd blocks, layers or None for all) of each copy a request's blocks make."""
        if self._groups is None or not group_blocks:
            yield list(vllm_blocks), list(pd_blocks), only_layers
            return
        if len(group_blocks) != len(self._members):
            raise ValueError(f"{len(group_blocks)} KV cache groups' blocks, the layers are in {len(self._members)}")
        for g, (blocks, members) in enumerate(zip(group_blocks, self._members)):
            if len(blocks) > len(pd_blocks):
                raise ValueError(f"KV cache group {g} has {len(blocks)} blocks for {len(pd_blocks)} pd blocks")
            layers = members if only_layers is None else [l for l in members if l in only_layers]
            if blocks and layers:
                yield list(blocks), list(pd_blocks[len(pd_blocks) - len(blocks):]), layers

    def of_layers(self, count: int, vllm_blocks: Sequence[int], group_blocks: Sequence[Sequence[int]]):
        """Each layer's blocks of the request."""
        if self._groups is None or not group_blocks:
            return [list(vllm_blocks)] * count
        return [list(group_blocks[g]) for g in self._groups]


class FileKv:
    """Today's place: the rank's KV file (P's written, D's read), mapped once per file incarnation."""

    def __init__(self, layers: Sequence[torch.Tensor], g: PdGeometry, groups: LayerGroups | None = None) -> None:
        self._layers = list(layers)
        self._g = g
        self._groups = groups or LayerGroups()
        self._files = KvFiles()
        self._views = CopyViews(self._layers, latent=g.attention == MLA)

    def save(self, path: str | None, region_bytes: int, vllm_blocks: list[int], pd_blocks: list[int],
             only_layers: Sequence[int] | None = None, group_blocks: Sequence[list[int]] = ()) -> None:
        if path is None:
            raise RuntimeError("pd-connector keeps its KV in anonymous memory (no kv_file); "
                               "this plugin writes through the shared file only")
        dst = self._files.blocks(path, region_bytes, self._g, self._layers[0].dtype)
        for blocks, pds, layers in self._groups.copies(vllm_blocks, pd_blocks, group_blocks, only_layers):
            write_pd_blocks(self._layers, blocks, dst, pds, layers, self._views)

    def engine_order(self) -> None:
        """Nothing to order: the copies into a CPU cache run on the load thread, done when they return."""
        return None

    def load(self, path: str | None, region_bytes: int, pd_blocks: list[int], vllm_blocks: list[int],
             epoch: int | None = None, after: None = None, group_blocks: Sequence[list[int]] = ()) -> str | None:
        """None once vLLM's blocks hold the pulled ones, else why not. With the pull's ``epoch``, the blocks'
        epochs are read after the copy: one that changed means a later pull got the block while it was copied,
        and the load fails (``kv-released-early``), its bytes in vLLM's blocks not to be used."""
        if not path:
            return ("no-kv-file: D's pd-connector keeps its received KV in anonymous memory; this plugin reads "
                    "pulled blocks from D's shared KV file only (pd.kv.shm-dir)")
        if epoch is None:
            src, epochs = self._files.blocks(path, int(region_bytes), self._g, self._layers[0].dtype), None
        else:
            src, epochs = self._files.blocks_and_epochs(path, int(region_bytes), self._g, self._layers[0].dtype)
        if pd_blocks and (min(pd_blocks) < 0 or max(pd_blocks) >= src.shape[0]):
            return f"bad-blocks: D blocks {pd_blocks} outside {path}'s {src.shape[0]}"
        for blocks, pds, layers in self._groups.copies(vllm_blocks, pd_blocks, group_blocks):
            read_pd_blocks(src, self._layers, blocks, pds, self._views, layers)
        if epochs is not None:
            # After the copy, in program order: x86-64 keeps loads in order, so an epoch read here that is
            # still the pull's was read after every byte the copy read, and D stamps before it writes.
            now = epochs[pd_blocks]
            if not (now == epoch).all():
                return (f"kv-released-early: D blocks {[b for b, e in zip(pd_blocks, now) if e != epoch]} "
                        "went to a later pull while they were copied (pd.consumer.retention passed, or D's "
                        "pd-connector restarted)")
        return None

    def digest(self, vllm_blocks: Sequence[int], group_blocks: Sequence[list[int]] = ()) -> str:
        return blocks_digest(self._layers, self._groups.of_layers(len(self._layers), vllm_blocks, group_blocks))

    def describe(self) -> str:
        return "pd-connector's KV file (host memory)"

    def close(self) -> None:
        self._views.forget_file()
        self._files.close()


def _one_group(group_blocks: Sequence[list[int]]) -> None:
    if group_blocks:  # PdWorker.register refuses several KV cache groups beside a VRAM pool
        raise ValueError("a VRAM pool's copies take one KV cache group's blocks")


def blocks_digest(layers: Sequence[torch.Tensor], blocks_of_layers: Sequence[Sequence[int]]) -> str:
    """SHA-256 of each layer's vLLM blocks, layer after layer, as bytes: the KV a request holds in vLLM, for
    ``pd_log_kv_digest`` (P's saved and D's loaded compared by a test). A host copy of each block: a check, never
    on a path that serves."""
    h = hashlib.sha256()
    for t, blocks in zip(layers, blocks_of_layers):
        for b in blocks:
            block = t[int(b)].detach().contiguous().cpu()
            h.update(block.view(torch.uint8).numpy().tobytes())
    return h.hexdigest()[:32]


def open_ipc_pool(entry: dict[str, Any], device: torch.device) -> IpcPool:
    """The real opening: libcuda, the entry's handle (base64), size and GPU UUID, on vLLM's cache's device."""
    return IpcPool(LibCuda(), base64.b64decode(entry["ipc_handle"]), int(entry["bytes"]), str(entry["gpu_uuid"]),
                   device)


def pool_entry(layout: dict[str, Any], rank: int) -> dict[str, Any]:
    """This rank's entry of kv-layout's ``pools``; GpuPoolError if pd-connector shares none for it."""
    entries = [e for e in layout.get("pools") or [] if int(e.get("rank", -1)) == rank]
    if len(entries) != 1:
        raise GpuPoolError(f"pd-connector's kv-layout shares {len(entries)} VRAM pools for TP rank {rank} "
                           f"(pools: {[e.get('rank') for e in layout.get('pools') or []]}); one is needed")
    entry = entries[0]
    if len(base64.b64decode(entry.get("ipc_handle", ""))) != 64:
        raise GpuPoolError(f"rank {rank}'s pool entry has no 64-byte ipc_handle")
    return entry


class PoolKv:
    """The rank's VRAM pool and the copier over vLLM's (GPU) cache. ``fetch_layout`` is kv-layout, asked again
    before a copy once ``check_s`` seconds passed since the last look (0: before every copy, the default; see
    the module comment), so a pool made again is opened again; ``opener`` is the tests' stand-in for
    :func:`open_ipc_pool`."""

    def __init__(self, backend: str, layers: Sequence[torch.Tensor], g: PdGeometry, rank: int,
                 layout: dict[str, Any], fetch_layout: Callable[[], dict[str, Any]], check_s: float = 0.0,
                 opener: Callable[[dict[str, Any], torch.device], IpcPool] = open_ipc_pool,
                 clock: Callable[[], float] = time.monotonic, streams=None) -> None:
        self._layers = list(layers)
        self._g = g
        self._rank = rank
        self._copier = BlockCopier(resolve_layout(backend, self._layers, g), self._layers, g, streams)
        self._fetch, self._check_s, self._opener, self._clock = fetch_layout, check_s, opener, clock
        # one copy at a time: P's saves and D's load threads share the copier's side stream and the mapping
        self._lock = threading.Lock()
        entry = pool_entry(layout, rank)
        self._pool = opener(entry, self._layers[0].device)
        self._incarnation = entry.get("incarnation")
        self._checked = clock()

    def digest(self, vllm_blocks: Sequence[int], group_blocks: Sequence[list[int]] = ()) -> str:
        return blocks_digest(self._layers, [list(vllm_blocks)] * len(self._layers))

    def save(self, path: str | None, region_bytes: int, vllm_blocks: list[int], pd_blocks: list[int],
             group_blocks: Sequence[list[int]] = ()) -> None:
        _one_group(group_blocks)
        with self._lock:
            self._current()
            pool = self._pool.blocks(self._layers[0].dtype, self._g.block_shape())
            done = self._copier.gather(vllm_blocks, pool, pd_blocks)
            del pool
            done.wait()

    def engine_order(self) -> "torch.cuda.Event | None":
        """What a load started now must come after on vLLM's stream (BlockCopier.engine_order)."""
        return self._copier.engine_order()

    def load(self, path: str | None, region_bytes: int, pd_blocks: list[int], vllm_blocks: list[int],
             epoch: int | None = None, after: "torch.cuda.Event | None" = None,
             group_blocks: Sequence[list[int]] = ()) -> str | None:
        _one_group(group_blocks)
        if epoch is not None:
            return "bad-answer: a pull into a VRAM pool names a blocks_epoch; pools have no epoch table"
        with self._lock:
            self._current()
            pool = self._pool.blocks(self._layers[0].dtype, self._g.block_shape())
            if any(b < 0 or b >= pool.shape[0] for b in pd_blocks):
                return f"bad-blocks: D blocks {pd_blocks} outside the VRAM pool's {pool.shape[0]}"
            done = self._copier.scatter(pool, pd_blocks, vllm_blocks, after)
            del pool
            done.wait()
            return None

    def describe(self) -> str:
        return f"pd-connector's VRAM pool (incarnation {self._incarnation}, copies {self._copier.layout.name})"

    def _current(self) -> None:
        """Opens the pool again if pd-connector made a new one since the last look (called under the lock)."""
        now = self._clock()
        if self._check_s > 0 and now - self._checked < self._check_s:
            return
        entry = pool_entry(self._fetch(), self._rank)
        self._checked = now
        if entry.get("incarnation") == self._incarnation:
            return
        self._pool.close()  # before pd-connector may free the old memory's successor: CUDA's IPC rule
        self._pool = self._opener(entry, self._layers[0].device)
        self._incarnation = entry.get("incarnation")

    def close(self) -> None:
        with self._lock:
            self._pool.close()
