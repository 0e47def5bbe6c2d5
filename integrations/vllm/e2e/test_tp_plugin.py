"""vLLM with the pd-connector plugin at different TP sizes on P and D (P TP1 / D TP2, P TP2 / D TP1), each vLLM
beside a pd-connector with as many ranks as its TP workers.

Each vLLM TP worker saves (P) or loads (D) its own KV heads through the pd-connector rank of its number; on D
every worker joins the one pull its pd-connector runs for the request (one set of READs, one lease check over
every P rank) and releases its rank. What is shown, per pair: answers equal one instance's; the seed reproducer
declined (`fail`: an error, nothing wrong returned, one pull declined and every D rank answered the decline;
`recompute`: the reference answer); and, for P TP2, a failed READ from one P rank (the fault layer strikes
every READ from P's rank 1) fails the whole request. One fleet at a time, and in it one D at a time, in float32
(conftest TP_DTYPE)."""
import pytest

from conftest import TP_DTYPE, TP_PROMPTS, multi_block_cases
from fleet import Decoder, Endpoint, Fleet, metric, status as service_status
from test_plugin import SOCKET
from workload import P_BLOCKS, Reproducer, answer_text, ask, client, decode_on_d, prefill_on_p

TP_PAIRS = [(1, 2), (2, 1)]
pytestmark = pytest.mark.tp   # opt-in: integrations/vllm/scripts/ci.sh runs these with PD_E2E_TP=1 only
# Longer than test_plugin.py's 2 s: a TP fleet's servers start more processes on the 2-core machine, and a D leg
# that reached D's pd-connector after P's lease ran out would be declined (correctly) in the equality test.
LEASE_S = 6
# Every READ D posts from P's rank 1 fails: with P TP2 the other rank's READs succeed, so a request half read.
READ_FAULT = {"pd.faults.enabled": "true", "pd.faults.read-kind": "block", "pd.faults.rank": "1",
              "pd.faults.every-nth": "1", "pd.faults.action": "fail"}


class TpPluginFleet:
    """P (its pd-connector and its vLLM) for the whole module, and one D at a time beside it: `decoder(name)` stops
    the D before it and starts `name`'s. Two vLLM servers at most, as the TP 1 and the stock fleets run. With P and
    three D servers (five TP workers) alive, this 2-core machine stopped running anything for minutes at a time (a
    monitor sampling every 3 s missed 69-168 s) and pulls ran past the plugin's timeout; with two it still stalls
    at times (docs/vllm.md, "Tensor-parallel fleets"), which is why these modules are opt-in."""

    DECODERS = {"fail": ("fail", None), "recompute": ("recompute", None), "fault": ("fail", READ_FAULT)}

    def __init__(self, fleet: Fleet, p_tp: int, d_tp: int):
        self.fleet, self.tag, self.p_tp, self.d_tp = fleet, f"p{p_tp}d{d_tp}", p_tp, d_tp
        self.pd_p = fleet.pd_service("pd-p", "producer", lease=f"{LEASE_S}s", num_blocks=P_BLOCKS, tp=p_tp)
        self.p = fleet.plugin_vllm("p", self.pd_p, num_blocks=P_BLOCKS, wait=False, tp=p_tp)
        self._name: str | None = None
        self._decoder: Decoder | None = None
        self.proxy: Endpoint | None = None

    def decoder(self, name: str) -> Decoder:
        if name == self._name:
            return self._decoder
        if self._decoder is not None:
            for endpoint in (self.proxy, self._decoder.d, self._decoder.pd_d):
                self.fleet.stop(endpoint)
        policy, extra = self.DECODERS[name]
        self._name, self._decoder = name, Decoder(self.fleet, self.pd_p, policy, LEASE_S, tp=self.d_tp, name=name,
                                                  extra=extra)
        self.fleet.ready(self.p, self._decoder.d)
        self.proxy = self.fleet.proxy(self.p, self._decoder.d, name=f"proxy-{name}")
        return self._decoder

    def reproducer(self) -> Reproducer:
        return Reproducer(lease_s=LEASE_S, p_leases=lambda: service_status(self.pd_p)["producer"]["leases_live"])


