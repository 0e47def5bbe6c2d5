"""Which of vLLM's parallel layouts the plugin serves: TP that divides the model's KV heads; every other layout is
refused at start-up with a sentence naming the setting."""

from types import SimpleNamespace

import pytest

from pd_connector_vllm.parallel import Parallelism


def config(tp=1, pp=1, kv_heads=2, dcp=1, pcp=1):
    parallel = SimpleNamespace(tensor_parallel_size=tp, pipeline_parallel_size=pp,
                               decode_context_parallel_size=dcp, prefill_context_parallel_size=pcp)
    model = SimpleNamespace(get_total_num_kv_heads=lambda: kv_heads)
    return SimpleNamespace(parallel_config=parallel, model_config=model)


@pytest.mark.parametrize("tp, heads", [(1, 2), (2, 2), (2, 8), (4, 8)])
def test_tensor_parallelism_that_divides_the_kv_heads_is_served(tp, heads):
    assert Parallelism.of(config(tp=tp, kv_heads=heads)) == Parallelism(tp, heads)


@pytest.mark.parametrize("kw, named", [
    (dict(pp=2), "pipeline parallelism (--pipeline-parallel-size 2)"),
    (dict(tp=4, kv_heads=2), "above the model's 2 KV heads: vLLM replicates KV heads across ranks"),
    (dict(tp=4, kv_heads=6), "does not divide the model's 6 KV heads"),
    (dict(dcp=2), "context parallelism (--decode-context-parallel-size 2)"),
    (dict(pcp=2), "context parallelism (--prefill-context-parallel-size 2)"),
])
def test_other_layouts_are_refused_naming_the_setting(kw, named):
    with pytest.raises(NotImplementedError, match="PdConnector does not serve this vLLM layout") as refused:
        Parallelism.of(config(**kw))
    assert named in str(refused.value)


def test_every_problem_is_named_at_once():
    with pytest.raises(NotImplementedError) as refused:
        Parallelism.of(config(tp=4, pp=2, kv_heads=2))
    assert "pipeline parallelism" in str(refused.value) and "replicates KV heads" in str(refused.value)
