"""The copies of gpu_layout.py on CPU tensors, over every accepted layout: what lands in a pool block is what the
backend's own kernel reads from the vLLM block, at the byte offsets docs/engine-integration.md documents
([layer][k|v][head][token][dim]); the way back restores it; the CPU layout is byte for byte today's copy
(layout.write_pd_blocks / read_pd_blocks); other layouts are refused by name. The same cases on CUDA tensors
are scripts/gpu-check.sh's; the CUDA tests here say they did not run where there is no GPU."""

import numpy as np
import pytest
import torch

from kv_cases import CASES, MLA_BACKENDS, VLLM_LAYOUTS, bits, mla_build, mla_latent_of, packed_build, pd_block_offset
from pd_connector_vllm.gpu_layout import BlockCopier, CopyDone, UnsupportedLayout, resolve_layout
from pd_connector_vllm.layout import GeometryMismatch, PdGeometry, read_pd_blocks, write_pd_blocks

LAYERS, HEADS, TOKENS, DIM, VLLM_BLOCKS, POOL_BLOCKS = 3, 2, 8, 4, 7, 6
DTYPES = [torch.float32, torch.bfloat16]


def geometry(dtype=torch.float32, layers=LAYERS, heads=HEADS, tokens=TOKENS, dim=DIM):
    size = torch.empty((), dtype=dtype).element_size()
    return PdGeometry(layers, heads, dim, tokens, size, 1, layers * 2 * heads * tokens * dim * size)


def build(case, dtype=torch.float32, seed=0, device="cpu"):
    gen = torch.Generator().manual_seed(seed)
    return case.build(LAYERS, VLLM_BLOCKS, HEADS, TOKENS, DIM, dtype, torch.device(device), gen)


def pool(dtype=torch.float32, device="cpu"):
    return torch.zeros(POOL_BLOCKS, *geometry(dtype).block_shape(), dtype=dtype, device=device)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_gathered_pool_block_is_what_the_kernel_reads_at_the_documented_offsets(case, dtype):
    layers = build(case, dtype)
    g = geometry(dtype)
    copier = BlockCopier(resolve_layout(case.backend, layers, g), layers, g)
    p = pool(dtype)
    done = copier.gather([5, 0, 3], p, [1, 4, 2])
    assert done.done()
    flat = bits(p).reshape(POOL_BLOCKS, -1).numpy()
    for vb, pb in ((5, 1), (0, 4), (3, 2)):
        for l, t in enumerate(layers):
            expected = bits(case.kv_of(t, vb, DIM))  # (2, H, T, D) as the backend's kernel reads block vb
            assert torch.equal(bits(p[pb, l]), expected), (case.name, vb, l)
            for kv, h, tok, d in ((0, 0, 0, 0), (1, HEADS - 1, TOKENS - 1, DIM - 1), (1, 0, 3, 2), (0, 1, 5, 1)):
                assert flat[pb, pd_block_offset(l, kv, h, tok, d, HEADS, TOKENS, DIM)] == expected[kv, h, tok, d]
    for untouched in (0, 3, 5):
        assert not bits(p[untouched]).any(), "blocks outside the copy stay as they were"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_scattering_a_pool_block_back_gives_the_kernel_the_same_kv(case):
    src = build(case, seed=1)
    g = geometry()
    copier = BlockCopier(resolve_layout(case.backend, src, g), src, g)
    p = pool()
    copier.gather([2, 6], p, [0, 5])
    dst = build(case, seed=2)
    before = [t.clone() for t in dst]
    dst_copier = BlockCopier(resolve_layout(case.backend, dst, g), dst, g)
    assert dst_copier.scatter(p, [0, 5], [4, 1]).done()
    for l in range(LAYERS):
        assert torch.equal(bits(case.kv_of(dst[l], 4, DIM)), bits(case.kv_of(src[l], 2, DIM)))
        assert torch.equal(bits(case.kv_of(dst[l], 1, DIM)), bits(case.kv_of(src[l], 6, DIM)))
        for other in (0, 2, 3, 5, 6):
            assert torch.equal(bits(case.kv_of(dst[l], other, DIM)), bits(case.kv_of(before[l], other, DIM))), \
                "vLLM blocks outside the copy stay as they were"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_cpu_layout_is_byte_for_byte_todays_copy(dtype):
    case = CASES[0]
    layers = build(case, dtype, seed=3)
    g = geometry(dtype)
    copier = BlockCopier(resolve_layout("CPU_ATTN", layers, g), layers, g)
    new, old = pool(dtype), pool(dtype)
    copier.gather([6, 2, 0], new, [3, 0, 5])
    write_pd_blocks(layers, [6, 2, 0], old, [3, 0, 5])
    assert torch.equal(bits(new), bits(old))
    back_new = [torch.zeros_like(t) for t in layers]
    back_old = [torch.zeros_like(t) for t in layers]
    BlockCopier(copier.layout, back_new, g).scatter(new, [3, 0, 5], [1, 4, 2])
    read_pd_blocks(old[[3, 0, 5]], back_old, [1, 4, 2])
    for a, b in zip(back_new, back_old):
        assert torch.equal(bits(a), bits(b))


