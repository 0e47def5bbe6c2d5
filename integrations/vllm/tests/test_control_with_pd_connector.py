"""P's control path against a real pd-connector (packaged jar, role both, real NIXL, on 127.0.0.1): the
plugin takes granted blocks and a granted slot, its worker copies vLLM's KV into them, the params it
builds from the grant are pulled by D before P has the commit, and P's export at the commit equals them;
after the commit the early read releases the lease, and once the plugin closes nothing is held."""

import json
import time
import urllib.error
import urllib.request

import pytest
import torch

from pd_connector_vllm.client import PdClient, choose_engine_channel
from pd_connector_vllm.control import PdControl
from pd_connector_vllm.errors import PdError
from pd_connector_vllm.layout import PdGeometry, write_pd_blocks
from pd_connector_vllm.specs import LoadSpec, SaveSpec
from pd_connector_vllm.worker import PdWorker

from pd_service import PdService
from test_with_pd_connector import outcomes_of

L, H, T, D, NB = 2, 2, 4, 8, 8
SETTINGS = {"pd.model.layers": str(L), "pd.model.kv-heads": str(H), "pd.model.head-dim": str(D),
            "pd.model.block-tokens": str(T), "pd.model.dtype-bytes": "4", "pd.kv.num-blocks": "32",
            "pd.role": "both", "pd.consumer.failure-policy": "fail"}


@pytest.fixture(scope="module")
def pd(tmp_path_factory):
    with PdService(tmp_path_factory.mktemp("pd"), "pd-control-test", SETTINGS) as service:
        yield service


def status(service):
    with urllib.request.urlopen(service.url + "/v1/status", timeout=5) as r:
        return json.load(r)


def p_lease_state(service, request_id):
    try:
        with urllib.request.urlopen(f"{service.url}/v1/producer/requests/{request_id}", timeout=5) as r:
            return json.load(r)["state"]
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise


def wait_until(condition, what, timeout=20):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout} s: {what}")


def caches(seed=None):
    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    make = (lambda: torch.randn(NB, H, T, 2 * D, generator=gen)) if gen else (lambda: torch.zeros(NB, H, T, 2 * D))
    return {f"model.layers.{i}.self_attn.attn": make() for i in range(L)}


def counters(service):
    """The counters this test reads, as one snapshot: the tests share one pd-connector, so each compares deltas."""
    with urllib.request.urlopen(service.url + "/q/metrics", timeout=5) as r:
        text = r.read().decode()
    names = ("pd_early_notifications_total", "pd_credit_commits_total", "pd_leases_released_by_readers_total")
    out = {}
    for line in text.splitlines():
        for name in names:
            if line.startswith(name + "{") or line.startswith(name + " "):
                out[name] = out.get(name, 0) + float(line.rsplit(" ", 1)[1])
        if line.startswith("pd_engine_socket_requests_total{") and 'op="batch"' in line:
            out["socket batch"] = out.get("socket batch", 0) + float(line.rsplit(" ", 1)[1])
        if line.startswith("http_server_requests_seconds_count{") and 'uri="/v1/producer/batch"' in line:
            out["http batch"] = out.get("http batch", 0) + float(line.rsplit(" ", 1)[1])
    return out


@pytest.mark.parametrize("channel", ["auto", "http"])
def test_a_pull_of_the_grants_params_before_the_commit_gets_ps_copy_and_the_commit_releases_the_lease(pd, channel):
    client = PdClient(pd.url)
    layout = client.kv_layout()
    assert layout["lease_verification"] is True
    assert layout["engine_socket"], "pd-connector names its engine socket"
    before = counters(pd)
    control_client = PdClient(pd.url)
    choose_engine_channel(control_client, layout, channel, "P's per-step batches")   # as the connector does
    assert control_client.engine_socket == (layout["engine_socket"] if channel == "auto" else None)
    control = PdControl(control_client, 12, 4, verify=True)
    control.start()
    control.wait_for_credit(20)

    p_kv = caches(seed=5)
    p_worker = PdWorker(client, 0, 1, 1)
    p_worker.register(p_kv, layout)
    bound = control.take(3)
    assert bound is not None
    p_worker.save([SaveSpec("c-1", "c-1", [6, 2, 4], bound.blocks, 10, bound.grant.rank_files, bound.grant.id)])
    params = control.params(bound, "c-1", 10)
    assert p_lease_state(pd, "c-1") is None, "P has no lease for the request before the commit"

    d_kv = caches()
    d_worker = PdWorker(PdClient(pd.url), 0, 1, 1, engine_channel=channel)
    d_worker.register(d_kv, layout)
    d_worker.start_loads([LoadSpec("c-1", "c-1", list(range(10)), params, [1, 7, 3], 0)], [])
    results = outcomes_of(d_worker, ["c-1"])
    assert results.failed == {}, results.failed
    g = PdGeometry.from_layout(layout)
    sent = torch.zeros(3, *g.block_shape())
    write_pd_blocks(list(p_kv.values()), [6, 2, 4], sent, [0, 1, 2])
    got = torch.zeros(3, *g.block_shape())
    write_pd_blocks(list(d_kv.values()), [1, 7, 3], got, [0, 1, 2])
    assert torch.equal(sent, got), "D's blocks hold exactly what P's worker copied into the granted blocks"

    def grew(name):
        return counters(pd).get(name, 0) - before.get(name, 0)

    assert grew("pd_early_notifications_total") == 1, "P kept D's read notification for the commit"
    control.commit(bound, "c-1", 10)
    wait_until(lambda: grew("pd_credit_commits_total") == 1, "P got the commit")
    assert control.stats.commits_refused == 0
    wait_until(lambda: grew("pd_leases_released_by_readers_total") == 1,
               "the early read released the lease at the commit")
    assert p_lease_state(pd, "c-1") is None
    control.close(10)
    if channel == "auto":   # every batch of the control thread went over the socket, none over HTTP
        assert grew("socket batch") >= 2 and grew("http batch") == 0, counters(pd)
    else:
        assert grew("socket batch") == 0 and grew("http batch") >= 2, counters(pd)
    p_worker.shutdown()
    d_worker.shutdown()
    wait_until(lambda: status(pd)["producer"]["blocks_in_use"] == 0, "every granted block back after close")
    s = status(pd)
    assert (s["producer"]["leases_live"], s["producer"]["slots_in_use"], s["consumer"]["blocks_in_use"]) == (0, 0, 0), s


