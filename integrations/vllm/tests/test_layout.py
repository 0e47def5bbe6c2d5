"""The copies between vLLM's CPU KV cache and pd-connector's blocks, checked against the way vLLM's
CPU attention reads its cache and against pd-connector's documented byte layout."""

import re

import numpy as np
import pytest
import torch

from pd_connector_vllm import layout
from pd_connector_vllm.layout import (
    GeometryMismatch,
    KvFiles,
    PdGeometry,
    check_geometry,
    order_layers,
    read_pd_blocks,
    write_pd_blocks,
)

LAYERS, HEADS, TOKENS, DIM, VLLM_BLOCKS = 3, 2, 8, 4, 6


def geometry(**over):
    g = dict(layers=LAYERS, heads_per_rank=HEADS, head_dim=DIM, block_tokens=TOKENS, dtype_bytes=4, tp_size=1)
    g.update(over)
    g["block_bytes"] = g["layers"] * 2 * g["heads_per_rank"] * g["block_tokens"] * g["head_dim"] * g["dtype_bytes"]
    return PdGeometry(**g)


def vllm_layers(seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(VLLM_BLOCKS, HEADS, TOKENS, 2 * DIM, generator=gen) for _ in range(LAYERS)]


def vllm_key_value(layer: torch.Tensor):
    """K and V caches exactly as vLLM's CPU attention backend derives them (cpu_attn.py)."""
    num_blocks, num_kv_heads, block_size, _ = layer.size()
    kv = layer.view((num_blocks, num_kv_heads, block_size * 2, -1))
    return kv.chunk(2, dim=2)


def test_a_pd_block_holds_each_layers_k_and_v_of_every_head_as_vllm_attention_reads_them():
    layers = vllm_layers()
    dst = torch.zeros(5, LAYERS, 2, HEADS, TOKENS, DIM)
    write_pd_blocks(layers, [4, 1], dst, [3, 0])
    for vb, pb in ((4, 3), (1, 0)):
        for l, layer in enumerate(layers):
            key, value = vllm_key_value(layer)
            assert torch.equal(dst[pb, l, 0], key[vb])    # [head][token][dim]
            assert torch.equal(dst[pb, l, 1], value[vb])
    assert not dst[1].any() and not dst[2].any() and not dst[4].any()


def test_the_bytes_sit_where_docs_engine_integration_says():
    layers = vllm_layers(1)
    g = geometry()
    dst = torch.zeros(2, *g.block_shape())
    write_pd_blocks(layers, [2], dst, [1])
    raw = dst.numpy().tobytes()
    key, value = vllm_key_value(layers[2])
    for (l, k, h, t, d) in [(2, 0, 1, 5, 3), (2, 1, 0, 7, 0), (2, 1, 1, 0, 2)]:
        b = 1
        offset = b * g.block_bytes + ((((l * 2 + k) * HEADS + h) * TOKENS + t) * DIM + d) * 4
        got = np.frombuffer(raw[offset:offset + 4], dtype="<f4")[0]
        want = (key if k == 0 else value)[2][h][t][d].item()
        assert got == want


def test_pd_blocks_read_back_into_other_vllm_blocks_equal_the_originals_and_touch_nothing_else():
    src_layers = vllm_layers(2)
    pd = torch.zeros(4, LAYERS, 2, HEADS, TOKENS, DIM)
    write_pd_blocks(src_layers, [0, 3, 5], pd, [1, 2, 3])
    dst_layers = [torch.full_like(t, 7.0) for t in src_layers]
    read_pd_blocks(pd[1:4], dst_layers, [5, 0, 2])
    for s, d in zip(src_layers, dst_layers):
        assert torch.equal(d[5], s[0]) and torch.equal(d[0], s[3]) and torch.equal(d[2], s[5])
        assert (d[1] == 7.0).all() and (d[3] == 7.0).all() and (d[4] == 7.0).all()


def test_read_takes_each_pd_block_where_pd_blocks_says_without_a_gather():
    """D's worker reads the pulled blocks straight out of D's whole KV file, in block_ids order."""
    src_layers = vllm_layers(2)
    region = torch.full((8, LAYERS, 2, HEADS, TOKENS, DIM), 3.0)
    write_pd_blocks(src_layers, [0, 3, 5], region, [6, 1, 4])
    dst_layers = [torch.full_like(t, 7.0) for t in src_layers]
    read_pd_blocks(region, dst_layers, [5, 0, 2], pd_blocks=[6, 1, 4])
    for s, d in zip(src_layers, dst_layers):
        assert torch.equal(d[5], s[0]) and torch.equal(d[0], s[3]) and torch.equal(d[2], s[5])
        assert (d[1] == 7.0).all() and (d[3] == 7.0).all() and (d[4] == 7.0).all()
    with pytest.raises(ValueError):
        read_pd_blocks(region, dst_layers, [5, 0], pd_blocks=[6, 1, 4])


