"""The KV copies written once over torch tensors: vLLM's paged cache <-> pd-connector's blocks, for the CPU
cache with the DRAM pool (today's path) and for a GPU cache with a VRAM pool (docs/gpu.md).

pd-connector's block (one rank) holds every layer, ``[layer][k|v][head][token][dim]``
(docs/engine-integration.md); a pool is a tensor ``(num_blocks, layers, 2, heads, tokens, dim)`` of the
cache's dtype: a KV file mapped in host memory (layout.KvFiles) or pd-connector's VRAM pool opened over CUDA
IPC (gpu_pool.IpcPool). vLLM's cache is one tensor per attention layer; what its axes mean depends on the
attention backend, not only on the shape, so a layout is resolved from the backend's name and the tensors
at start-up, and anything else is refused by name (UnsupportedLayout):

``CPU_ATTN``
    vLLM's CPU backend: ``(num_blocks, kv_heads, block_size, 2 * head_dim)``, read as
    ``view(num_blocks, kv_heads, 2 * block_size, head_dim)``: per head the K plane then the V plane, each
    moved as it is (the kernel's order inside a plane is its own; layout.py says why). Byte for byte what
    layout.write_pd_blocks / read_pd_blocks do (tests/test_gpu_layout.py holds them equal).
``FLASH_ATTN`` (packed, vLLM 0.32)
    the per-layer view ``(num_blocks, kv_heads, block_size, 2 * head_dim)`` with K and V packed in the last
    axis (``split(head_dim, dim=-1)``, flash_attn.py), in any of vLLM's physical layouts (``LBHNC``, the
    HND-like one vLLM's NIXL connector asks for, ``LBNHC`` its NHD, and the block- and head-major ones): the
    copies index logical axes, so the strides only need the last axis dense.
``FLASHINFER``, ``TRITON_ATTN`` (vLLM 0.32)
    the same packed per-layer view as ``FLASH_ATTN``'s: both backends split K and V out of the last axis
    (``split(head_size, dim=-1)``, flashinfer.py after permuting to its physical order, triton_attn.py), so the
    same copies serve them.
MLA backends (``FLASHMLA``, ``TRITON_MLA``, ``CUTLASS_MLA``, ``FLASHINFER_MLA``, ``FLASH_ATTN_MLA``, ``CPU_MLA``,
``AMX_MLA``; pd.model.attention=mla)
    ``(num_blocks, block_size, kv_lora_rank + rope_dim)``, one latent row per token (mla_attention.py reads
    ``[..., :kv_lora_rank]`` and ``[..., kv_lora_rank:]``), or the same as ``(num_blocks, 1, block_size, width)``,
    the logical view vLLM's GPU worker makes (kv_cache_interface.create_kv_cache_views); FlashMLA's 64-token
    blocks are pd-connector's
    block tokens. A block's rows move as they are, into the pool block's one plane of the layer. The sparse
    MLA backends and the fp8 ``fp8_ds_mla`` cache (656 bytes a token with its scales) are refused by name.
``FLASH_ATTN`` (split K|V, vLLM before the packed cache)
    ``(2, num_blocks, block_size, kv_heads, head_dim)`` as vLLM hands it over, whose memory under HND is
    ``[2, num_blocks, kv_heads, block_size, head_dim]`` (what vLLM's NIXL connector registers on GPU) and
    under NHD the shape itself.

One copy of ``n`` blocks is two kernels per layer (an index_select of the blocks, an index_copy_ into the
other side), on the cache's device. With a CUDA cache the copies run on a side stream that first waits for
vLLM's stream: P's gather, on vLLM's thread, for its current stream (the forward that wrote the KV); D's scatter,
on a load thread, for the event the load's step recorded on vLLM's stream (``engine_order``: the zeroing of the
blocks it fills came before). Each returns a CopyDone whose CUDA event orders
what comes after: P commits to pd-connector only once ``done()`` (the bytes are in the pool that D READs);
D reports a load finished only once ``done()`` and before that makes the compute stream wait
(``order_compute_stream()``) so no forward reads a block half-written; neither side may reuse the pool
blocks or vLLM blocks of a copy before it is done. A CPU copy is done when it returns. A CUDA cache with a
host pool copies across devices (the device-to-host part synchronously; its CopyDone covers the rest).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from .layout import MLA, GeometryMismatch, PdGeometry

# vLLM's attention backend names (AttentionBackend.get_name()).
CPU_ATTN = "CPU_ATTN"
FLASH_ATTN = "FLASH_ATTN"
# the backends that keep K and V packed in the last axis of (num_blocks, kv_heads, block_size, 2 * head_dim)
PACKED = (FLASH_ATTN, "FLASHINFER", "TRITON_ATTN")
# the dense MLA backends: (num_blocks, block_size, latent width)
MLA_BACKENDS = ("FLASHMLA", "TRITON_MLA", "CUTLASS_MLA", "FLASHINFER_MLA", "FLASH_ATTN_MLA", "CPU_MLA", "AMX_MLA")


class UnsupportedLayout(GeometryMismatch):
    """vLLM's KV cache is laid out in a way these copies do not know: refused at start-up, by name."""


