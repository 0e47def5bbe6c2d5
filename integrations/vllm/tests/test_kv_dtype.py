"""The KV cache's element type by name: vLLM's --kv-cache-dtype resolved, checked against what pd-connector
declares (pd.model.kv-dtype), quantized formats pd-connector cannot vouch for refused by name, and an fp8 cache
(vLLM keeps it as uint8) moved byte for byte into pd-connector's file, as bytes, never converted."""

import pytest
import torch

from pd_connector_vllm import kv_dtype
from pd_connector_vllm.layout import GeometryMismatch, write_pd_blocks
from pd_connector_vllm.specs import SaveSpec
from pd_connector_vllm.worker import PdWorker

from fakes import FakeClient

L, H, T, D, NB = 2, 2, 4, 8, 6


def layout(dtype_bytes, kv=None):
    out = {"layers": L, "heads_per_rank": H, "head_dim": D, "block_tokens": T, "dtype_bytes": dtype_bytes,
           "tp_size": 1, "block_bytes": L * 2 * H * T * D * dtype_bytes, "engine_id": "p0", "role": "producer"}
    if kv is not None:
        out["kv_dtype"] = kv
    return out


@pytest.mark.parametrize("cache_dtype, model_dtype, name", [
    ("auto", torch.bfloat16, "bfloat16"), (None, torch.float32, "float32"), ("auto", torch.float16, "float16"),
    ("bfloat16", torch.float32, "bfloat16"), ("fp8", torch.bfloat16, "fp8_e4m3"),
    ("fp8_e4m3", torch.bfloat16, "fp8_e4m3"), ("fp8_e5m2", torch.bfloat16, "fp8_e5m2")])
def test_vllms_kv_cache_dtype_resolves_to_the_name_pd_connector_knows(cache_dtype, model_dtype, name):
    assert kv_dtype.resolve(cache_dtype, model_dtype) == name


@pytest.mark.parametrize("cache_dtype", ["fp8_inc", "fp8_ds_mla", "nvfp4_ds_mla", "turboquant_4bit_nc"])
def test_a_format_pd_connector_cannot_vouch_for_is_refused_by_name(cache_dtype):
    with pytest.raises(GeometryMismatch, match=f"--kv-cache-dtype {cache_dtype} is refused"):
        kv_dtype.resolve(cache_dtype, torch.bfloat16)


def test_a_named_dtype_must_be_pd_connectors_and_fp8_must_be_named():
    assert kv_dtype.check("bfloat16", None) == [], "an unquantized cache may leave the name to its width"
    assert kv_dtype.check("fp8_e5m2", "fp8_e5m2") == []
    assert kv_dtype.check("fp8_e4m3", "fp8_e5m2") == [
        "KV dtype: vLLM's cache is fp8_e4m3, pd-connector pd.model.kv-dtype=fp8_e5m2"]
    assert kv_dtype.check("bfloat16", "float16") == [
        "KV dtype: vLLM's cache is bfloat16, pd-connector pd.model.kv-dtype=float16"]
    (problem,) = kv_dtype.check("fp8_e4m3", None)
    assert "set pd.model.kv-dtype=fp8_e4m3" in problem


def fp8_caches(seed):
    """vLLM's CPU cache under --kv-cache-dtype fp8: uint8 elements, one byte each (any byte is a valid fp8)."""
    gen = torch.Generator().manual_seed(seed)
    return {f"model.layers.{i}.self_attn.attn": torch.randint(0, 256, (NB, H, T, 2 * D), generator=gen,
                                                              dtype=torch.uint8) for i in range(L)}


def test_a_worker_refuses_a_pd_connector_of_another_fp8_format_at_registration():
    w = PdWorker(FakeClient(), tp_rank=0, tp_size=1, load_threads=1, kv_dtype="fp8_e4m3")
    with pytest.raises(GeometryMismatch, match="pd.model.kv-dtype=fp8_e5m2"):
        w.register(fp8_caches(1), layout(1, "fp8_e5m2"))
    with pytest.raises(GeometryMismatch, match="set pd.model.kv-dtype=fp8_e4m3"):
        w.register(fp8_caches(1), layout(1))
    w.shutdown()