def test_the_packed_builders_make_the_views_vllm_makes():
    """kv_cases' FLASH_ATTN layouts against vLLM's own create_kv_cache_views, where vLLM is installed."""
    kvi = pytest.importorskip("vllm.v1.kv_cache_interface", reason="DID NOT RUN: vLLM is not installed here")
    from vllm.v1.kv_cache_layout import KVCacheLayout

    spec = kvi.FullAttentionSpec(TOKENS, num_kv_heads=HEADS, head_size=DIM, dtype=torch.bfloat16)
    for name, order in VLLM_LAYOUTS.items():
        layout = KVCacheLayout[name]
        assert layout.stride_order == order
        strides = kvi.compute_layout_strides(spec, VLLM_BLOCKS, LAYERS, layout)
        raw = torch.zeros(VLLM_BLOCKS * LAYERS * spec.page_size_bytes, dtype=torch.int8)
        tensor = kvi.KVCacheTensor(size=raw.numel(), layers=[f"model.layers.{i}.attn" for i in range(LAYERS)],
                                   layer_stride=strides[0], block_stride=strides[1])
        theirs = kvi.create_kv_cache_views(raw, spec, VLLM_BLOCKS, layout, tensor)
        ours = packed_build(order)(LAYERS, VLLM_BLOCKS, HEADS, TOKENS, DIM, torch.bfloat16, torch.device("cpu"),
                                   torch.Generator().manual_seed(0))
        for a, b in zip(theirs, ours):
            assert (tuple(a.shape), a.stride(), a.dtype) == (tuple(b.shape), b.stride(), b.dtype), name
        # and resolve_layout accepts vLLM's own tensors
        resolve_layout("FLASH_ATTN", theirs, geometry(torch.bfloat16))


def test_layouts_are_named_with_their_physical_order():
    g = geometry()
    names = {c.name: resolve_layout(c.backend, build(c), g).name for c in CASES}
    assert names["CPU_ATTN"] == "CPU_ATTN"
    assert names["FLASH_ATTN packed LBHNC"] == "FLASH_ATTN packed K|V, HND"
    assert names["FLASH_ATTN packed LBNHC"] == "FLASH_ATTN packed K|V, NHD"
    assert names["FLASH_ATTN split HND"] == "FLASH_ATTN split K|V, HND"
    assert names["FLASH_ATTN split NHD"] == "FLASH_ATTN split K|V, NHD"


