"""An fp8 KV cache (vLLM's --kv-cache-dtype fp8, its e4m3 format) through the plugin: P's and D's vLLM quantize
their caches, each pd-connector names the type (pd.model.kv-dtype=fp8_e4m3, 1 byte), the KV moves as bytes, and
P/D answers what one fp8 instance answers. The tiny model's checkpoint has no KV scales, so vLLM's are all 1.0, which
each plugin checks against its pd-connector (pd.model.kv-scales unset) before it starts. A decoder's pd-connector
naming the other fp8 format, or other scales, is refused at the handshake, naming both, and holds nothing.

vLLM's CPU build runs an fp8 cache only on x86 with AVX-512 or AMX; elsewhere the module says it did not run."""
import json
import urllib.request

import pytest
import torch

from conftest import multi_block_cases
from fleet import Decoder, Fleet, metric, refused_pull
from workload import ask, client, prefill_on_p, token_prompt

if not (torch.cpu._is_avx512_supported() or torch.cpu._is_amx_tile_supported()):
    pytest.skip("DID NOT RUN: vLLM's CPU build runs an fp8 KV cache only on x86 with AVX-512 or AMX",
                allow_module_level=True)

SOCKET = "pd_engine_socket_requests_total"


class Fp8Fleet:
    """One fp8 vLLM for the reference answers, and P and D with the plugin (fp8), each beside a pd-connector
    naming fp8_e4m3, all started at once; the proxy fronts P and D."""

    def __init__(self, fleet: Fleet):
        self.fleet = fleet
        self.single = fleet.vllm("single", wait=False)
        self.pd_p = fleet.pd_service("pd-p", "producer")
        self.decoder = Decoder(fleet, self.pd_p, "fail", 30)
        self.p = fleet.plugin_vllm("p", self.pd_p, wait=False)
        fleet.ready(self.single, self.p, self.decoder.d)
        self.proxy = fleet.proxy(self.p, self.decoder.d)


@pytest.fixture(scope="module")
def fp8():
    with Fleet("fp8", kv_cache_dtype="fp8") as fleet:
        yield Fp8Fleet(fleet)
    assert all(p.session_gone() for p in fleet.stopped), "a process of the fp8 fleet outlived its fleet"


def test_fp8_pd_through_the_plugin_answers_what_one_fp8_instance_answers(fp8):
    for service in (fp8.pd_p, fp8.decoder.pd_d):
        with urllib.request.urlopen(service.url + "/v1/kv-layout", timeout=5) as r:
            layout = json.load(r)
        assert (layout["kv_dtype"], layout["dtype_bytes"]) == ("fp8_e4m3", 1), layout
        assert "kv_scales" not in layout, "unit scales are named by no fingerprint"
    cases = multi_block_cases()
    reference = {case.name: ask(client(fp8.single.url), case) for case in cases}
    received_before = metric(fp8.decoder.pd_d, SOCKET, {"op": "pulls", "status": "200"})
    answers = {case.name: ask(client(fp8.proxy.url), case) for case in cases}
    mismatches = {n: (answers[n], reference[n]) for n in reference if answers[n] != reference[n]}
    assert not mismatches, f"fp8 P/D through pd-connector answered differently from one fp8 instance: {mismatches}"
    received = metric(fp8.decoder.pd_d, SOCKET, {"op": "pulls", "status": "200"}) - received_before
    assert received >= len(cases), f"D received {received} pulls for {len(cases)} multi-block prompts"
    assert fp8.decoder.lease_declines() == 0


def test_a_decoder_naming_the_other_fp8_format_is_refused_at_the_handshake(fp8):
    other = fp8.fleet.pd_service("pd-d-e5m2", "consumer", peers=[fp8.pd_p], extra={"pd.model.kv-dtype": "fp8_e5m2"})
    prompt = token_prompt(900, 300)
    params = prefill_on_p(fp8.p.url, prompt, "fp8-e5m2-reader")["kv_transfer_params"]
    problem = refused_pull(other, "fp8-e5m2-reader", prompt, params)
    assert "kvDtype=FP8_E4M3" in problem["detail"] and "kvDtype=FP8_E5M2" in problem["detail"], problem


def test_a_decoder_naming_other_kv_scales_is_refused_at_the_handshake(fp8):
    other = fp8.fleet.pd_service("pd-d-scaled", "consumer", peers=[fp8.pd_p],
                                 extra={"pd.model.kv-scales": "0123456789abcdef"})
    prompt = token_prompt(900, 300)
    params = prefill_on_p(fp8.p.url, prompt, "fp8-scaled-reader")["kv_transfer_params"]
    problem = refused_pull(other, "fp8-scaled-reader", prompt, params)
    assert "kvScales=0123456789abcdef" in problem["detail"] and "kvScales=null" in problem["detail"], problem
