"""MLA's latent cache (pd.model.attention=mla): vLLM's MLA backends keep one latent row per token and layer,
``(num_blocks, block_size, kv_lora_rank + rope_dim)`` (MLACommonBackend.get_kv_cache_shape, the CPU and AMX MLA
backends and FlashMLA alike), and every TP rank holds the same rows. A pd block is ``[layer][latent][token][dim]``:
each layer's block moves as it is. P's rank 0 alone saves it (pd-connector holds it on one rank); every D rank
loads the whole latent from its own rank's file."""

import pytest
import torch

from pd_connector_vllm import layout
from pd_connector_vllm.layout import (CopyViews, GeometryMismatch, PdGeometry, check_geometry, read_pd_blocks,
                                      write_pd_blocks)
from pd_connector_vllm.specs import SaveSpec
from pd_connector_vllm.worker import PdWorker

from fakes import FakeClient

L, T, W, NB = 2, 4, 24, 6   # layers, block tokens, latent width (576 in DeepSeek), vLLM blocks
BLOCK_BYTES = L * T * W * 2


def mla_layout(tp=1, **over):
    return dict({"layers": L, "heads_per_rank": 1, "kv_heads": 1, "head_dim": W, "block_tokens": T,
                 "dtype_bytes": 2, "tp_size": tp, "block_bytes": BLOCK_BYTES, "attention": "mla",
                 "engine_id": "p0", "role": "producer"}, **over)


def latent_caches(seed=0, heads_axis=False):
    """Per layer (NB, T, W), or with ``heads_axis`` (NB, 1, T, W): vLLM's CPU model runner has handed the plugin
    each (the server's views keep a heads axis of 1)."""
    gen = torch.Generator().manual_seed(seed)
    shape = (NB, 1, T, W) if heads_axis else (NB, T, W)
    return {f"model.layers.{i}.self_attn.attn": torch.randn(*shape, generator=gen).to(torch.bfloat16)
            for i in range(L)}


def test_the_geometry_of_an_mla_layout_is_one_latent_plane_per_layer():
    g = PdGeometry.from_layout(mla_layout())
    assert (g.attention, g.planes, g.block_shape()) == ("mla", 1, (L, 1, 1, T, W))
    with pytest.raises(GeometryMismatch, match="block_bytes"):
        PdGeometry.from_layout(mla_layout(block_bytes=2 * BLOCK_BYTES))   # what K and V planes would make
    assert PdGeometry.from_layout({k: v for k, v in mla_layout(block_bytes=2 * BLOCK_BYTES).items()
                                   if k != "attention"}).attention == "mha", "a layout from before MLA is MHA"


@pytest.mark.parametrize("heads_axis", [False, True])
@pytest.mark.parametrize("by_torch", [False, True])
def test_a_pd_block_holds_each_layers_latent_rows_as_vllm_holds_them_and_reads_back(monkeypatch, by_torch,
                                                                                    heads_axis):
    if by_torch:
        monkeypatch.setattr(layout, "_numpy_view", lambda t, shape: None)
    layers = list(latent_caches(1, heads_axis).values())
    views = CopyViews(layers, latent=True)
    g = PdGeometry.from_layout(mla_layout())
    region = torch.full((5, *g.block_shape()), 3.0, dtype=torch.bfloat16)
    write_pd_blocks(layers, [4, 1], region, [0, 3], views=views)
    for l, t in enumerate(layers):
        assert torch.equal(region[0, l, 0, 0], t[4].view(T, W)) and torch.equal(region[3, l, 0, 0], t[1].view(T, W))
    assert (region[[1, 2, 4]] == 3.0).all(), "no other pd block touched"
    back = [torch.zeros_like(t) for t in layers]
    read_pd_blocks(region, back, [2, 5], [0, 3], views=CopyViews(back, latent=True))
    for t, b in zip(layers, back):
        assert torch.equal(b[2], t[4]) and torch.equal(b[5], t[1])
        assert not b[[0, 1, 3, 4]].any(), "no other vLLM block touched"