class AnswerLostOnce(PdClient):
    """Sends the first batch that asks for a new grant to pd-connector and drops its answer, as the plugin saw it
    in the side-by-side bench when P's JVM stopped for longer than the batch's wait: P granted, the plugin
    never heard of it."""

    def __init__(self, url):
        super().__init__(url)
        self.lost = None

    def batch(self, body):
        answer = super().batch(body)
        if self.lost is None and "grant" in body and "extend" not in body["grant"]:
            self.lost = answer.get("grant")
            raise PdError(0, "timeout", "batch: no answer within 10.0 s (the test dropped it)")
        return answer


def test_a_grant_whose_answer_never_reached_the_plugin_does_not_keep_ps_blocks(tmp_path_factory):
    # a pd-connector of its own (a short directory: its engine socket's path must fit): were the ask not withdrawn,
    # its grant would hold every block until the reservation timeout
    settings = dict(SETTINGS, **{"pd.lease.reservation-timeout": "10m"})   # the default, said here
    with PdService(tmp_path_factory.mktemp("lost"), "pd-lost-grant", settings) as pd:
        client = AnswerLostOnce(pd.url)
        control = PdControl(client, 32, 32, verify=True)   # credit: every block P has
        control.start()
        try:
            deadline = time.monotonic() + 10
            while client.lost is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert client.lost is not None and client.lost["block_ids"], "P granted the ask whose answer was lost"
            # what a user sees: the plugin has credit again, and once it closes P holds no block
            control.wait_for_credit(10)
            assert control.take(3) is not None, "the plugin binds a request after the lost answer"
        finally:
            control.close(10)
        wait_until(lambda: status(pd)["producer"]["blocks_in_use"] == 0, "every block back after close", 10)
        with urllib.request.urlopen(pd.url + "/q/metrics", timeout=10) as r:
            metrics = r.read().decode()
        assert "pd_credit_grants_withdrawn_total 1.0" in metrics, "the operator sees the withdrawn grant counted"


class CommitAnswerLostOnce(PdClient):
    """Sends the first batch that carries commits and drops its answer: P applied the commits, the plugin sends
    them again."""

    def __init__(self, url):
        super().__init__(url)
        self.lost = None

    def batch(self, body):
        answer = super().batch(body)
        if self.lost is None and body.get("commits"):
            self.lost = answer
            raise PdError(0, "timeout", "batch: no answer within 10.0 s (the test dropped it)")
        return answer


def test_a_commit_sent_again_after_its_answer_was_lost_is_refused_as_applied_and_the_lease_stands(pd, caplog):
    control = PdControl(CommitAnswerLostOnce(pd.url), 8, 8, verify=True)
    control.start()
    try:
        control.wait_for_credit(10)
        bound = control.take(1)
        control.commit(bound, "commit-twice", T)
        wait_until(lambda: "P applied it the first time" in caplog.text, "the commit sent again, refused as applied")
        assert control._client.lost["commits"][0]["status"] == 200, "P applied the first one"
        assert control.stats.commits_refused == 0, "its params are good: no refused commit"
        assert p_lease_state(pd, "commit-twice") is not None, "the lease of the first commit stands"
        assert not bound.grant.dead, "the grant is still used"
        control.abort("commit-twice")
        wait_until(lambda: p_lease_state(pd, "commit-twice") is None, "the lease aborted")
    finally:
        control.close(10)
    wait_until(lambda: status(pd)["producer"]["blocks_in_use"] == 0, "every block back after close", 10)