def test_runs_of_consecutive_blocks_and_the_torch_fallback_read_alike(monkeypatch):
    """One numpy copy per run of blocks consecutive on both sides, or (for tensors numpy cannot view) torch per
    block: the same bytes, bfloat16 included."""
    src_layers = [t.to(torch.bfloat16) for t in vllm_layers(4)]
    region = torch.zeros(8, LAYERS, 2, HEADS, TOKENS, DIM, dtype=torch.bfloat16)
    pd_blocks, vllm_blocks = [2, 3, 4, 7, 0, 1], [1, 2, 3, 5, 0, 4]   # runs (2..4 -> 1..3), (7 -> 5), (0 -> 0), (1 -> 4)
    write_pd_blocks(src_layers, list(range(6)), region, pd_blocks)
    assert [r for r in layout._runs(pd_blocks, vllm_blocks)] == [(2, 1, 3), (7, 5, 1), (0, 0, 1), (1, 4, 1)]
    by_numpy = [torch.zeros_like(t) for t in src_layers]
    read_pd_blocks(region, by_numpy, vllm_blocks, pd_blocks=pd_blocks)
    monkeypatch.setattr(layout, "_numpy_view", lambda t, shape: None)
    by_torch = [torch.zeros_like(t) for t in src_layers]
    read_pd_blocks(region, by_torch, vllm_blocks, pd_blocks=pd_blocks)
    for s, a, b in zip(src_layers, by_numpy, by_torch):
        assert torch.equal(a, b)
        for i, vb in enumerate(vllm_blocks):
            assert torch.equal(a[vb], s[i]), (vb, i)


def test_runs_of_consecutive_blocks_and_the_torch_fallback_write_alike(monkeypatch):
    """P's copy as D's: one numpy copy per run of blocks consecutive on both sides, or torch per block where
    numpy cannot view a tensor; the same bytes, bfloat16 included, and no other block touched."""
    src_layers = [t.to(torch.bfloat16) for t in vllm_layers(5)]
    vllm_blocks, pd_blocks = [1, 2, 3, 5, 0, 4], [2, 3, 4, 7, 0, 1]   # runs (1..3 -> 2..4), (5 -> 7), (0 -> 0), (4 -> 1)
    by_numpy = torch.full((9, LAYERS, 2, HEADS, TOKENS, DIM), 3.0, dtype=torch.bfloat16)
    write_pd_blocks(src_layers, vllm_blocks, by_numpy, pd_blocks)
    monkeypatch.setattr(layout, "_numpy_view", lambda t, shape: None)
    by_torch = torch.full_like(by_numpy, 3.0)
    write_pd_blocks(src_layers, vllm_blocks, by_torch, pd_blocks)
    assert torch.equal(by_numpy.view(torch.int16), by_torch.view(torch.int16))
    assert (by_numpy[[5, 6, 8]] == 3.0).all()
    for vb, pb in zip(vllm_blocks, pd_blocks):
        for l, layer in enumerate(src_layers):
            key, value = vllm_key_value(layer)
            assert torch.equal(by_numpy[pb, l, 0], key[vb]) and torch.equal(by_numpy[pb, l, 1], value[vb])
    with pytest.raises(ValueError):
        write_pd_blocks(src_layers, [1, 2], by_numpy, [2])


@pytest.mark.parametrize("numpy_copies", [True, False])
def test_a_copy_of_some_layers_writes_those_layers_planes_and_nothing_else(monkeypatch, numpy_copies):
    """P's copy beside the forward copies layer by layer: one layer's copy writes that layer's K and V of each
    block, the other layers stay as they were; every layer copied alone adds up to the whole copy."""
    if not numpy_copies:
        monkeypatch.setattr(layout, "_numpy_view", lambda t, shape: None)
    src_layers = vllm_layers(6)
    vllm_blocks, pd_blocks = [4, 0, 1], [5, 1, 2]
    whole = torch.full((7, LAYERS, 2, HEADS, TOKENS, DIM), 3.0)
    write_pd_blocks(src_layers, vllm_blocks, whole, pd_blocks)
    by_layer = torch.full_like(whole, 3.0)
    write_pd_blocks(src_layers, vllm_blocks, by_layer, pd_blocks, only_layers=[1])
    assert (by_layer[:, [0, 2]] == 3.0).all(), "a layer not named was written"
    assert torch.equal(by_layer[pd_blocks, 1], whole[pd_blocks, 1])
    for l in (2, 0):
        write_pd_blocks(src_layers, vllm_blocks, by_layer, pd_blocks, only_layers=(l,))
    assert torch.equal(by_layer, whole)
    with pytest.raises(ValueError, match="outside the 3 registered"):
        write_pd_blocks(src_layers, vllm_blocks, by_layer, pd_blocks, only_layers=[3])