@pytest.fixture(scope="module", params=TP_PAIRS, ids=lambda pair: f"p{pair[0]}d{pair[1]}")
def tp(request):
    with Fleet(f"plugin-p{request.param[0]}d{request.param[1]}", dtype=TP_DTYPE) as fleet:
        yield TpPluginFleet(fleet, *request.param)
    assert all(p.session_gone() for p in fleet.stopped), "a process of the TP fleet outlived its fleet"


def pulls(decoder: Decoder, status: str) -> float:
    """How many pulls D's pd-connector answered with `status` (each D rank's worker asks once a request, a step's
    in one request of op pulls)."""
    return metric(decoder.pd_d, SOCKET, {"op": "pulls", "status": status})


def test_tp_answers_equal_one_instance(tp, reference_tp):
    d = tp.decoder("fail")
    c = client(tp.proxy.url)
    cases = multi_block_cases()
    mismatches = {}
    for case in cases:
        got = ask(c, case)
        if got != reference_tp.equality[case.name]:
            mismatches[case.name] = (got, reference_tp.equality[case.name])
    assert not mismatches, f"P/D {tp.tag} through pd-connector answered differently from one instance: {mismatches}"
    received = metric(d.pd_d, "pd_pulls_total", {"outcome": "received"})
    assert received == len(cases), f"D ran {received} pulls for {len(cases)} multi-block prompts: one pull a request"
    assert pulls(d, "200") == tp.d_tp * received, "every D rank's worker joined each pull"
    assert metric(d.pd_d, SOCKET, {"op": "releases", "status": "204"}) == tp.d_tp * received, \
        "every D rank released each pull"
    assert d.lease_declines() == 0
    assert service_status(d.pd_d)["consumer"]["pulls_live"] == 0, "a pull is held after every rank released it"


def test_tp_fail_seed_reproducer_fails_the_request_and_every_d_rank_declines(tp, reference_tp):
    d = tp.decoder("fail")
    declines, answered_409 = d.lease_declines(), pulls(d, "409")
    name = f"{tp.tag}-fail-seed"
    status, body = tp.reproducer().run(tp.p.url, d.d.url, TP_PROMPTS[name], name)
    assert status >= 500, f"D ({tp.tag}) answered {status} {body}: a decode from KV whose lease ran out was returned"
    assert answer_text(body) is None, f"D returned an answer for a failed load: {body}"
    assert d.lease_declines() == declines + 1, "one pull for the request, declined lease_mismatch"
    assert pulls(d, "409") == answered_409 + tp.d_tp, f"each of D's {tp.d_tp} ranks was answered the decline"
    assert d.d.process.log_text().count("lease_mismatch") >= tp.d_tp, "a D worker's log does not name the decline"


def test_tp_recompute_seed_reproducer_answers_the_reference(tp, reference_tp):
    d = tp.decoder("recompute")
    declines = d.lease_declines()
    name = f"{tp.tag}-recompute-seed"
    status, body = tp.reproducer().run(tp.p.url, d.d.url, TP_PROMPTS[name], name)
    assert status == 200, f"D ({tp.tag}) answered {status}: {body}"
    assert answer_text(body) == reference_tp.reproducer[name], "D recomputed but answered other than the reference"
    assert d.lease_declines() == declines + 1, "no lease_mismatch decline: the pull was not the reproducer's late one"


def test_tp_one_p_ranks_failed_read_fails_the_whole_request(tp, reference_tp):
    if tp.p_tp == 1:
        pytest.skip(f"{tp.tag}: P has one rank; the fault case is P TP2's (a READ from P's rank 1 fails)")
    d = tp.decoder("fault")
    name = f"{tp.tag}-read-fault"
    prompt = TP_PROMPTS[name]
    saved = prefill_on_p(tp.p.url, prompt, name)
    status, body = decode_on_d(d.d.url, prompt, saved, name)
    assert status >= 500 and answer_text(body) is None, \
        f"D answered {status} {body} although the READ of P rank 1's heads failed"
    assert metric(d.pd_d, "pd_pull_declines_total", {"reason": "transfer_failed"}) == 1
    assert metric(d.pd_d, "pd_pulls_total", {"outcome": "received"}) == 0, "no pull of half the heads was received"
    assert pulls(d, "409") == tp.d_tp
