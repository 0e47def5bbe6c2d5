"""KV layouts: vLLM's CPU paged cache and pd-connector's blocks, and the copies between them.

vLLM's CPU attention backend keeps one tensor per attention layer, shape
``(num_blocks, kv_heads, block_size, 2 * head_dim)``, read (cpu_attn.py) as
``view(num_blocks, kv_heads, 2 * block_size, head_dim).chunk(2, dim=2)``: inside a block, each head
holds its K plane and then its V plane, ``block_size * head_dim`` elements each. So a vLLM block of
one layer is ``[head][k|v][plane]``.

pd-connector's block (one rank) holds every layer: ``[layer][k|v][head][token][dim]``
(docs/engine-integration.md). A copy gathers the block from every layer's tensor and swaps the head
and k|v axes; each plane moves as it is.

The order *inside* a plane is the attention kernel's own: the CPU kernel packs it per ISA (with AMX,
one token's dims are spread over the plane, not in row ``token``), so the plugin never reads or
writes single tokens of a plane. That is why the token slots past the prompt in the last block go
out as vLLM holds them, as with vLLM's NIXL connector, and why P and D must run the same attention
backend and ISA (the start-up check cannot see the ISA).

An MLA model (pd.model.attention=mla) caches one latent row per token: vLLM's MLA backends, the CPU ones and
FlashMLA alike, keep ``(num_blocks, block_size, kv_lora_rank + rope_dim)`` per layer, one plane per block, and
pd-connector's block is ``[layer][latent][token][dim]``: each layer's plane moves as it is, the same way.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

import numpy as np
import torch

from .populate import Populator

log = logging.getLogger("vllm.pd_connector")


class GeometryMismatch(ValueError):
    """vLLM's KV cache and the pd-connector beside it disagree: no byte may cross."""


MHA = "mha"
MLA = "mla"


@dataclass(frozen=True)
class PdGeometry:
    """What GET /v1/kv-layout answers (one rank's view). ``attention``: ``mha`` (a K and a V plane per head) or
    ``mla`` (one latent plane, every rank the same)."""

    layers: int
    heads_per_rank: int
    head_dim: int
    block_tokens: int
    dtype_bytes: int
    tp_size: int
    block_bytes: int
    attention: str = MHA

    @classmethod
    def from_layout(cls, layout: dict[str, Any]) -> "PdGeometry":
        # a pd-connector from before MLA says no attention: it is MHA
        g = cls(int(layout["layers"]), int(layout["heads_per_rank"]), int(layout["head_dim"]),
                int(layout["block_tokens"]), int(layout["dtype_bytes"]), int(layout["tp_size"]),
                int(layout["block_bytes"]), str(layout.get("attention", MHA)))
        if g.attention not in (MHA, MLA):
            raise GeometryMismatch(f"pd-connector's attention {g.attention!r} is neither {MHA} nor {MLA}")
        expected = g.layers * g.planes * g.heads_per_rank * g.block_tokens * g.head_dim * g.dtype_bytes
        if expected != g.block_bytes:
            raise GeometryMismatch(f"pd-connector says block_bytes={g.block_bytes} but its geometry "
                                   f"makes {expected}")
        return g

    @property
    def planes(self) -> int:
        """Planes per layer and head: K and V, or MLA's one latent."""
        return 1 if self.attention == MLA else 2

    def block_shape(self) -> tuple[int, int, int, int, int]:
        return (self.layers, self.planes, self.heads_per_rank, self.block_tokens, self.head_dim)


_LAYER_INDEX = re.compile(r"(?:^|\.)(?:layers|h|blocks|block)\.(\d+)\.")


def order_layers(kv_caches: dict[str, torch.Tensor]) -> list[tuple[str, torch.Tensor]]:
    """The attention layers in model order (by the index in their name, e.g. model.layers.7.)."""
    def index(name: str) -> int:
        m = _LAYER_INDEX.search(name)
        if m is None:
            raise GeometryMismatch(f"cannot tell the layer index of KV cache {name!r}")
        return int(m.group(1))
    items = sorted(kv_caches.items(), key=lambda kv: index(kv[0]))
    indices = [index(n) for n, _ in items]
    if len(set(indices)) != len(indices):
        raise GeometryMismatch(f"two KV caches share a layer index: {[n for n, _ in items]}")
    return items


