"""vLLM P and D with the pd-connector plugin (loaded through kv_connector_module_path, vLLM unmodified), each
beside a pd-connector service from the packaged jar, behind the same proxy as the stock run.

The same reproducers as test_stock_nixl.py: where stock vLLM answers 200 with a wrong answer, D's pd-connector
declines the pull (lease_mismatch) and vLLM's kv_load_failure_policy decides: `fail` fails the request (nothing
wrong returned), `recompute` prefills locally and answers the reference. P and one D per policy run at once."""
import time

import openai
import pytest

from conftest import REPRODUCER_PROMPTS
from fleet import Decoder, Fleet, metric, record, status as service_status
from workload import (P_BLOCKS, Reproducer, answer_text, ask, client, equality_cases, prefill_on_p, reuse,
                      token_prompt)

# Long enough for a D leg to reach D's pd-connector (which heartbeats the lease from then on) behind its P leg while
# three vLLM servers and three services share 2 cores: with 2 s a late D leg was (correctly) declined in the equality
# test under load. The reproducers wait past it whatever it is.
LEASE_S = 6
HTTP = "http_server_requests_seconds_count"   # D's own count of the requests it served, by uri template
SOCKET = "pd_engine_socket_requests_total"      # its count of what the engine socket served, by op and status


class PluginFleet:
    """P (vLLM with the plugin, 8 KV blocks, beside a producer pd-connector with 8 blocks and a 6 s lease) and one D
    per policy, all started at once; the proxy fronts P and the `fail` D."""

    def __init__(self, fleet: Fleet):
        self.pd_p = fleet.pd_service("pd-p", "producer", lease=f"{LEASE_S}s", num_blocks=P_BLOCKS)
        self.decoders = {policy: Decoder(fleet, self.pd_p, policy, LEASE_S) for policy in ("fail", "recompute")}
        self.p = fleet.plugin_vllm("p", self.pd_p, num_blocks=P_BLOCKS, wait=False)
        fleet.ready(self.p, *(dec.d for dec in self.decoders.values()))
        self.proxy = fleet.proxy(self.p, self.decoders["fail"].d)

    def reproducer(self) -> Reproducer:
        """The reproducer, its lease waits asking P's pd-connector how many leases it still holds."""
        return Reproducer(lease_s=LEASE_S, p_leases=lambda: service_status(self.pd_p)["producer"]["leases_live"])


@pytest.fixture(scope="module")
def plugin():
    with Fleet("plugin") as fleet:
        yield PluginFleet(fleet)
    assert all(p.session_gone() for p in fleet.stopped), "a process of the plugin fleet outlived its fleet"


def test_plugin_pd_answers_equal_one_instance(plugin, reference):
    c = client(plugin.proxy.url)
    mismatches = {}
    for case in equality_cases():
        got = ask(c, case)
        if got != reference.equality[case.name]:
            mismatches[case.name] = (got, reference.equality[case.name])
    assert not mismatches, f"P/D through pd-connector answered differently from one instance: {mismatches}"
    assert plugin.decoders["fail"].lease_declines() == 0, "a pull was declined although every D leg came right after its P leg"
    # D's KV reached vLLM through D's shared KV file; the plugin pulled and released on D's engine socket, so D's
    # HTTP server saw no pull, no release and no KV read-out; every received pull was released
    d = plugin.decoders["fail"].pd_d
    received = metric(d, SOCKET, {"op": "pulls", "status": "200"})
    assert received >= 6, f"D served {received} pulls (6 prompts of 2 blocks or more)"
    # a step's pulls went as one request (op pulls), its releases as one (op releases): none one by one
    assert metric(d, SOCKET, {"op": "pull"}) == metric(d, SOCKET, {"op": "release"}) == 0, \
        "D's plugin pulled or released one call at a time on a socket that batches"
    assert metric(d, HTTP, {"uri": "/v1/consumer/requests/{id}/kv"}) == 0, "D's vLLM read KV over GET .../kv"
    assert metric(d, HTTP, {"uri": "/v1/consumer/pull"}) == 0, "a pull went over HTTP beside the engine socket"
    assert metric(d, HTTP, {"uri": "/v1/consumer/requests/{id}"}) == 0, "a release went over HTTP"
    assert metric(d, SOCKET, {"op": "releases", "status": "204"}) == received
    # and P's plugin sent its per-step batches on P's engine socket, none over HTTP
    p = plugin.pd_p
    assert metric(p, SOCKET, {"op": "batch", "status": "200"}) > 0, "P's plugin sent no batch on the engine socket"
    assert metric(p, HTTP, {"uri": "/v1/producer/batch"}) == 0, "P's plugin sent a batch over HTTP"
    # P copied in the step, after the forward (the default; test_plugin_overlap.py runs the copy beside it)
    assert "P's copies in the step" in plugin.p.process.log_text(), "P's plugin did not copy in the step"
    # the first contact: D's pd-connector loaded P's metadata when its registry listed P, before the first pull
    pd_d = d
    on_pull = metric(pd_d, "pd_handshakes_on_pull_total")
    handshakes = metric(pd_d, "pd_handshakes_total")
    record({"fleet": "plugin", "first_contact": "registry", "handshakes": handshakes, "handshakes_on_pull": on_pull})
    print(f"plugin D's first contact with P: {handshakes:.0f} handshake(s) at the registry's announcement, "
          f"{on_pull:.0f} on a pull")
    assert on_pull == 0, "a pull waited for a handshake although D had loaded P from its registry"


