"""vLLM KV caches as each supported attention backend lays them out and reads them, on any device: the cases
tests/test_gpu_layout.py runs on CPU tensors and scripts/gpu/gpu_check.py on CUDA tensors.

Each case builds per-layer tensors the way vLLM allocates them (a dense buffer in the physical order, viewed
in the logical axes) and reads a block back the way the backend's kernel does (``kv_of``: its K and V of
block b as (2, heads, tokens, dim)). Torch only: no vLLM needed (test_gpu_layout.py checks the builders
against vLLM's own views where vLLM is installed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

# vLLM 0.32's KVCacheLayout stride orders over logical [L, B, H, N, C] (vllm/v1/kv_cache_layout.py)
VLLM_LAYOUTS = {
    "LBHNC": (0, 1, 2, 3, 4),
    "LBNHC": (0, 1, 3, 2, 4),
    "LHBNC": (0, 2, 1, 3, 4),
    "BLHNC": (1, 0, 2, 3, 4),
    "BLNHC": (1, 0, 3, 2, 4),
    "BHLNC": (1, 2, 0, 3, 4),
}


@dataclass(frozen=True)
class Case:
    name: str
    backend: str
    build: Callable[..., list[torch.Tensor]]  # (layers, blocks, heads, tokens, dim, dtype, device, generator)
    kv_of: Callable[[torch.Tensor, int, int], torch.Tensor]  # (layer tensor, block, head_dim) -> (2, H, T, D)


_INT_OF_SIZE = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def bits(x: torch.Tensor) -> torch.Tensor:
    """The tensor's elements as integers of the same width: copies compare bit for bit (NaN patterns too)."""
    return x.view(_INT_OF_SIZE[x.element_size()])


def _fill(t: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Random bytes in a dense tensor: nearly every element distinct, so a misplaced one shows."""
    t.view(torch.uint8).copy_(torch.randint(0, 256, (t.numel() * t.element_size(),), generator=gen,
                                            dtype=torch.uint8).view(t.view(torch.uint8).shape))
    return t


def cpu_attn_build(layers, blocks, heads, tokens, dim, dtype, device, gen):
    out = []
    for _ in range(layers):
        t = torch.empty(blocks, heads, tokens, 2 * dim, dtype=dtype)
        out.append(_fill(t, gen).to(device))
    return out


def cpu_attn_kv(t: torch.Tensor, b: int, dim: int) -> torch.Tensor:
    """cpu_attn.py: view(num_blocks, kv_heads, 2 * block_size, head_dim).chunk(2, dim=2)."""
    n, h, tokens, _ = t.shape
    key, value = t.view(n, h, 2 * tokens, dim).chunk(2, dim=2)
    return torch.stack((key[b], value[b]))


def packed_build(order):
    def build(layers, blocks, heads, tokens, dim, dtype, device, gen):
        logical = (layers, blocks, heads, tokens, 2 * dim)
        physical = torch.empty([logical[i] for i in order], dtype=dtype)
        _fill(physical, gen)
        physical = physical.to(device)
        inverse = [order.index(i) for i in range(5)]
        view = physical.permute(*inverse)  # logical [L, B, H, N, C], vLLM's strides for this layout
        return [view[l] for l in range(layers)]
    return build


def packed_kv(t: torch.Tensor, b: int, dim: int) -> torch.Tensor:
    """flash_attn.py (vLLM 0.32): kv_cache.transpose(1, 2).split(head_size, dim=-1), each (B, N, H, D)."""
    key, value = t.transpose(1, 2).split(dim, dim=-1)
    return torch.stack((key[b].transpose(0, 1), value[b].transpose(0, 1)))


def split_build(hnd: bool):
    def build(layers, blocks, heads, tokens, dim, dtype, device, gen):
        out = []
        for _ in range(layers):
            if hnd:  # memory [2, num_blocks, kv_heads, block_size, head_dim], handed over as (2, B, N, H, D)
                raw = _fill(torch.empty(2, blocks, heads, tokens, dim, dtype=dtype), gen).to(device)
                out.append(raw.permute(0, 1, 3, 2, 4))
            else:
                out.append(_fill(torch.empty(2, blocks, tokens, heads, dim, dtype=dtype), gen).to(device))
        return out
    return build


def split_kv(t: torch.Tensor, b: int, dim: int) -> torch.Tensor:
    """flash_attn.py before the packed cache: kv_cache.unbind(0), each (B, N, H, D)."""
    key, value = t.unbind(0)
    return torch.stack((key[b].transpose(0, 1), value[b].transpose(0, 1)))


CASES = [Case("CPU_ATTN", "CPU_ATTN", cpu_attn_build, cpu_attn_kv)]
CASES += [Case(f"FLASH_ATTN packed {name}", "FLASH_ATTN", packed_build(order), packed_kv)
          for name, order in VLLM_LAYOUTS.items()]
# flashinfer.py and triton_attn.py (vLLM 0.32) split the same packed view: the HND and NHD layouts of each
CASES += [Case(f"{backend} packed {name}", backend, packed_build(VLLM_LAYOUTS[name]), packed_kv)
          for backend in ("FLASHINFER", "TRITON_ATTN") for name in ("LBHNC", "LBNHC")]
CASES += [Case("FLASH_ATTN split HND", "FLASH_ATTN", split_build(True), split_kv),
          Case("FLASH_ATTN split NHD", "FLASH_ATTN", split_build(False), split_kv)]


def mla_build(layers, blocks, tokens, width, dtype, device, gen):
    """An MLA backend's per-layer latent cache: (num_blocks, block_size, kv_lora_rank + rope_dim), dense."""
    return [_fill(torch.empty(blocks, tokens, width, dtype=dtype), gen).to(device) for _ in range(layers)]


def mla_latent_of(t: torch.Tensor, b: int, kv_lora_rank: int) -> tuple[torch.Tensor, torch.Tensor]:
    """mla_attention.py: a block's kv_c rows ``[..., :kv_lora_rank]`` and its k_pe rows ``[..., kv_lora_rank:]``."""
    return t[b, :, :kv_lora_rank], t[b, :, kv_lora_rank:]


# the dense MLA backends gpu_layout accepts, FlashMLA with its 64-token blocks among them
MLA_BACKENDS = ["FLASHMLA", "TRITON_MLA", "CUTLASS_MLA", "FLASHINFER_MLA", "FLASH_ATTN_MLA", "CPU_MLA", "AMX_MLA"]


def pd_block_offset(l: int, kv: int, h: int, t: int, d: int, heads: int, tokens: int, dim: int) -> int:
    """The element offset of (layer, k|v, head, token, dim) inside one pd-connector block
    (docs/engine-integration.md: [layer][k|v][head][token][dim])."""
    return (((l * 2 + kv) * heads + h) * tokens + t) * dim + d
