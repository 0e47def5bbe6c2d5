"""What the scheduler side tells the worker side each step (picklable plain data)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class SaveSpec:
    """P: after this step's forward, copy the prompt's vLLM blocks into the granted pd blocks."""

    request_id: str
    pd_request_id: str
    vllm_blocks: list[int]
    pd_blocks: list[int]
    num_tokens: int
    rank_files: list[tuple[str, int]]  # per TP rank: (kv_file, region_bytes)
    grant_id: str = ""  # the grant the pd blocks came from: given back whole if the copy fails
    # with several KV cache groups (a sliding-window group beside a full one), each group's blocks to copy, in
    # order, aligned to the end of pd_blocks (a window group's are the prompt's last ones); empty: one group,
    # vllm_blocks for every layer
    group_blocks: list[list[int]] = field(default_factory=list)


@dataclass
class LoadSpec:
    """D: pull P's KV through the local pd-connector and copy pd blocks
    ``first_pd_block..`` into ``vllm_blocks`` (the blocks a local prefix-cache hit did not fill).
    With no ``vllm_blocks`` the pull only releases P's lease (the request ended before its load)."""

    request_id: str
    pd_request_id: str
    token_ids: list[int]
    params: dict[str, Any]
    vllm_blocks: list[int] = field(default_factory=list)
    first_pd_block: int = 0
    group_blocks: list[list[int]] = field(default_factory=list)  # as SaveSpec's, aligned to the load's end


@dataclass
class StepPlan:
    saves: list[SaveSpec] = field(default_factory=list)
    loads: list[LoadSpec] = field(default_factory=list)
    releases: list[LoadSpec] = field(default_factory=list)