def check_geometry(layers: list[tuple[str, torch.Tensor]], pd: PdGeometry, vllm_tp: int,
                   vllm_mla: bool = False) -> None:
    """Raises GeometryMismatch naming every disagreement between vLLM's caches and pd-connector. ``vllm_mla``:
    vLLM runs the model with MLA (its cache's 4-axis view has a one-head multi-head cache's shape too)."""
    problems = []
    if not layers:
        raise GeometryMismatch("vLLM registered no KV cache tensors")
    if len(layers) != pd.layers:
        problems.append(f"layers: vLLM has {len(layers)} attention layers, pd-connector "
                        f"pd.model.layers={pd.layers}")
    if vllm_tp != pd.tp_size:
        problems.append(f"tensor parallel: vLLM TP={vllm_tp}, pd-connector pd.tp-size={pd.tp_size}")
    first_name, first = layers[0]
    for name, t in layers:
        if t.shape != first.shape or t.dtype != first.dtype:
            problems.append(f"layer {name} is {tuple(t.shape)} {t.dtype}, layer {first_name} "
                            f"{tuple(first.shape)} {first.dtype}: mixed layouts are not supported")
            break
    if first.dim() == 3 or pd.attention == MLA or vllm_mla:
        problems += _mla_problems(first, pd)
    elif first.dim() != 4 or first.shape[3] % 2:
        problems.append(f"KV cache tensor shape {tuple(first.shape)} is not vLLM's CPU layout "
                        "(num_blocks, kv_heads, block_size, 2*head_dim); only the CPU backend is supported")
    else:
        _, heads, block_size, two_dim = first.shape
        if heads != pd.heads_per_rank:
            problems.append(f"KV heads per rank: vLLM {heads}, pd-connector {pd.heads_per_rank} "
                            "(pd.model.kv-heads / pd.tp-size)")
        if block_size != pd.block_tokens:
            problems.append(f"block tokens: vLLM --block-size {block_size}, pd-connector "
                            f"pd.model.block-tokens={pd.block_tokens}")
        if two_dim // 2 != pd.head_dim:
            problems.append(f"head dim: vLLM {two_dim // 2}, pd-connector pd.model.head-dim={pd.head_dim}")
    if first.element_size() != pd.dtype_bytes:
        problems.append(f"dtype: vLLM KV cache is {first.dtype} ({first.element_size()} bytes), "
                        f"pd-connector pd.model.dtype-bytes={pd.dtype_bytes}")
    if problems:
        raise GeometryMismatch("vLLM's KV cache does not match the pd-connector beside it: "
                               + "; ".join(problems))


def kv_groups_problems(vllm_groups: str | None, declared: str | None) -> list[str]:
    """The disagreement between vLLM's KV cache groups (``window:<tokens>/<layers>,full/<layers>``, None for one
    group of full attention) and the ones pd-connector names (kv-layout's ``kv_groups``, pd.model.kv-groups)."""
    if vllm_groups == declared:
        return []
    if declared is None:
        return [f"KV cache groups: vLLM keeps this model's KV in groups {vllm_groups}, and pd-connector names none: "
                f"set pd.model.kv-groups={vllm_groups} so that a peer of other groups is refused at the handshake"]
    return [f"KV cache groups: vLLM {vllm_groups or 'one group of full attention'}, pd-connector "
            f"pd.model.kv-groups={declared}"]


def is_latent_cache(t: torch.Tensor) -> bool:
    """Whether ``t`` has an MLA latent cache's shape: (num_blocks, block_size, width), or (num_blocks, 1,
    block_size, width) as vLLM's views make it (a multi-head cache of one head per rank has that shape too)."""
    return t.dim() == 3 or (t.dim() == 4 and t.shape[1] == 1)


