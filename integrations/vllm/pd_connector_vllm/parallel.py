"""Which of vLLM's parallel layouts the plugin serves, checked once at start-up, each refusal naming its setting.

Tensor parallelism: each vLLM TP worker holds ``kv_heads / TP`` KV heads of every layer and saves and loads them
through the matching rank of the pd-connector beside it (``pd.tp-size`` equal to vLLM's TP: the worker checks
that against ``GET /v1/kv-layout``). P and D may run different TP sizes: D's pd-connector maps P's ranks onto its
own when it READs, and refuses a pull whose ratio it cannot map (the pull's 4xx names it).

Refused: pipeline parallelism (a pd-connector block holds every layer of a rank), context parallelism (vLLM shards
a sequence's tokens across ranks, pd-connector's blocks are whole), and a TP size above the model's KV heads or
not dividing them (vLLM would replicate or unevenly split heads; pd-connector gives each KV head to one rank).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Parallelism:
    tp_size: int
    total_kv_heads: int

    @classmethod
    def of(cls, vllm_config: Any) -> "Parallelism":
        """Reads vLLM's config; raises NotImplementedError naming the setting vLLM runs with that is not served."""
        parallel = vllm_config.parallel_config
        problems = []
        if parallel.pipeline_parallel_size != 1:
            problems.append(f"pipeline parallelism (--pipeline-parallel-size {parallel.pipeline_parallel_size}): "
                            "a pd-connector block holds every layer of its rank; run PP 1")
        for name, flag in (("decode_context_parallel_size", "--decode-context-parallel-size"),
                           ("prefill_context_parallel_size", "--prefill-context-parallel-size")):
            size = getattr(parallel, name, 1)
            if size != 1:
                problems.append(f"context parallelism ({flag} {size}): vLLM shards a sequence's tokens across "
                                "ranks, pd-connector's blocks hold whole token ranges")
        tp = int(parallel.tensor_parallel_size)
        heads = int(vllm_config.model_config.get_total_num_kv_heads())
        if tp > heads:
            problems.append(f"tensor parallelism (--tensor-parallel-size {tp}) above the model's {heads} KV heads: "
                            "vLLM replicates KV heads across ranks, pd-connector gives each KV head to one rank; "
                            f"run TP {heads} or less")
        elif heads % tp:
            problems.append(f"tensor parallelism (--tensor-parallel-size {tp}) that does not divide the model's "
                            f"{heads} KV heads")
        if problems:
            raise NotImplementedError("PdConnector does not serve this vLLM layout: " + "; ".join(problems))
        return cls(tp, heads)


def tp_rank() -> int:
    """This worker's tensor-parallel rank (vLLM's process group is up when the worker builds its connector)."""
    from vllm.distributed.parallel_state import get_tensor_model_parallel_rank
    return int(get_tensor_model_parallel_rank())
