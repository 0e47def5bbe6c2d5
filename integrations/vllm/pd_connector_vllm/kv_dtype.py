"""The KV cache's element type by name, checked against the one the pd-connector beside it declares.

pd-connector moves KV as bytes and never converts them. Bytes of one fp8 format read as the other, or bfloat16
read as float16, are another model's KV with the right width, so the width check (``pd.model.dtype-bytes``)
cannot see the difference; the name can. pd-connector's ``pd.model.kv-dtype`` puts the name in the handshake
(a peer of another type is refused there), and this module makes sure the name is vLLM's: vLLM's
``--kv-cache-dtype`` resolved (``auto`` is the model's dtype, ``fp8`` is ``fp8_e4m3``).

A quantized cache needs the name declared: without it a decoder of the other fp8 format would be taken. Its
bytes also mean nothing without the per-layer K and V scales vLLM multiplies them by: the checkpoint's (vLLM 0.32
computes none at run time, and takes only one scale a tensor), else 1.0. ``scales_fingerprint`` names them in 16
hex digits, which pd-connector's ``pd.model.kv-scales`` puts in the handshake (``unit``, or unset, for all 1.0), and
``scales_problems`` makes sure the name is vLLM's: P and D under other scales are refused rather than read.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any, Mapping, Sequence

import torch

from .layout import GeometryMismatch

QUANTIZED = ("fp8_e4m3", "fp8_e5m2")
NAMED = ("bfloat16", "float16", "float32") + QUANTIZED
_ALIASES = {"fp8": "fp8_e4m3", "half": "float16", "float": "float32"}
_OF_TORCH = {torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float32: "float32"}


def resolve(cache_dtype: str | None, model_dtype: torch.dtype) -> str:
    """vLLM's ``--kv-cache-dtype`` by the name pd-connector knows it under; GeometryMismatch naming it when
    pd-connector cannot move it as plain bytes of one element type (fp8_inc, the MLA-only and 4-bit formats)."""
    if cache_dtype in (None, "auto"):
        name = _OF_TORCH.get(model_dtype)
        if name is None:
            raise GeometryMismatch(f"vLLM's KV cache takes the model's dtype {model_dtype}, which pd-connector has no "
                                   f"name for (it knows {', '.join(NAMED)})")
        return name
    name = _ALIASES.get(cache_dtype, cache_dtype)
    if name not in NAMED:
        raise GeometryMismatch(f"vLLM's --kv-cache-dtype {cache_dtype} is refused: pd-connector moves a KV cache of "
                               f"one named element type as bytes ({', '.join(NAMED)}), and cannot check that P and D "
                               f"agree on another format")
    return name


def check(name: str, declared: str | None) -> list[str]:
    """The disagreements between vLLM's KV dtype ``name`` and the one pd-connector declares (``kv_dtype`` of its
    kv-layout, None when it declares only a width)."""
    if declared is None:
        if name in QUANTIZED:
            return [f"KV dtype: vLLM's cache is {name}, and pd-connector names none: set pd.model.kv-dtype={name} "
                    "so that a peer of another fp8 format is refused at the handshake"]
        return []
    if declared != name:
        return [f"KV dtype: vLLM's cache is {name}, pd-connector pd.model.kv-dtype={declared}"]
    return []


UNIT = "unit"


def layer_scales(forward_context: Mapping[str, Any], names: Sequence[str]) -> list[tuple[float, float]]:
    """Each layer's K and V scale, in the order of ``names``, from vLLM's attention layers (its compilation
    config's ``static_forward_context``) after the weights have loaded. An MLA layer's one latent takes K's."""
    scales = []
    for name in names:
        layer = forward_context.get(name)
        if layer is None or not hasattr(layer, "_k_scale_float"):
            raise GeometryMismatch(f"vLLM's attention layer {name} has no KV scales to check against pd-connector's "
                                   f"pd.model.kv-scales")
        k = float(layer._k_scale_float)
        scales.append((k, float(getattr(layer, "_v_scale_float", k))))
    return scales


def scales_fingerprint(scales: Sequence[tuple[float, float]]) -> str:
    """``unit`` where every scale is 1.0, else 16 hex digits of SHA-256 over the scales as little-endian
    doubles, layer by layer, K then V: what pd.model.kv-scales takes."""
    if all(k == 1.0 and v == 1.0 for k, v in scales):
        return UNIT
    digest = hashlib.sha256()
    for k, v in scales:
        digest.update(struct.pack("<dd", k, v))
    return digest.hexdigest()[:16]


def scales_problems(fingerprint: str, declared: str | None) -> list[str]:
    """The disagreement between vLLM's scales (``scales_fingerprint``) and the ones pd-connector declares
    (``kv_scales`` of its kv-layout; None for all 1.0)."""
    if fingerprint == (declared or UNIT):
        return []
    if fingerprint == UNIT:
        return [f"KV scales: vLLM's fp8 cache has every scale 1.0 (the checkpoint gives none), pd-connector "
                f"pd.model.kv-scales={declared}"]
    return [f"KV scales: vLLM's fp8 cache has the checkpoint's per-layer scales {fingerprint}, pd-connector "
            + (f"pd.model.kv-scales={declared}" if declared else "names none (all 1.0)")
            + f": set pd.model.kv-scales={fingerprint} so that a peer under other scales is refused at the handshake"]
