"""The glue between vLLM's connector API and the plugin's two sides: a declined load reaches vLLM's
scheduler as failed_recving (and finished_recving, as the base class requires), vLLM's block objects
become block ids, P's plan rides in the step's metadata. Built without an engine (no VllmConfig)."""

from dataclasses import dataclass

from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorTransferResults

from pd_connector_vllm.connector import PdConnector, PdConnectorMetadata
from pd_connector_vllm.scheduler import PdScheduler
from pd_connector_vllm.specs import LoadSpec, SaveSpec, StepPlan
from pd_connector_vllm.worker import LoadResults

from fakes import FakeRequest
from test_scheduler import FakeControl


def bare(**attrs):
    c = object.__new__(PdConnector)   # the glue only; __init__ needs a whole VllmConfig
    c._connector_metadata = None
    c._kv_cache_manager = None
    c._scheduler = None
    c._worker = None
    for k, v in attrs.items():
        setattr(c, k, v)
    return c


class RecordingWorker:
    def __init__(self, results=None):
        self.results = results or LoadResults()
        self.loads, self.saves, self.layers = [], [], []

    def take_results(self):
        r, self.results = self.results, LoadResults()
        return r

    def start_loads(self, loads, releases):
        self.loads.append((loads, releases))

    def save(self, specs):
        self.saves.append(specs)

    def layer_written(self, layer_name, specs):
        self.layers.append((layer_name, specs))


def test_a_declined_load_is_finished_and_failed_for_vllms_scheduler():
    worker = RecordingWorker(LoadResults(finished={"ok", "bad"}, failed={"bad": "lease_mismatch"}))
    c = bare(_worker=worker)
    r = c.get_transfer_results(set())
    assert isinstance(r, KVConnectorTransferResults)
    assert r.finished_recving == {"ok", "bad"} and r.failed_recving == {"bad"} and r.finished_sending == set()
    assert c.get_transfer_results(set()).finished_recving == set()      # reported once


def test_the_steps_plan_goes_to_the_worker_loads_at_start_saves_after_the_forward():
    worker = RecordingWorker()
    c = bare(_worker=worker)
    load = LoadSpec("d", "d", [1, 2], {"do_remote_prefill": True}, [4], 0)
    save = SaveSpec("p", "p", [1], [9], 2, [("/dev/shm/f", 64)])
    c.bind_connector_metadata(PdConnectorMetadata(StepPlan(saves=[save], loads=[load])))
    c.start_load_kv(None)
    c.save_kv_layer("model.layers.0.self_attn.attn", None, None)        # the forward wrote layer 0
    c.wait_for_save()
    assert worker.loads == [([load], [])] and worker.saves == [[save]]
    assert worker.layers == [("model.layers.0.self_attn.attn", [save])]
    c.clear_connector_metadata()
    c.save_kv_layer("model.layers.0.self_attn.attn", None, None)
    c.wait_for_save()                                                    # an empty step: nothing
    assert worker.saves == [[save]] and len(worker.layers) == 1


@dataclass
class Block:
    block_id: int
    block_hash: object = None


class Blocks:
    """vLLM's KVCacheBlocks as the connector uses it: one group."""

    def __init__(self, blocks):
        self.blocks = [blocks]

    def get_block_ids(self):
        return ([b.block_id for b in self.blocks[0]],)

    def get_unhashed_block_ids(self):
        return [b.block_id for b in self.blocks[0] if b.block_hash is None]


class Manager:
    def get_block_ids(self, req_id):
        return ([7, 8, 9],)


@dataclass
class Output:
    num_scheduled_tokens: dict


def test_vllms_blocks_become_the_plans_block_ids_on_both_sides():
    control = FakeControl()
    c = bare(_scheduler=PdScheduler(control, 4), _kv_cache_manager=Manager())
    d_req = FakeRequest("d1", list(range(10)), {"do_remote_prefill": True, "remote_engine_id": "p",
                                                "remote_request_id": "r", "remote_host": "h", "remote_port": 1,
                                                "remote_num_tokens": 10})
    assert c.get_num_new_matched_tokens(d_req, 4) == (6, True)
    c.update_state_after_alloc(d_req, Blocks([Block(3, block_hash="cached"), Block(5), Block(6)]), 6)
    p_req = FakeRequest("p1", list(range(10)), {"do_remote_decode": True})
    c.update_state_after_alloc(p_req, Blocks([Block(7), Block(8), Block(9)]), 0)
    meta = c.build_connector_meta(Output({"p1": 10}))
    (load,) = meta.plan.loads
    assert load.vllm_blocks == [5, 6] and load.first_pd_block == 1
    (save,) = meta.plan.saves
    assert save.vllm_blocks == [7, 8, 9] and save.pd_blocks == [40, 41, 42]


class UnreadBlocks(Blocks):
    def get_block_ids(self):
        raise AssertionError("a P request's allocation read vLLM's block ids")

    def get_unhashed_block_ids(self):
        raise AssertionError("a P request's allocation read vLLM's block ids")