@pytest.mark.parametrize("backend,shape", [
    ("FLASHINFER", (VLLM_BLOCKS, 2, TOKENS, HEADS, DIM)),
    ("TRITON_ATTN", (VLLM_BLOCKS, 2, TOKENS, HEADS, DIM)),
    ("FLASHMLA_SPARSE", (VLLM_BLOCKS, TOKENS, 656)),
    ("FLASH_ATTN", (VLLM_BLOCKS, TOKENS, 576)),
    ("TORCH_SDPA", (VLLM_BLOCKS, HEADS, TOKENS, 2 * DIM)),
])
def test_other_layouts_are_refused_by_name(backend, shape):
    layers = [torch.zeros(shape) for _ in range(LAYERS)]
    with pytest.raises(UnsupportedLayout, match=rf"attention backend '{backend}' .* is not supported"):
        resolve_layout(backend, layers, geometry())


def test_a_geometry_that_differs_from_pd_connectors_is_refused_naming_it():
    case = CASES[1]
    layers = build(case)
    with pytest.raises(GeometryMismatch, match="is not .*kv heads per rank, block tokens"):
        resolve_layout("FLASH_ATTN", layers, geometry(heads=4))
    with pytest.raises(GeometryMismatch, match="dtype: vLLM KV cache is torch.float32"):
        resolve_layout("FLASH_ATTN", layers, geometry(torch.bfloat16))
    with pytest.raises(GeometryMismatch, match="layers: vLLM has 3 attention layers"):
        resolve_layout("FLASH_ATTN", layers, geometry(layers=4))
    with pytest.raises(UnsupportedLayout, match="mixed KV cache layouts"):
        resolve_layout("FLASH_ATTN", layers[:2] + [build(CASES[2])[2]], geometry())  # an LBNHC layer among LBHNC
    with pytest.raises(UnsupportedLayout, match="CPU kernel reads a dense"):
        resolve_layout("CPU_ATTN", [t.transpose(1, 2).contiguous().transpose(1, 2) for t in build(CASES[0])],
                       geometry())


def test_copy_arguments_are_checked_before_any_byte_moves():
    case = CASES[0]
    layers = build(case)
    g = geometry()
    copier = BlockCopier(resolve_layout(case.backend, layers, g), layers, g)
    p = pool()
    for vllm, pd, match in (([1, 2], [0], "2 vLLM blocks for 1 pool blocks"),
                            ([VLLM_BLOCKS], [0], "vLLM block ids"),
                            ([0], [POOL_BLOCKS], "pool block ids"),
                            ([0, 1], [2, 2], "pool block ids repeat"),
                            ([3, 3], [1, 2], "vLLM block ids repeat")):
        with pytest.raises(ValueError, match=match):
            copier.gather(vllm, p, pd)
    with pytest.raises(GeometryMismatch, match="pool dtype"):
        copier.gather([0], pool(torch.bfloat16), [0])
    with pytest.raises(GeometryMismatch, match="is not \\(num_blocks"):
        copier.gather([0], torch.zeros(POOL_BLOCKS, LAYERS, 2, HEADS, TOKENS, DIM + 1), [0])
    with pytest.raises(GeometryMismatch, match="must be dense"):
        copier.gather([0], pool().transpose(3, 4).contiguous().transpose(3, 4), [0])
    assert not bits(p).any()
    assert copier.gather([], p, []).done()


def test_a_host_pool_mapped_from_a_file_takes_the_same_copy(tmp_path):
    """The DRAM pool is P's KV file (layout.KvFiles); the copier writes it through the same tensor view."""
    from pd_connector_vllm.layout import KvFiles

    case = CASES[1]
    layers = build(case, seed=4)
    g = geometry()
    path = tmp_path / "pd-test-r0.kv"
    path.write_bytes(bytes(POOL_BLOCKS * g.block_bytes))
    files = KvFiles()
    mapped = files.blocks(str(path), POOL_BLOCKS * g.block_bytes, g, torch.float32)
    BlockCopier(resolve_layout(case.backend, layers, g), layers, g).gather([3], mapped, [2])
    on_disk = np.fromfile(path, dtype=np.int32).reshape(POOL_BLOCKS, -1)
    expected = bits(torch.stack([case.kv_of(t, 3, DIM) for t in layers])).reshape(-1).numpy()
    assert (on_disk[2] == expected).all()
    assert not on_disk[[0, 1, 3, 4, 5]].any()
    files.close()