def test_layers_are_ordered_by_their_index_not_by_name():
    caches = {f"model.layers.{i}.self_attn.attn": torch.zeros(1) + i for i in (10, 2, 1)}
    assert [n for n, _ in order_layers(caches)] == [
        "model.layers.1.self_attn.attn", "model.layers.2.self_attn.attn", "model.layers.10.self_attn.attn"]


def test_a_cache_without_a_layer_index_is_refused():
    with pytest.raises(GeometryMismatch, match="layer index"):
        order_layers({"attn": torch.zeros(1)})


def named(layers):
    return [(f"model.layers.{i}.self_attn.attn", t) for i, t in enumerate(layers)]


def test_matching_geometry_passes():
    check_geometry(named(vllm_layers()), geometry(), vllm_tp=1)


@pytest.mark.parametrize("over, says", [
    (dict(layers=4), "layers: vLLM has 3"),
    (dict(heads_per_rank=1), "KV heads per rank: vLLM 2, pd-connector 1"),
    (dict(block_tokens=16), "block tokens: vLLM --block-size 8, pd-connector pd.model.block-tokens=16"),
    (dict(head_dim=8), "head dim: vLLM 4, pd-connector pd.model.head-dim=8"),
    (dict(dtype_bytes=2), "dtype: vLLM KV cache is torch.float32 (4 bytes), pd-connector pd.model.dtype-bytes=2"),
    (dict(tp_size=2), "vLLM TP=1, pd-connector pd.tp-size=2"),
])
def test_each_mismatch_is_a_clear_error(over, says):
    with pytest.raises(GeometryMismatch, match=re.escape(says)):
        check_geometry(named(vllm_layers()), geometry(**over), vllm_tp=1)


def test_a_non_cpu_layout_is_refused_by_name():
    flash = [torch.zeros(2, VLLM_BLOCKS, TOKENS, HEADS, DIM) for _ in range(LAYERS)]
    with pytest.raises(GeometryMismatch, match="only the CPU backend"):
        check_geometry(named(flash), geometry(), vllm_tp=1)


def test_a_layout_whose_block_bytes_disagree_with_its_geometry_is_refused():
    with pytest.raises(GeometryMismatch, match="block_bytes"):
        PdGeometry.from_layout(dict(layers=2, heads_per_rank=2, head_dim=32, block_tokens=128, dtype_bytes=4,
                                    tp_size=1, block_bytes=12345))


def test_kv_files_write_through_to_the_file_and_map_a_replaced_file_again(tmp_path):
    g = geometry()
    path = tmp_path / "pd-p-r0.kv"
    path.write_bytes(bytes(4 * g.block_bytes))
    files = KvFiles()
    blocks = files.blocks(str(path), 4 * g.block_bytes, g, torch.float32)
    blocks[2].fill_(1.5)
    on_disk = np.frombuffer(path.read_bytes(), dtype="<f4").reshape(4, -1)
    assert (on_disk[2] == 1.5).all() and not on_disk[[0, 1, 3]].any()
    assert files.blocks(str(path), 4 * g.block_bytes, g, torch.float32) is blocks
    path.unlink()                                  # P restarted: a new file under the same name
    path.write_bytes(bytes(4 * g.block_bytes))
    again = files.blocks(str(path), 4 * g.block_bytes, g, torch.float32)
    assert again is not blocks and not again.any()
    files.close()


def test_a_region_that_is_not_whole_blocks_is_refused(tmp_path):
    g = geometry()
    path = tmp_path / "f.kv"
    path.write_bytes(bytes(g.block_bytes + 4))
    with pytest.raises(GeometryMismatch, match="whole number"):
        KvFiles().blocks(str(path), g.block_bytes + 4, g, torch.float32)