def test_an_fp8_cache_goes_into_pd_connectors_file_byte_for_byte(tmp_path):
    kv = fp8_caches(2)
    w = PdWorker(FakeClient(), tp_rank=0, tp_size=1, load_threads=1, kv_dtype="fp8_e4m3")
    lay = layout(1, "fp8_e4m3")
    w.register(kv, lay)
    path = tmp_path / "pd-p-r0.kv"
    path.write_bytes(bytes(8 * lay["block_bytes"]))
    w.save([SaveSpec("r1", "r1", [3, 0], [6, 2], 5, [(str(path), 8 * lay["block_bytes"])])])
    on_disk = torch.frombuffer(bytearray(path.read_bytes()), dtype=torch.uint8).view(8, L, 2, H, T, D)
    expected = torch.zeros(8, L, 2, H, T, D, dtype=torch.uint8)
    write_pd_blocks(list(kv.values()), [3, 0], expected, [6, 2])
    assert torch.equal(on_disk, expected)
    assert on_disk[6].any(), "the bytes arrived, not zeros"
    w.shutdown()


def scaled_layers(scales):
    """vLLM's attention layers as the forward context holds them, each with its K and V scale."""
    from types import SimpleNamespace
    return {f"model.layers.{i}.self_attn.attn": SimpleNamespace(_k_scale_float=k, _v_scale_float=v)
            for i, (k, v) in enumerate(scales)}


def test_the_scales_fingerprint_is_unit_for_all_ones_and_names_each_layers_scales_in_order():
    names = [f"model.layers.{i}.self_attn.attn" for i in range(L)]
    assert kv_dtype.scales_fingerprint(kv_dtype.layer_scales(scaled_layers([(1.0, 1.0)] * L), names)) == "unit"
    checkpoint = kv_dtype.scales_fingerprint(kv_dtype.layer_scales(scaled_layers([(0.5, 0.25), (1.0, 2.0)]), names))
    assert len(checkpoint) == 16 and int(checkpoint, 16) >= 0
    assert checkpoint != kv_dtype.scales_fingerprint([(1.0, 2.0), (0.5, 0.25)]), "another layer's scales differ"
    assert checkpoint != kv_dtype.scales_fingerprint([(0.25, 0.5), (2.0, 1.0)]), "K's scale is not V's"
    from types import SimpleNamespace
    latent = {"mla": SimpleNamespace(_k_scale_float=0.5)}
    assert kv_dtype.layer_scales(latent, ["mla"]) == [(0.5, 0.5)], "an MLA latent has K's scale alone"
    with pytest.raises(GeometryMismatch, match="model.layers.9.self_attn.attn has no KV scales"):
        kv_dtype.layer_scales(scaled_layers([(1.0, 1.0)]), ["model.layers.9.self_attn.attn"])


def test_a_worker_refuses_a_pd_connector_naming_other_scales_than_vllms_at_registration():
    checkpoint = [(0.5, 0.25), (1.0, 2.0)]
    fingerprint = kv_dtype.scales_fingerprint(checkpoint)
    read = []

    def scales_of(names):
        read.append(names)
        return kv_dtype.scales_fingerprint(kv_dtype.layer_scales(scaled_layers(checkpoint), names))

    w = PdWorker(FakeClient(), tp_rank=0, tp_size=1, load_threads=1, kv_dtype="fp8_e4m3", kv_scales=scales_of)
    with pytest.raises(GeometryMismatch, match=f"names none .all 1.0.: set pd.model.kv-scales={fingerprint}"):
        w.register(fp8_caches(1), layout(1, "fp8_e4m3"))
    assert read[0] == [f"model.layers.{i}.self_attn.attn" for i in range(L)], "the scales of vLLM's layers, in order"
    other = dict(layout(1, "fp8_e4m3"), kv_scales="0123456789abcdef")
    with pytest.raises(GeometryMismatch, match=f"scales {fingerprint}, pd-connector pd.model.kv-scales=0123456789abcdef"):
        w.register(fp8_caches(1), other)
    w.register(fp8_caches(1), dict(layout(1, "fp8_e4m3"), kv_scales=fingerprint))
    w.shutdown()

    unit = PdWorker(FakeClient(), tp_rank=0, tp_size=1, load_threads=1, kv_dtype="fp8_e4m3",
                    kv_scales=lambda names: "unit")
    unit.register(fp8_caches(1), layout(1, "fp8_e4m3"))
    with pytest.raises(GeometryMismatch, match="every scale 1.0 .the checkpoint gives none., pd-connector "
                                               "pd.model.kv-scales=0123456789abcdef"):
        unit.register(fp8_caches(1), other)
    unit.shutdown()