def test_cpu_copies_are_done_when_they_return():
    assert CopyDone().done()
    CopyDone().wait()
    CopyDone().order_compute_stream()


def _cuda_or_did_not_run():
    if not torch.cuda.is_available():
        pytest.skip("DID NOT RUN: no CUDA device here (scripts/gpu-check.sh runs these cases on a GPU)")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_cuda_cache_and_cuda_pool_on_a_side_stream(case):
    _cuda_or_did_not_run()
    layers = build(case, device="cuda")
    g = geometry()
    copier = BlockCopier(resolve_layout(case.backend, layers, g), layers, g)
    p = pool(device="cuda")
    done = copier.gather([5, 0], p, [1, 4])
    done.wait()
    for l, t in enumerate(layers):
        assert torch.equal(bits(p[1, l]), bits(case.kv_of(t, 5, DIM)))


# ---- MLA's latent (pd.model.attention=mla) -----------------------------------------------------------------------

MLA_TOKENS, KV_LORA, ROPE = 64, 16, 8   # FlashMLA's 64-token blocks; a latent of kv_lora_rank + rope dim


def mla_geometry(dtype=torch.bfloat16, tokens=MLA_TOKENS, width=KV_LORA + ROPE):
    size = torch.empty((), dtype=dtype).element_size()
    return PdGeometry(LAYERS, 1, width, tokens, size, 1, LAYERS * tokens * width * size, "mla")


@pytest.mark.parametrize("backend", MLA_BACKENDS)
def test_an_mla_pool_block_holds_each_layers_latent_rows_as_the_kernel_reads_them(backend):
    g = mla_geometry()
    src = mla_build(LAYERS, VLLM_BLOCKS, MLA_TOKENS, KV_LORA + ROPE, torch.bfloat16, torch.device("cpu"),
                    torch.Generator().manual_seed(5))
    copier = BlockCopier(resolve_layout(backend, src, g), src, g)
    assert copier.layout.name == f"{backend} latent"
    p = torch.zeros(POOL_BLOCKS, *g.block_shape(), dtype=torch.bfloat16)
    assert copier.gather([5, 0], p, [2, 4]).done()
    flat = bits(p).reshape(POOL_BLOCKS, -1)
    for vb, pb in ((5, 2), (0, 4)):
        for l, t in enumerate(src):
            kv_c, k_pe = mla_latent_of(t, vb, KV_LORA)
            row = (l * MLA_TOKENS + 7) * (KV_LORA + ROPE)   # [layer][latent][token][dim]: token 7's row
            assert torch.equal(flat[pb, row:row + KV_LORA], bits(kv_c[7]))
            assert torch.equal(flat[pb, row + KV_LORA:row + KV_LORA + ROPE], bits(k_pe[7]))
            assert torch.equal(bits(p[pb, l, 0, 0]), bits(t[vb]))
    assert not bits(p[[0, 1, 3, 5]]).any(), "blocks outside the copy stay as they were"
    dst = mla_build(LAYERS, VLLM_BLOCKS, MLA_TOKENS, KV_LORA + ROPE, torch.bfloat16, torch.device("cpu"),
                    torch.Generator().manual_seed(6))
    before = [t.clone() for t in dst]
    BlockCopier(resolve_layout(backend, dst, g), dst, g).scatter(p, [2, 4], [1, 6])
    for s, d, b in zip(src, dst, before):
        assert torch.equal(bits(d[1]), bits(s[5])) and torch.equal(bits(d[6]), bits(s[0]))
        assert torch.equal(bits(d[[0, 2, 3, 4, 5]]), bits(b[[0, 2, 3, 4, 5]]))