# A view of one layer's blocks ``idx`` (logical axes) -> (n, 2, H, T, D), and the inverse for writing.
_Gather = Callable[[torch.Tensor, torch.Tensor, PdGeometry], torch.Tensor]
_Scatter = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, PdGeometry], None]


def _cpu_gather(t: torch.Tensor, idx: torch.Tensor, g: PdGeometry) -> torch.Tensor:
    sel = t.index_select(0, idx)  # (n, H, T, 2D), dense
    return sel.view(sel.shape[0], g.heads_per_rank, 2, g.block_tokens, g.head_dim).transpose(1, 2)


def _cpu_scatter(t: torch.Tensor, idx: torch.Tensor, blocks: torch.Tensor, g: PdGeometry) -> None:
    n = blocks.shape[0]
    planes = blocks.transpose(1, 2).contiguous()  # (n, H, 2, T, D): per head the K plane, then the V plane
    t.index_copy_(0, idx, planes.view(n, g.heads_per_rank, g.block_tokens, 2 * g.head_dim))


def _packed_gather(t: torch.Tensor, idx: torch.Tensor, g: PdGeometry) -> torch.Tensor:
    sel = t.index_select(0, idx)  # (n, H, T, 2D)
    return sel.unflatten(-1, (2, g.head_dim)).permute(0, 3, 1, 2, 4)


def _packed_scatter(t: torch.Tensor, idx: torch.Tensor, blocks: torch.Tensor, g: PdGeometry) -> None:
    t.index_copy_(0, idx, blocks.permute(0, 2, 3, 1, 4).flatten(-2))


def _split_gather(t: torch.Tensor, idx: torch.Tensor, g: PdGeometry) -> torch.Tensor:
    return t.index_select(1, idx).permute(1, 0, 3, 2, 4)  # (2, n, T, H, D) -> (n, 2, H, T, D)


def _split_scatter(t: torch.Tensor, idx: torch.Tensor, blocks: torch.Tensor, g: PdGeometry) -> None:
    t.index_copy_(1, idx, blocks.permute(1, 0, 3, 2, 4))


def _mla_gather(t: torch.Tensor, idx: torch.Tensor, g: PdGeometry) -> torch.Tensor:
    sel = t.index_select(0, idx)  # (n, T, W) or (n, 1, T, W), dense
    return sel.view(sel.shape[0], 1, 1, g.block_tokens, g.head_dim)


def _mla_scatter(t: torch.Tensor, idx: torch.Tensor, blocks: torch.Tensor, g: PdGeometry) -> None:
    t.index_copy_(0, idx, blocks.reshape(blocks.shape[0], *t.shape[1:]))