def assert_failed_with_lease_reason(status, body, decoder, declines_before):
    assert status >= 500, f"D answered {status} {body}: a decode from KV whose lease had run out was returned"
    assert answer_text(body) is None, f"D returned an answer for a failed load: {body}"
    assert decoder.lease_declines() > declines_before, "D's pd-connector counted no lease_mismatch decline"
    assert "lease_mismatch" in decoder.d.process.log_text(), "D's vLLM log does not name the decline reason"


def test_plugin_fail_seed_reproducer_fails_the_request(plugin, reference):
    decoder = plugin.decoders["fail"]
    before = decoder.lease_declines()
    name = "plugin-fail-seed"
    status, body = plugin.reproducer().run(plugin.p.url, decoder.d.url, REPRODUCER_PROMPTS[name], name)
    assert_failed_with_lease_reason(status, body, decoder, before)


def test_plugin_fail_request_id_reuse(plugin, reference):
    decoder = plugin.decoders["fail"]
    before = decoder.lease_declines()
    (late_status, late), (second_status, second) = reuse(
        plugin.p.url, decoder.d.url, plugin.reproducer(), "plugin-fail",
        (REPRODUCER_PROMPTS["plugin-fail-reuse-1"], REPRODUCER_PROMPTS["plugin-fail-reuse-2"]))
    assert_failed_with_lease_reason(late_status, late, decoder, before)
    assert second_status == 200 and answer_text(second) == reference.reproducer["plugin-fail-reuse-2"], \
        f"attempt 2's reader: {second_status} {second}"


def test_plugin_fail_seen_through_the_openai_client(plugin):
    """What a user of the OpenAI client sees when D's load is declined under `fail`: an error status, no text.
    (The client sends P's saved, expired params itself, as a router replaying them would.)"""
    decoder = plugin.decoders["fail"]
    before = decoder.lease_declines()
    prompt = token_prompt(8100, 300)
    saved = prefill_on_p(plugin.p.url, prompt, "client-fail")
    reproducer = plugin.reproducer()
    reproducer.wait_past_lease(time.monotonic())
    reproducer.flood_p(plugin.p.url, "client-fail")
    reproducer.wait_past_lease(time.monotonic())
    with pytest.raises(openai.APIStatusError) as failure:
        client(decoder.d.url).completions.create(
            model="tiny", prompt=prompt, max_tokens=16, temperature=0,
            extra_body={"ignore_eos": True, "kv_transfer_params": saved["kv_transfer_params"]})
    assert failure.value.status_code >= 500
    assert decoder.lease_declines() > before


def test_plugin_recompute_seed_reproducer_answers_the_reference(plugin, reference):
    decoder = plugin.decoders["recompute"]
    before = decoder.lease_declines()
    name = "plugin-recompute-seed"
    status, body = plugin.reproducer().run(plugin.p.url, decoder.d.url, REPRODUCER_PROMPTS[name], name)
    assert status == 200, f"D answered {status}: {body}"
    assert answer_text(body) == reference.reproducer[name], "D recomputed but answered other than the reference"
    assert decoder.lease_declines() > before, "no lease_mismatch decline: the pull was not the reproducer's late one"


def test_plugin_recompute_request_id_reuse(plugin, reference):
    decoder = plugin.decoders["recompute"]
    before = decoder.lease_declines()
    (late_status, late), (second_status, second) = reuse(
        plugin.p.url, decoder.d.url, plugin.reproducer(), "plugin-recompute",
        (REPRODUCER_PROMPTS["plugin-recompute-reuse-1"], REPRODUCER_PROMPTS["plugin-recompute-reuse-2"]))
    assert late_status == 200 and answer_text(late) == reference.reproducer["plugin-recompute-reuse-1"], \
        f"attempt 1's late reader: {late_status} {late}"
    assert second_status == 200 and answer_text(second) == reference.reproducer["plugin-recompute-reuse-2"], \
        f"attempt 2's reader: {second_status} {second}"
    assert decoder.lease_declines() > before