def _mla_problems(first: torch.Tensor, pd: PdGeometry) -> list[str]:
    """What differs between an MLA latent cache (num_blocks, [1,] block_size, latent width) and pd-connector."""
    if not is_latent_cache(first):
        return [f"pd-connector's pd.model.attention=mla, but vLLM's KV cache {tuple(first.shape)} is not an MLA "
                "latent cache (num_blocks, block_size, kv_lora_rank + rope dim)"]
    if pd.attention != MLA:
        return [f"vLLM's KV cache {tuple(first.shape)} is an MLA latent cache, but pd-connector's "
                f"pd.model.attention={pd.attention} (set mla, kv-heads 1, head-dim {first.shape[-1]})"]
    problems = []
    block_size, width = first.shape[-2:]
    if block_size != pd.block_tokens:
        problems.append(f"block tokens: vLLM --block-size {block_size}, pd-connector "
                        f"pd.model.block-tokens={pd.block_tokens}")
    if width != pd.head_dim:
        problems.append(f"latent width: vLLM {width} (kv_lora_rank + rope dim), pd-connector "
                        f"pd.model.head-dim={pd.head_dim}")
    if not first.is_contiguous():
        problems.append(f"MLA KV cache with strides {first.stride()}: a block's latent rows must be dense")
    return problems


def write_pd_blocks(layers: list[torch.Tensor], vllm_blocks: list[int], dst: torch.Tensor,
                    pd_blocks: list[int], only_layers: Sequence[int] | None = None,
                    views: CopyViews | None = None) -> None:
    """Copies vLLM blocks into pd-connector blocks ``dst[pd_blocks]`` (dst: (N, L, 2, H, T, D), e.g. P's whole KV
    file), as :func:`read_pd_blocks` copies the other way; with ``only_layers``, those layers' planes alone (P's
    copy beside the forward copies each layer once it is written). By torch, one ``copy_`` per block and layer, it
    took 1.5-2x as long (``bench/p_save_bench.py``)."""
    _copy_blocks(dst, layers, vllm_blocks, pd_blocks, to_file=True, only_layers=only_layers, views=views)


def read_pd_blocks(src: torch.Tensor, layers: list[torch.Tensor], vllm_blocks: list[int],
                   pd_blocks: list[int] | None = None, views: CopyViews | None = None,
                   only_layers: Sequence[int] | None = None) -> None:
    """Copies pd-connector blocks into vLLM's blocks, in order: ``src[pd_blocks[i]]`` (src: (N, L, 2, H, T, D),
    e.g. D's whole KV file) into ``vllm_blocks[i]``; without ``pd_blocks``, ``src[i]``; with ``only_layers``, those
    layers' planes alone (a KV cache group's)."""
    _copy_blocks(src, layers, vllm_blocks, list(range(len(vllm_blocks))) if pd_blocks is None else pd_blocks,
                 to_file=False, only_layers=only_layers, views=views)