@dataclass(frozen=True)
class CacheLayout:
    """A resolved layout: its name (for logs and refusals), where the block axis is, and the two copies."""

    name: str
    block_dim: int
    gather: _Gather
    scatter: _Scatter


def resolve_layout(backend: str, layers: Sequence[torch.Tensor], pd: PdGeometry) -> CacheLayout:
    """The layout of vLLM's caches under ``backend``; raises UnsupportedLayout or GeometryMismatch naming why."""
    if not layers:
        raise GeometryMismatch("vLLM registered no KV cache tensors")
    first = layers[0]
    for t in layers:
        if t.shape != first.shape or t.dtype != first.dtype or t.stride() != first.stride():
            raise UnsupportedLayout(f"mixed KV cache layouts ({tuple(t.shape)} {t.dtype} stride {t.stride()} "
                                    f"beside {tuple(first.shape)} {first.dtype} stride {first.stride()}) are not "
                                    "supported")
    h, n, d = pd.heads_per_rank, pd.block_tokens, pd.head_dim
    shape = tuple(first.shape)
    known = backend == CPU_ATTN or backend in PACKED or backend in MLA_BACKENDS
    if known and (backend in MLA_BACKENDS) != (pd.attention == MLA):
        raise GeometryMismatch(f"vLLM's attention backend {backend!r} with pd-connector's pd.model.attention="
                               f"{pd.attention}: an MLA backend needs mla, any other mha")
    if backend in MLA_BACKENDS:
        if shape[1:] not in ((n, d), (1, n, d)):
            raise GeometryMismatch(f"{backend} KV cache {shape} is not (num_blocks, {n}, {d}) (block tokens, latent "
                                   "width kv_lora_rank + rope dim: pd-connector's head dim)")
        if first.stride(-1) != 1 or first.stride(-2) != d:
            raise UnsupportedLayout(f"{backend} KV cache with strides {first.stride()}: a block's latent rows must "
                                    "be dense")
        layout = CacheLayout(f"{backend} latent", 0, _mla_gather, _mla_scatter)
    elif backend == CPU_ATTN:
        if len(shape) != 4 or shape[1:] != (h, n, 2 * d):
            raise GeometryMismatch(f"CPU_ATTN KV cache {shape} is not (num_blocks, {h}, {n}, {2 * d}) "
                                   "(kv heads per rank, block tokens, 2 x head dim of pd-connector)")
        if not first.is_contiguous():
            raise UnsupportedLayout(f"CPU_ATTN KV cache with strides {first.stride()}: the CPU kernel reads a "
                                    "dense (num_blocks, kv_heads, 2 * block_size, head_dim) view")
        layout = CacheLayout("CPU_ATTN", 0, _cpu_gather, _cpu_scatter)
    elif backend in PACKED and len(shape) == 4:
        if shape[1:] != (h, n, 2 * d):
            raise GeometryMismatch(f"{backend} KV cache {shape} is not (num_blocks, {h}, {n}, {2 * d}) "
                                   "(kv heads per rank, block tokens, K|V packed: 2 x head dim of pd-connector)")
        if first.stride(-1) != 1:
            raise UnsupportedLayout(f"{backend} KV cache with strides {first.stride()}: its last axis (K|V of a "
                                    "token and head) must be dense")
        layout = CacheLayout(f"{backend} packed K|V, {_physical(first.stride()[1:3])}", 0, _packed_gather,
                             _packed_scatter)
    elif backend == FLASH_ATTN and len(shape) == 5 and shape[0] == 2:
        if shape[2:] != (n, h, d):
            raise GeometryMismatch(f"FLASH_ATTN KV cache {shape} is not (2, num_blocks, {n}, {h}, {d}) "
                                   "(block tokens, kv heads per rank, head dim of pd-connector)")
        if first.stride(-1) != 1:
            raise UnsupportedLayout(f"FLASH_ATTN KV cache with strides {first.stride()}: head_dim must be dense")
        physical = _physical((first.stride(3), first.stride(2)))
        layout = CacheLayout(f"FLASH_ATTN split K|V, {physical}", 1, _split_gather, _split_scatter)
    else:
        raise UnsupportedLayout(
            f"vLLM's attention backend {backend!r} with KV cache tensors {shape} is not supported by pd-connector's "
            f"copies (supported: {CPU_ATTN} (num_blocks, kv_heads, block_size, 2*head_dim); {', '.join(PACKED)} "
            f"packed (num_blocks, kv_heads, block_size, 2*head_dim) in any vLLM layout; {FLASH_ATTN} split (2, "
            f"num_blocks, block_size, kv_heads, head_dim); {', '.join(MLA_BACKENDS)} (num_blocks, block_size, "
            "latent width)). Sparse MLA, linear attention and Mamba caches are refused")
    if first.element_size() != pd.dtype_bytes:
        raise GeometryMismatch(f"dtype: vLLM KV cache is {first.dtype} ({first.element_size()} bytes), "
                               f"pd-connector pd.model.dtype-bytes={pd.dtype_bytes}")
    if len(layers) != pd.layers:
        raise GeometryMismatch(f"layers: vLLM has {len(layers)} attention layers, pd-connector "
                               f"pd.model.layers={pd.layers}")
    return layout


