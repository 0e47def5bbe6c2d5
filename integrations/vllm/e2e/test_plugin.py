"""vLLM P and D with the pd-connector plugin (loaded through kv_connector_module_path, vLLM unmodified), each
beside a pd-connector service from the packaged jar, behind the same proxy as the stock run.

The same reproducers as test_stock_nixl.py: where stock vLLM answers 200 with a wrong answer, D's pd-connector
declines the pull (lease_mismatch) and vLLM's kv_load_failure_policy decides: `fail` fails the request (nothing
wrong returned), `recompute` prefills locally and answers the reference. P's vLLM and its service are started
once; D's side is started once per policy."""
from types import SimpleNamespace

import openai
import pytest

from conftest import REPRODUCER_PROMPTS
from fleet import Fleet, metric, wait_registry_lists
from test_stock_nixl import P_BLOCKS, reuse
from workload import Reproducer, answer_text, ask, client, equality_cases, prefill_on_p, token_prompt

LEASE_S = 2


class PluginFleet:
    def __init__(self, fleet: Fleet):
        self.fleet = fleet
        self.pd_p = fleet.pd_service("pd-p", "producer", lease=f"{LEASE_S}s", num_blocks=P_BLOCKS)
        self.policy = None
        self.pd_d = self.d = self.proxy = None
        self.p = fleet.plugin_vllm("p", self.pd_p, num_blocks=P_BLOCKS)

    def decoder(self, policy: str):
        """D's vLLM (with `policy` as kv_load_failure_policy), its pd-connector and the proxy, started anew when
        the policy changes."""
        if policy != self.policy:
            for endpoint in (self.proxy, self.d, self.pd_d):
                if endpoint is not None:
                    self.fleet.stop(endpoint)
            self.pd_d = self.fleet.pd_service(f"pd-d-{policy}", "consumer", lease=f"{LEASE_S}s", peers=[self.pd_p])
            wait_registry_lists(self.pd_d, self.fleet.label + "-pd-p")
            self.d = self.fleet.plugin_vllm(f"d-{policy}", self.pd_d, failure_policy=policy)
            self.proxy = self.fleet.proxy(self.p, self.d, name=f"proxy-{policy}")
            self.policy = policy
        return self

    def lease_declines(self) -> float:
        return metric(self.pd_d, "pd_pull_declines_total", {"reason": "lease_mismatch"})


@pytest.fixture(scope="module")
def plugin():
    with Fleet("plugin") as fleet:
        yield PluginFleet(fleet)
    assert all(p.session_gone() for p in fleet.stopped), "a process of the plugin fleet outlived its fleet"


def test_plugin_pd_answers_equal_one_instance(plugin, reference):
    c = client(plugin.decoder("fail").proxy.url)
    mismatches = {}
    for case in equality_cases():
        got = ask(c, case)
        if got != reference.equality[case.name]:
            mismatches[case.name] = (got, reference.equality[case.name])
    assert not mismatches, f"P/D through pd-connector answered differently from one instance: {mismatches}"
    assert plugin.lease_declines() == 0, "a pull was declined although every D leg came right after its P leg"


def assert_failed_with_lease_reason(status, body, fleet, declines_before):
    assert status >= 500, f"D answered {status} {body}: a decode from KV whose lease had run out was returned"
    assert answer_text(body) is None, f"D returned an answer for a failed load: {body}"
    assert fleet.lease_declines() > declines_before, "D's pd-connector counted no lease_mismatch decline"
    assert "lease_mismatch" in fleet.d.process.log_text(), "D's vLLM log does not name the decline reason"


def test_plugin_fail_seed_reproducer_fails_the_request(plugin, reference):
    fleet = plugin.decoder("fail")
    before = fleet.lease_declines()
    name = "plugin-fail-seed"
    status, body = Reproducer(lease_s=LEASE_S).run(fleet.p.url, fleet.d.url, REPRODUCER_PROMPTS[name], name)
    assert_failed_with_lease_reason(status, body, fleet, before)


def test_plugin_fail_request_id_reuse(plugin, reference):
    fleet = plugin.decoder("fail")
    before = fleet.lease_declines()
    (late_status, late), (second_status, second) = reuse(fleet.p.url, fleet.d.url, Reproducer(lease_s=LEASE_S),
                                                         "plugin-fail")
    assert_failed_with_lease_reason(late_status, late, fleet, before)
    assert second_status == 200 and answer_text(second) == reference.reproducer["plugin-fail-reuse-2"], \
        f"attempt 2's reader: {second_status} {second}"


def test_plugin_fail_seen_through_the_openai_client(plugin):
    """What a user of the OpenAI client sees when D's load is declined under `fail`: an error status, no text.
    (The client sends P's saved, expired params itself, as a router replaying them would.)"""
    fleet = plugin.decoder("fail")
    before = fleet.lease_declines()
    prompt = token_prompt(8100, 300)
    saved = prefill_on_p(fleet.p.url, prompt, "client-fail")
    reproducer = Reproducer(lease_s=LEASE_S)
    reproducer.wait_past_lease()
    reproducer.flood_p(fleet.p.url, "client-fail")
    reproducer.wait_past_lease()
    with pytest.raises(openai.APIStatusError) as failure:
        client(fleet.d.url).completions.create(
            model="tiny", prompt=prompt, max_tokens=16, temperature=0,
            extra_body={"ignore_eos": True, "kv_transfer_params": saved["kv_transfer_params"]})
    assert failure.value.status_code >= 500
    assert fleet.lease_declines() > before


def test_plugin_recompute_seed_reproducer_answers_the_reference(plugin, reference):
    fleet = plugin.decoder("recompute")
    before = fleet.lease_declines()
    name = "plugin-recompute-seed"
    status, body = Reproducer(lease_s=LEASE_S).run(fleet.p.url, fleet.d.url, REPRODUCER_PROMPTS[name], name)
    assert status == 200, f"D answered {status}: {body}"
    assert answer_text(body) == reference.reproducer[name], "D recomputed but answered other than the reference"
    assert fleet.lease_declines() > before, "no lease_mismatch decline: the pull was not the reproducer's late one"


def test_plugin_recompute_request_id_reuse(plugin, reference):
    fleet = plugin.decoder("recompute")
    before = fleet.lease_declines()
    (late_status, late), (second_status, second) = reuse(fleet.p.url, fleet.d.url, Reproducer(lease_s=LEASE_S),
                                                         "plugin-recompute")
    assert late_status == 200 and answer_text(late) == reference.reproducer["plugin-recompute-reuse-1"], \
        f"attempt 1's late reader: {late_status} {late}"
    assert second_status == 200 and answer_text(second) == reference.reproducer["plugin-recompute-reuse-2"], \
        f"attempt 2's reader: {second_status} {second}"
    assert fleet.lease_declines() > before
