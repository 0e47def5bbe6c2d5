"""vLLM's KV cache groups as the plugin serves them: which it takes, how many of a request's blocks each keeps, and
their names as pd-connector's ``pd.model.kv-groups`` takes them (docs/vllm.md, "Sliding windows").

Plain functions over vLLM's ``KVCacheConfig`` (its groups' ``kv_cache_spec`` and ``layer_names``), read by type
name so that the tests build them from vLLM's own spec classes without an engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vllm.v1.kv_cache_interface import KVCacheConfig

# What a KV cache group may hold: full attention, a sliding window (Gemma 3's, gpt-oss's local layers) and MLA's
# latent (one group of it: DeepSeek's models have no window).
SERVED_SPECS = ("FullAttentionSpec", "SlidingWindowSpec", "MLAAttentionSpec")


def kv_groups_refusal(kv_cache_config: "KVCacheConfig") -> str | None:
    """Why the plugin cannot serve this model's KV cache groups, naming them; None when it can."""
    groups = kv_cache_config.kv_cache_groups
    specs = [type(g.kv_cache_spec).__name__ for g in groups]
    sizes = {g.kv_cache_spec.block_size for g in groups}
    if groups and all(s in SERVED_SPECS for s in specs) and len(sizes) == 1 and (
            len(groups) == 1 or "MLAAttentionSpec" not in specs):
        return None
    why = (f"of block sizes {sorted(sizes)}" if len(sizes) > 1 and all(s in SERVED_SPECS for s in specs)
           else f"{', '.join(specs) or 'none'}")
    return (f"PdConnector serves KV cache groups of full attention and sliding windows of one block size, or one "
            f"group of MLA ({', '.join(SERVED_SPECS)}); vLLM made {len(groups)} group(s): {why}. Linear attention and "
            "Mamba layers (Qwen3-Next, Jamba) keep state, not blocks, and are not supported")


def group_windows(kv_cache_config: "KVCacheConfig") -> list[int] | None:
    """How many of a request's last blocks each group keeps (0: all), as vLLM's NIXL connector counts a window:
    its tokens' blocks and one more, for a window not aligned to blocks; None for one group of full attention."""
    windows = []
    for g in kv_cache_config.kv_cache_groups:
        spec = g.kv_cache_spec
        window = getattr(spec, "sliding_window", None) if type(spec).__name__ == "SlidingWindowSpec" else None
        windows.append(-(-window // spec.block_size) + 1 if window else 0)
    return windows if any(windows) or len(windows) > 1 else None


def group_names(kv_cache_config: "KVCacheConfig") -> str:
    """The groups as pd.model.kv-groups names them: ``window:<tokens>`` or ``full`` each, then ``/<layers>``, in
    vLLM's order."""
    return ",".join((f"window:{g.kv_cache_spec.sliding_window}" if type(g.kv_cache_spec).__name__ == "SlidingWindowSpec"
                     else "full") + f"/{len(g.layer_names)}" for g in kv_cache_config.kv_cache_groups)


def block_order(kv_groups: str) -> list[int]:
    """The groups (indices in vLLM's order) as their layers lie in a pd block, pd-connector's rule (KvGroups): full
    attention first, then the windows from the widest down, ties in vLLM's order. A reader then needs a prefix of
    a block: its full layers always, a window's for the request's last blocks only."""
    windows = [0 if item.startswith("full") else int(item.split("/")[0].removeprefix("window:"))
               for item in kv_groups.split(",")]
    return sorted(range(len(windows)), key=lambda g: (windows[g] != 0, -windows[g], g))


def layer_groups(kv_cache_config: "KVCacheConfig") -> dict[str, int]:
    return {name: i for i, g in enumerate(kv_cache_config.kv_cache_groups) for name in g.layer_names}
