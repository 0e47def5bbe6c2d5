"""P's copy beside the forward (`pd_save_overlap`) with real vLLM: each attention layer's KV goes into P's KV file on
the plugin's copy thread as soon as vLLM's `save_kv_layer` says the layer is written, while the forward computes the
next layers. What could go wrong only inside vLLM: a layer announced before its KV is written (D would decode from
other KV and answer differently), or layers vLLM never announces (their copies would fall back into the step,
which the plugin logs). One P and one D, started at once; the answers must equal one instance's."""
import pytest

from conftest import FULL, multi_block_cases
from fleet import Decoder, Fleet, metric
from workload import P_BLOCKS, ask, client

if not FULL:
    pytest.skip("DID NOT RUN: the copy beside the forward (pd_save_overlap, off by default) runs inside vLLM with "
                "PD_E2E_FULL=1; tests/test_worker.py checks its copies byte for byte", allow_module_level=True)

LEASE_S = 30
SOCKET = "pd_engine_socket_requests_total"


@pytest.fixture(scope="module")
def overlap():
    with Fleet("overlap") as fleet:
        pd_p = fleet.pd_service("pd-p", "producer", lease=f"{LEASE_S}s", num_blocks=P_BLOCKS)
        decoder = Decoder(fleet, pd_p, "fail", LEASE_S)
        p = fleet.plugin_vllm("p", pd_p, num_blocks=P_BLOCKS, wait=False, plugin_settings={"pd_save_overlap": True})
        fleet.ready(p, decoder.d)
        yield p, decoder, fleet.proxy(p, decoder.d)
    assert all(proc.session_gone() for proc in fleet.stopped), "a process of the overlap fleet outlived its fleet"


def test_copies_beside_the_forward_give_d_the_kv_one_instance_computes(overlap, reference):
    p, decoder, proxy = overlap
    c = client(proxy.url)
    cases = multi_block_cases()
    mismatches = {case.name: (got, reference.equality[case.name])
                  for case in cases if (got := ask(c, case)) != reference.equality[case.name]}
    assert not mismatches, f"D decoded from KV P copied beside the forward and answered differently: {mismatches}"
    assert decoder.lease_declines() == 0, "a pull was declined although every D leg came right after its P leg"
    received = metric(decoder.pd_d, SOCKET, {"op": "pulls", "status": "200"})
    assert received >= len(cases), f"D received {received} pulls for {len(cases)} multi-block prompts"
    p_log = p.process.log_text()
    assert "P's copies beside the forward (a copy thread)" in p_log, "P's plugin did not copy beside the forward"
    assert "did not announce" not in p_log, "vLLM left attention layers unannounced: their copies ran in the step"