def _copy_blocks(file: torch.Tensor, layers: list[torch.Tensor], vllm_blocks: list[int], pd_blocks: list[int],
                 to_file: bool, only_layers: Sequence[int] | None = None, views: "CopyViews | None" = None) -> None:
    """vLLM block ``vllm_blocks[i]`` to or from pd-connector block ``file[pd_blocks[i]]``, in place, no gather
    into a temporary: for each run of blocks consecutive on both sides, one strided copy per layer, done by
    numpy on the calling thread (the planes are contiguous, so it runs at memcpy speed). torch's ``copy_``
    would fork into the process's OpenMP pool, which vLLM's forward pass uses: on a busy 2-core host that made
    the same copy 3-20x slower. Tensors numpy cannot view (not contiguous, not in host memory) are copied by
    torch, one block and layer at a time. ``views``: the numpy views made once for these tensors (else made here)."""
    pd_blocks = [int(b) for b in pd_blocks]
    vllm_blocks = [int(b) for b in vllm_blocks]
    if len(pd_blocks) != len(vllm_blocks):
        raise ValueError(f"{len(pd_blocks)} pd blocks for {len(vllm_blocks)} vLLM blocks")
    chosen = range(len(layers)) if only_layers is None else [int(l) for l in only_layers]
    if any(l < 0 or l >= len(layers) for l in chosen):
        raise ValueError(f"layers {list(chosen)} outside the {len(layers)} registered")
    if views is None:
        views = CopyViews(layers)
    file_np = views.file(file)
    planes = views.planes
    if file_np is None or planes is None:
        for pb, vb in zip(pd_blocks, vllm_blocks):
            for l in chosen:
                t = layers[l]
                if views.latent:  # MLA: the block's latent rows are the layer's one plane
                    rows = t[vb].view(file.shape[-2:])
                    if to_file:
                        file[pb, l, 0, 0].copy_(rows)
                    else:
                        rows.copy_(file[pb, l, 0, 0])
                    continue
                n_blocks, heads, tokens, two_dim = t.shape
                if to_file:
                    file[pb, l].copy_(t[vb].reshape(heads, 2, tokens, two_dim // 2).permute(1, 0, 2, 3))
                else:
                    t[vb].view(heads, 2, tokens, two_dim // 2).copy_(file[pb, l].permute(1, 0, 2, 3))
        return
    for p0, v0, n in _runs(pd_blocks, vllm_blocks):
        for l in chosen:
            plane = planes[l]
            if to_file:
                np.copyto(file_np[p0:p0 + n, l], plane[v0:v0 + n].transpose(0, 2, 1, 3, 4))
            else:
                np.copyto(plane[v0:v0 + n], file_np[p0:p0 + n, l].transpose(0, 2, 1, 3, 4))


def numpy_copies(layers: list[torch.Tensor]) -> bool:
    """Whether the copies to and from these caches go by numpy (else by torch, block by block)."""
    return CopyViews(layers).planes is not None if layers and all(t.dim() in (3, 4) for t in layers) else False


class CopyViews:
    """vLLM's caches as numpy views of (blocks, heads, 2, tokens, dim) (an MLA cache's: (blocks, 1, 1, tokens,
    latent width)), made once for a registration, and the
    view of the last pd-connector file copied to or from: each view costs a few microseconds to make, which for
    a prompt of a few blocks (and for 24 layers) was as much as the copy itself. ``planes`` is None when numpy
    cannot view one of the caches (then the copies go by torch)."""

    def __init__(self, layers: Sequence[torch.Tensor], latent: bool | None = None) -> None:
        """``latent``: the caches are MLA's (pd.model.attention=mla); None: a 3-axis cache is, any other is not."""
        self.latent = bool(layers) and layers[0].dim() == 3 if latent is None else latent
        planes = [_numpy_view(t, _plane_shape(t, self.latent)) for t in layers]
        self.planes = None if any(p is None for p in planes) else planes
        # one attribute holding both, replaced whole: load threads read it concurrently, and a view must never be
        # paired with another mapping's tensor (a restarted pd-connector's new file)
        self._last: tuple[torch.Tensor, np.ndarray | None] | None = None

    def file(self, file: torch.Tensor) -> np.ndarray | None:
        """``file`` as numpy, or None; KvFiles hands out one tensor per mapping, so its view is made once."""
        last = self._last
        if last is not None and last[0] is file:
            return last[1]
        view = _numpy_view(file, file.shape)
        self._last = (file, view)
        return view

    def forget_file(self) -> None:
        """Lets the last file's mapping go (it is unmapped once nothing refers to it)."""
        self._last = None


def _plane_shape(t: torch.Tensor, latent: bool) -> tuple[int, ...]:
    if latent:
        return (t.shape[0], 1, 1, *t.shape[-2:])
    return (t.shape[0], t.shape[1], 2, t.shape[2], t.shape[3] // 2)


_SAME_SIZE_INT = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _numpy_view(t: torch.Tensor, shape: tuple[int, ...]) -> np.ndarray | None:
    """The tensor's memory as a numpy array of ``shape`` (elements as same-size ints: numpy has no bfloat16),
    never a copy; None if numpy cannot view it so."""
    try:
        a = t.detach().view(_SAME_SIZE_INT[t.element_size()]).numpy().view()
        a.shape = shape   # raises instead of copying when the memory does not allow it
        return a
    except (KeyError, RuntimeError, TypeError, ValueError, AttributeError):
        return None


def _runs(pd_blocks: list[int], vllm_blocks: list[int]):
    """(first pd block, first vLLM block, length) of each stretch consecutive on both sides."""
    i = 0
    while i < len(pd_blocks):
        n = 1
        while (i + n < len(pd_blocks) and pd_blocks[i + n] == pd_blocks[i] + n
               and vllm_blocks[i + n] == vllm_blocks[i] + n):
            n += 1
        yield pd_blocks[i], vllm_blocks[i], n
        i += n


EPOCH = np.dtype("<u8")  # one word per block in the epoch table after a D file's blocks


class _Mapped(NamedTuple):
    """One file as KvFiles holds it: which file (inode, device, mapped size) and its views."""

    inode: int
    device: int
    size: int
    mapping: np.memmap
    blocks: torch.Tensor
    epochs: np.ndarray | None
    populator: Populator


class KvFiles:
    """pd-connector's per-rank KV files (P's, which P's worker writes; D's, which D's worker reads pulled blocks
    from), mapped once each and mapped again when pd-connector restarts (a new file at the same path). Each new
    mapping is populated on a thread beside the engine (populate.py), so copies in its steps do not fault its
    pages in one by one; ``populator`` makes that thread (the tests' stand-in)."""

    def __init__(self, populator=Populator) -> None:
        self._lock = threading.Lock()
        self._populator = populator
        self._maps: dict[str, _Mapped] = {}

    def blocks(self, path: str, region_bytes: int, pd: PdGeometry, dtype: torch.dtype) -> torch.Tensor:
        """The file as a tensor (num_blocks, L, 2, H, T, D) of ``dtype``, shared with pd-connector."""
        return self._map(path, region_bytes, pd, dtype, False)[0]

    def blocks_and_epochs(self, path: str, region_bytes: int, pd: PdGeometry,
                          dtype: torch.dtype) -> tuple[torch.Tensor, np.ndarray]:
        """A D file's blocks and, from the same mapping (one file, even across a restart), its epoch table: one
        little-endian 64-bit word per block after them (pull replies' ``blocks_epoch``)."""
        return self._map(path, region_bytes, pd, dtype, True)

    def populator(self, path: str) -> Populator:
        """The thread populating the mapping of ``path`` now (KeyError if it is not mapped)."""
        with self._lock:
            return self._maps[path].populator

    def _map(self, path: str, region_bytes: int, pd: PdGeometry, dtype: torch.dtype,
             table: bool) -> tuple[torch.Tensor, np.ndarray | None]:
        st = os.stat(path)
        if region_bytes % pd.block_bytes:
            raise GeometryMismatch(f"{path}: region of {region_bytes} bytes is not a whole number of "
                                   f"{pd.block_bytes}-byte blocks")
        n_blocks = region_bytes // pd.block_bytes
        size = region_bytes + (n_blocks * EPOCH.itemsize if table else 0)
        with self._lock:
            cached = self._maps.get(path)
            if cached is not None and (cached.inode, cached.device, cached.size) == (st.st_ino, st.st_dev, size):
                return cached.blocks, cached.epochs
            if st.st_size < size:
                raise GeometryMismatch(f"{path} is {st.st_size} bytes, pd-connector said {region_bytes}"
                                       + (f" and an epoch table of {n_blocks} blocks" if table else ""))
            mm = np.memmap(path, dtype=np.uint8, mode="r+", shape=(size,))
            tensor = torch.from_numpy(mm[:region_bytes]).view(dtype).view(n_blocks, *pd.block_shape())
            # a plain ndarray over the mapping: indexing a memmap goes through its Python-level __getitem__
            epochs = mm[region_bytes:].view(EPOCH).view(np.ndarray) if table else None
            if cached is not None:
                cached.populator.stop(0)  # the file pd-connector replaced: no use populating it further
            self._maps[path] = _Mapped(st.st_ino, st.st_dev, size, mm, tensor, epochs,
                                       self._populator(mm, mm.ctypes.data, size, path))
            return tensor, epochs

    def close(self) -> None:
        """Stops the populating threads and drops the mappings; each is unmapped once no tensor refers to it
        any more."""
        with self._lock:
            maps, self._maps = self._maps, {}
        for path, mapped in maps.items():
            if not mapped.populator.stop():
                log.warning("the thread populating %s did not stop within 5 s", path)