def test_each_mla_mismatch_is_named():
    latent = list(latent_caches().items())
    check_geometry(latent, PdGeometry.from_layout(mla_layout()), 1)
    check_geometry(list(latent_caches(heads_axis=True).items()), PdGeometry.from_layout(mla_layout()), 1)
    mha = dict(mla_layout(), attention="mha", block_bytes=2 * BLOCK_BYTES)
    with pytest.raises(GeometryMismatch, match=r"is an MLA latent cache, but pd-connector's pd.model.attention=mha "
                                               r"\(set mla, kv-heads 1, head-dim 24\)"):
        check_geometry(latent, PdGeometry.from_layout(mha), 1)
    heads = [(n, torch.zeros(NB, 2, T, 2 * W, dtype=torch.bfloat16)) for n, _ in latent]
    with pytest.raises(GeometryMismatch, match="is not an MLA latent cache"):
        check_geometry(heads, PdGeometry.from_layout(mla_layout()), 1)
    narrow = [(n, t[..., :16].contiguous()) for n, t in latent]
    with pytest.raises(GeometryMismatch, match=r"latent width: vLLM 16 \(kv_lora_rank \+ rope dim\), pd-connector "
                                               r"pd.model.head-dim=24"):
        check_geometry(narrow, PdGeometry.from_layout(mla_layout()), 1)


def test_on_p_rank_0_alone_saves_the_latent_into_the_one_file_pd_connector_names(tmp_path):
    kv0, kv1 = latent_caches(2, True), latent_caches(2, True)   # TP ranks of an MLA model hold the same latent
    path = tmp_path / "pd-p-r0.kv"
    path.write_bytes(bytes(4 * BLOCK_BYTES))
    spec = SaveSpec("r1", "r1", [3, 0], [2, 1], 6, [(str(path), 4 * BLOCK_BYTES)], "g1")
    rank1 = PdWorker(FakeClient(), tp_rank=1, tp_size=2, load_threads=1)
    rank1.register(kv1, mla_layout(tp=2))
    rank1.save([spec])
    assert not any(path.read_bytes()) and rank1._client.calls == [], "rank 1 neither copies nor gives back"
    rank0 = PdWorker(FakeClient(), tp_rank=0, tp_size=2, load_threads=1)
    rank0.register(kv0, mla_layout(tp=2))
    rank0.save([spec])
    on_disk = torch.frombuffer(bytearray(path.read_bytes()), dtype=torch.bfloat16).view(4, L, 1, 1, T, W)
    expected = torch.zeros_like(on_disk)
    write_pd_blocks(list(kv0.values()), [3, 0], expected, [2, 1], views=CopyViews(list(kv0.values()), latent=True))
    assert torch.equal(on_disk, expected) and rank0._client.calls == []
    two_files = SaveSpec("r2", "r2", [1], [0], 3, [(str(path), 4 * BLOCK_BYTES)] * 2, "g2")
    rank0.save([two_files])
    assert rank0._client.calls == [("batch", {"returns": ["g2"]})], "a grant of two files is no MLA producer's"
    for w in (rank0, rank1):
        w.shutdown()


def test_vllms_mla_cache_with_its_heads_axis_beside_an_mha_pd_connector_is_named_mla():
    """The 4-axis view (num_blocks, 1, block_size, 576) has the shape of a one-head multi-head cache too; vLLM says
    the model is MLA (model_config.use_mla), and the refusal names the attention, not head dims."""
    mha = dict(mla_layout(), attention="mha", block_bytes=2 * BLOCK_BYTES)
    caches = list(latent_caches(heads_axis=True).items())
    with pytest.raises(GeometryMismatch, match=r"is an MLA latent cache, but pd-connector's pd.model.attention=mha "
                                               r"\(set mla, kv-heads 1, head-dim 24\)"):
        check_geometry(caches, PdGeometry.from_layout(mha), 1, vllm_mla=True)
    w = PdWorker(FakeClient(), tp_rank=0, tp_size=1, load_threads=1, vllm_mla=True)
    with pytest.raises(GeometryMismatch, match="is an MLA latent cache"):
        w.register(dict(caches), mha)
    w.shutdown()