def _physical(head_and_token_strides: Sequence[int]) -> str:
    """HND when a head's tokens are nearer than the heads of a token, else NHD."""
    head, token = head_and_token_strides
    return "HND" if head >= token else "NHD"


class CopyDone:
    """The end of one copy: on CUDA an event recorded after it on its side stream; on CPU already done."""

    def __init__(self, event: "torch.cuda.Event | None" = None, device: torch.device | None = None) -> None:
        self._event = event
        self._device = device

    def done(self) -> bool:
        return self._event is None or self._event.query()

    def wait(self) -> None:
        """Blocks the calling thread until the copy has finished."""
        if self._event is not None:
            self._event.synchronize()

    def order_compute_stream(self) -> None:
        """Makes the device's current stream wait for the copy (no host wait): kernels queued after it see it."""
        if self._event is not None:
            torch.cuda.current_stream(self._device).wait_event(self._event)


class BlockCopier:
    """Copies blocks between vLLM's layer tensors and a pool tensor (N, L, 2, H, T, D), on any devices.

    With CUDA layer tensors the copier owns one side stream on their device (made here, used for every copy);
    it is thread-confined to its caller like the worker it serves.
    """

    def __init__(self, layout: CacheLayout, layers: Sequence[torch.Tensor], pd: PdGeometry, streams=None) -> None:
        """``streams`` is the CUDA stream API (``torch.cuda`` for CUDA layer tensors, none for CPU ones; tests
        give a recording stand-in)."""
        self._layout = layout
        self._layers = list(layers)
        self._pd = pd
        self._device = self._layers[0].device
        self._cuda = streams if streams is not None else (torch.cuda if self._device.type == "cuda" else None)
        self._stream = self._cuda.Stream(device=self._device) if self._cuda is not None else None

    @property
    def layout(self) -> CacheLayout:
        return self._layout

    def check_pool(self, pool: torch.Tensor) -> None:
        """Raises GeometryMismatch unless ``pool`` is (N, L, 2, H, T, D) of the cache's dtype, dense."""
        want = self._pd.block_shape()
        if pool.dim() != 6 or tuple(pool.shape[1:]) != want:
            raise GeometryMismatch(f"pool tensor {tuple(pool.shape)} is not (num_blocks, {', '.join(map(str, want))})")
        if pool.dtype != self._layers[0].dtype:
            raise GeometryMismatch(f"pool dtype {pool.dtype} is not the KV cache's {self._layers[0].dtype}")
        if not pool.is_contiguous():
            raise GeometryMismatch("the pool must be dense: pd-connector READs its blocks as bytes")

    def gather(self, vllm_blocks: Sequence[int], pool: torch.Tensor, pool_blocks: Sequence[int]) -> CopyDone:
        """P: vLLM blocks -> pool blocks, in order (vllm_blocks[i] into pool_blocks[i])."""
        self._check(vllm_blocks, pool, pool_blocks)
        if not vllm_blocks:
            return CopyDone()
        with self._on_side_stream():
            src_idx = self._index(vllm_blocks, self._device)
            dst_idx = self._index(pool_blocks, pool.device)
            for l, t in enumerate(self._layers):
                blocks = self._layout.gather(t, src_idx, self._pd)
                if blocks.device != pool.device:
                    blocks = blocks.to(pool.device)
                pool[:, l].index_copy_(0, dst_idx, blocks)
            return self._record()

    def engine_order(self) -> "torch.cuda.Event | None":
        """An event recorded now on the calling thread's current stream: called on vLLM's thread in its step
        (``start_load_kv``), it marks what vLLM queued before the loads began, the zeroing of newly allocated
        blocks among it; None without CUDA."""
        if self._stream is None:
            return None
        event = self._cuda.Event()
        event.record(self._cuda.current_stream(self._device))
        return event

    def scatter(self, pool: torch.Tensor, pool_blocks: Sequence[int], vllm_blocks: Sequence[int],
                after: "torch.cuda.Event | None" = None) -> CopyDone:
        """D: pool blocks -> vLLM blocks, in order (pool_blocks[i] into vllm_blocks[i]), after ``after`` (the
        :meth:`engine_order` of the step that started the load). A load runs on a load thread, whose current
        stream is not vLLM's: waiting for it instead would let vLLM's zeroing of the same blocks land after the
        copy, or make the copy wait for every forward (the legacy default stream)."""
        self._check(vllm_blocks, pool, pool_blocks)
        if not vllm_blocks:
            return CopyDone()
        with self._on_side_stream(after):
            src_idx = self._index(pool_blocks, pool.device)
            dst_idx = self._index(vllm_blocks, self._device)
            for l, t in enumerate(self._layers):
                blocks = pool[:, l].index_select(0, src_idx)
                if blocks.device != self._device:
                    blocks = blocks.to(self._device)
                self._layout.scatter(t, dst_idx, blocks, self._pd)
            return self._record()

    def _check(self, vllm_blocks: Sequence[int], pool: torch.Tensor, pool_blocks: Sequence[int]) -> None:
        if len(vllm_blocks) != len(pool_blocks):
            raise ValueError(f"{len(vllm_blocks)} vLLM blocks for {len(pool_blocks)} pool blocks")
        self.check_pool(pool)
        vllm_count = self._layers[0].shape[self._layout.block_dim]
        for name, ids, count in (("vLLM", vllm_blocks, vllm_count), ("pool", pool_blocks, pool.shape[0])):
            bad = [b for b in ids if not 0 <= b < count]
            if bad:
                raise ValueError(f"{name} block ids {bad} outside 0..{count - 1}")
        if len(set(pool_blocks)) != len(pool_blocks):
            raise ValueError(f"pool block ids repeat: {list(pool_blocks)}")
        if len(set(vllm_blocks)) != len(vllm_blocks):
            raise ValueError(f"vLLM block ids repeat: {list(vllm_blocks)}")

    @staticmethod
    def _index(ids: Sequence[int], device: torch.device) -> torch.Tensor:
        return torch.tensor(list(ids), dtype=torch.long, device=device)

    def _on_side_stream(self, after: "torch.cuda.Event | None" = None):
        if self._stream is None:
            return _NoStream()
        if after is not None:
            self._stream.wait_event(after)
        else:
            # P's gather, on vLLM's thread in its step: the side stream sees everything queued on the compute
            # stream before this copy (the forward that wrote the KV)
            self._stream.wait_stream(self._cuda.current_stream(self._device))
        return self._cuda.stream(self._stream)

    def _record(self) -> CopyDone:
        if self._stream is None:
            return CopyDone()
        event = self._cuda.Event()
        event.record(self._stream)
        return CopyDone(event, self._device)


class _NoStream:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