def test_a_p_requests_allocation_costs_the_scheduler_thread_no_read_of_vllms_blocks():
    """P copies from the blocks vLLM holds at the step's plan; reading them at the allocation too was time on
    vLLM's scheduler thread that the request's timing line did not count."""
    control = FakeControl()
    c = bare(_scheduler=PdScheduler(control, 4), _kv_cache_manager=Manager())
    p_req = FakeRequest("p1", list(range(10)), {"do_remote_decode": True})
    assert c.get_num_new_matched_tokens(p_req, 0) == (0, False)
    c.update_state_after_alloc(p_req, UnreadBlocks([Block(7), Block(8), Block(9)]), 0)
    (save,) = c.build_connector_meta(Output({"p1": 10})).plan.saves
    assert save.vllm_blocks == [7, 8, 9]


def test_the_kv_cache_groups_it_serves_and_the_ones_it_refuses_by_name():
    """vLLM's own KV cache specs: groups of full attention and sliding windows of one block size (vLLM's hybrid
    manager stays on beside the plugin: it declares SupportsHMA), or one group of MLA, are served; a window group
    keeps its window's blocks and one more; Mamba, mixed block sizes and MLA beside another group are refused,
    named."""
    import torch
    from vllm.distributed.kv_transfer.kv_connector.v1.base import SupportsHMA
    from vllm.v1.kv_cache_interface import (FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec, MambaSpec,
                                            MLAAttentionSpec, SlidingWindowSpec)
    from pd_connector_vllm.kv_groups import group_windows, kv_groups_refusal, layer_groups

    def config(*specs):
        return KVCacheConfig(num_blocks=8, kv_cache_tensors=[], kv_cache_groups=[
            KVCacheGroupSpec([f"model.layers.{i}.attn"], spec) for i, spec in enumerate(specs)])

    full = FullAttentionSpec(128, num_kv_heads=2, head_size=32, dtype=torch.bfloat16)
    latent = MLAAttentionSpec(128, num_kv_heads=1, head_size=576, dtype=torch.bfloat16)
    window = SlidingWindowSpec(128, num_kv_heads=2, head_size=32, dtype=torch.bfloat16, sliding_window=64)
    wide = SlidingWindowSpec(128, num_kv_heads=2, head_size=32, dtype=torch.bfloat16, sliding_window=1024)
    assert issubclass(PdConnector, SupportsHMA)
    for served in (config(full), config(latent), config(window, full), config(window), config(wide, window, full)):
        assert kv_groups_refusal(served) is None
    assert group_windows(config(full)) is None and group_windows(config(latent)) is None
    assert group_windows(config(window, full)) == [2, 0], "64 tokens: one block, and one more"
    assert group_windows(config(wide, window, full)) == [9, 2, 0]
    assert layer_groups(config(window, full)) == {"model.layers.0.attn": 0, "model.layers.1.attn": 1}
    small = FullAttentionSpec(16, num_kv_heads=2, head_size=32, dtype=torch.bfloat16)
    assert "of block sizes [16, 128]" in kv_groups_refusal(config(window, small))
    assert "MLAAttentionSpec, SlidingWindowSpec" in kv_groups_refusal(config(latent, window))
    mamba = MambaSpec(shapes=((4, 8),), dtypes=(torch.float32,), block_size=128)
    refusal = kv_groups_refusal(config(full, mamba))
    assert "vLLM made 2 group(s): FullAttentionSpec, MambaSpec" in refusal and "Mamba" in refusal, refusal


def test_the_groups_are_named_as_pd_connector_takes_them_and_a_disagreement_refuses_the_start():
    import torch
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec, SlidingWindowSpec
    from pd_connector_vllm.kv_groups import group_names
    from pd_connector_vllm.layout import kv_groups_problems

    full = FullAttentionSpec(128, num_kv_heads=2, head_size=32, dtype=torch.bfloat16)
    window = SlidingWindowSpec(128, num_kv_heads=2, head_size=32, dtype=torch.bfloat16, sliding_window=64)
    config = KVCacheConfig(num_blocks=8, kv_cache_tensors=[], kv_cache_groups=[
        KVCacheGroupSpec(["model.layers.0.attn"], window), KVCacheGroupSpec(["model.layers.1.attn"], full)])
    assert group_names(config) == "window:64/1,full/1", "each group's kind, then its number of layers"
    named = "window:64/1,full/1"
    assert kv_groups_problems(named, named) == [] and kv_groups_problems(None, None) == []
    (unset,) = kv_groups_problems(named, None)
    assert "set pd.model.kv-groups=window:64/1,full/1" in unset
    (other,) = kv_groups_problems(named, "window:128/1,full/1")
    assert other == "KV cache groups: vLLM window:64/1,full/1, pd-connector pd.model.kv-groups=window:128/1,full/1"
    (one,) = kv_groups_problems(None, named)
    assert "vLLM one group of full attention" in one


def test_a_pd_block_holds_full_attention_first_then_the_windows_from_the_widest_down():
    from pd_connector_vllm.kv_groups import block_order

    assert block_order("window:64/1,full/1") == [1, 0]
    assert block_order("window:64/5,full/6,window:512/3") == [1, 2, 0], "pd-connector's KvGroups order"
    assert block_order("full/2,window:128/1,window:128/1") == [0, 1, 2], "ties in vLLM's order"
