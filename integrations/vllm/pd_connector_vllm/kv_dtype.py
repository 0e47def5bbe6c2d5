"""The KV cache's element type by name, checked against the one the pd-connector beside it declares.

pd-connector moves KV as bytes and never converts them. Bytes of one fp8 format read as the other, or bfloat16
read as float16, are another model's KV with the right width, so the width check (``pd.model.dtype-bytes``)
cannot see the difference; the name can. pd-connector's ``pd.model.kv-dtype`` puts the name in the handshake
(a peer of another type is refused there), and this module makes sure the name is vLLM's: vLLM's
``--kv-cache-dtype`` resolved (``auto`` is the model's dtype, ``fp8`` is ``fp8_e4m3``).

A quantized cache needs the name declared: without it a decoder of the other fp8 format would be taken. Its
per-layer scales come from the checkpoint (vLLM 0.32 computes none at run time), so P and D serving the same
checkpoint agree on them; the handshake does not carry them.
"""

from __future__ import annotations

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