def test_the_mla_builder_makes_the_view_vllm_makes():
    """kv_cases' MLA cache against vLLM's own create_kv_cache_views of an MLAAttentionSpec, where vLLM is
    installed: the layout vLLM hands an MLA backend's layers is the one gpu_layout copies."""
    kvi = pytest.importorskip("vllm.v1.kv_cache_interface", reason="DID NOT RUN: vLLM is not installed here")
    from vllm.v1.kv_cache_layout import KVCacheLayout

    spec = kvi.MLAAttentionSpec(MLA_TOKENS, num_kv_heads=1, head_size=KV_LORA + ROPE, dtype=torch.bfloat16)
    layout = KVCacheLayout["LBNHC"]
    strides = kvi.compute_layout_strides(spec, VLLM_BLOCKS, LAYERS, layout)
    raw = torch.zeros(VLLM_BLOCKS * LAYERS * spec.page_size_bytes, dtype=torch.int8)
    tensor = kvi.KVCacheTensor(size=raw.numel(), layers=[f"model.layers.{i}.attn" for i in range(LAYERS)],
                               layer_stride=strides[0], block_stride=strides[1])
    theirs = kvi.create_kv_cache_views(raw, spec, VLLM_BLOCKS, layout, tensor)
    ours = mla_build(LAYERS, VLLM_BLOCKS, MLA_TOKENS, KV_LORA + ROPE, torch.bfloat16, torch.device("cpu"),
                     torch.Generator().manual_seed(0))
    for a, b in zip(theirs, ours):   # vLLM's logical view keeps a heads axis of 1
        assert (tuple(a.shape), a.dtype) == ((b.shape[0], 1, *b.shape[1:]), b.dtype)
        a.copy_(b[:, None])
    g = mla_geometry()
    p = torch.zeros(POOL_BLOCKS, *g.block_shape(), dtype=torch.bfloat16)
    BlockCopier(resolve_layout("FLASHMLA", theirs, g), theirs, g).gather([3, 1], p, [0, 5])
    for l, b in enumerate(ours):
        assert torch.equal(bits(p[0, l, 0, 0]), bits(b[3])) and torch.equal(bits(p[5, l, 0, 0]), bits(b[1]))
    back = [torch.zeros_like(a) for a in theirs]
    BlockCopier(resolve_layout("FLASHMLA", back, g), back, g).scatter(p, [0, 5], [6, 2])
    for a, b in zip(back, ours):
        assert torch.equal(bits(a[6, 0]), bits(b[3])) and torch.equal(bits(a[2, 0]), bits(b[1]))


def test_mla_and_its_neighbours_are_refused_by_name():
    latent = [torch.zeros(VLLM_BLOCKS, MLA_TOKENS, KV_LORA + ROPE, dtype=torch.bfloat16) for _ in range(LAYERS)]
    with pytest.raises(GeometryMismatch, match="an MLA backend needs mla"):
        resolve_layout("FLASHMLA", latent, geometry(torch.bfloat16))
    with pytest.raises(GeometryMismatch, match="an MLA backend needs mla"):
        resolve_layout("FLASH_ATTN", build(CASES[1], torch.bfloat16), mla_geometry())
    with pytest.raises(GeometryMismatch, match=r"FLASHMLA KV cache \(7, 64, 24\) is not \(num_blocks, 128, 24\)"):
        resolve_layout("FLASHMLA", latent, mla_geometry(tokens=128))
    ds_mla = [torch.zeros(VLLM_BLOCKS, MLA_TOKENS, 656, dtype=torch.uint8) for _ in range(LAYERS)]
    with pytest.raises(UnsupportedLayout, match="attention backend 'FLASHMLA_SPARSE' .* is not supported"):
        resolve_layout("FLASHMLA_SPARSE", ds_mla, mla_geometry(torch.uint8, width=656))
