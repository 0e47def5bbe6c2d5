"""The plugin's pieces against a real pd-connector (packaged jar, role both, real NIXL, on
127.0.0.1): KV written through P's shared file the way the P worker writes it comes out of D's pull,
read from D's shared KV file (no KV over HTTP), into other vLLM blocks unchanged, and is released; a
pull never released is freed at pd.consumer.retention; a declined pull is a load failure with
pd-connector's reason; the client's errors and deadlines."""

import json
import re
import socket
import threading
import time
import urllib.request

import pytest
import torch

from pd_connector_vllm.client import PdClient, PdError
from pd_connector_vllm.connector import PdSettings
from pd_connector_vllm.layout import PdGeometry
from pd_connector_vllm.specs import LoadSpec, SaveSpec
from pd_connector_vllm.worker import LoadResults, PdWorker

from pd_service import PdService, free_port

L, H, T, D, NB = 2, 2, 4, 8, 8
GEOMETRY = {"pd.model.layers": str(L), "pd.model.kv-heads": str(H), "pd.model.head-dim": str(D),
            "pd.model.block-tokens": str(T), "pd.model.dtype-bytes": "4", "pd.kv.num-blocks": "32",
            "pd.role": "both", "pd.consumer.failure-policy": "fail"}


@pytest.fixture(scope="module")
def pd(tmp_path_factory):
    with PdService(tmp_path_factory.mktemp("pd"), "pd-plugin-test", GEOMETRY) as service:
        yield service


def vllm_caches(seed=None):
    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    make = (lambda: torch.randn(NB, H, T, 2 * D, generator=gen)) if gen else (lambda: torch.zeros(NB, H, T, 2 * D))
    return {f"model.layers.{i}.self_attn.attn": make() for i in range(L)}


def test_kv_layout_is_the_configured_geometry(pd):
    layout = PdClient(pd.url).kv_layout()
    g = PdGeometry.from_layout(layout)
    assert (g.layers, g.heads_per_rank, g.head_dim, g.block_tokens, g.dtype_bytes, g.tp_size) == (L, H, D, T, 4, 1)
    assert layout["role"] == "both" and layout["num_blocks"] == 32


def produce(pd, request_id, p_kv, vllm_blocks, num_tokens, token=None):
    """What the plugin does on P: reserve, the worker's copy into the shared file, finish."""
    client = PdClient(pd.url, token=token)
    r = client.reserve(request_id, num_tokens)
    p_worker = PdWorker(client, 0, 1, 1)
    p_worker.register(p_kv, client.kv_layout())
    p_worker.save([SaveSpec(request_id, request_id, vllm_blocks, r["block_ids"], num_tokens,
                            [(x["kv_file"], x["region_bytes"]) for x in r["ranks"]])])
    params = client.finish(request_id)["kv_transfer_params"]
    p_worker.shutdown()
    return params


def outcomes_of(worker, request_ids, seconds=30.0):
    """The worker's load results once every one of `request_ids` has one (a failed load is finished too). Asked
    before `shutdown`, which drops a load its thread has not taken up yet."""
    got = LoadResults()
    deadline = time.monotonic() + seconds
    while True:
        r = worker.take_results()
        got.finished |= r.finished
        got.failed.update(r.failed)
        if set(request_ids) <= got.finished:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"no result for {sorted(set(request_ids) - got.finished)} within {seconds} s")
        time.sleep(0.01)


def load_on_d(pd, spec, client=None, engine_channel="auto"):
    client = client or PdClient(pd.url)
    d_kv = vllm_caches()
    worker = PdWorker(client, 0, 1, 1, engine_channel=engine_channel)
    worker.register(d_kv, client.kv_layout())
    worker.start_loads([spec], [])
    results = outcomes_of(worker, [spec.request_id])
    worker.shutdown()
    return results, d_kv


def counts(service, metric, keys):
    """D's own counter ``metric`` from /q/metrics, summed by the values of the labels ``keys``."""
    with urllib.request.urlopen(service.url + "/q/metrics", timeout=5) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        m = re.match(re.escape(metric) + r"\{(.*)\} (\S+)$", line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
            key = tuple(labels.get(k) for k in keys)
            out[key] = out.get(key, 0) + float(m.group(2))
    return out


def http_requests(service):
    """The HTTP requests D served, by (method, uri template)."""
    return counts(service, "http_server_requests_seconds_count", ("method", "uri"))


def socket_requests(service):
    """The requests D's engine socket served, by (op, status)."""
    return counts(service, "pd_engine_socket_requests_total", ("op", "status"))


def d_holds(service):
    with urllib.request.urlopen(service.url + "/v1/status", timeout=5) as r:
        d = json.load(r)["consumer"]
    return d["pulls_live"], d["blocks_in_use"]


def delta(after, before, key):
    return after.get(key, 0) - before.get(key, 0)


KV_READOUT = ("GET", "/v1/consumer/requests/{id}/kv")
RELEASE = ("DELETE", "/v1/consumer/requests/{id}")
PULL = ("POST", "/v1/consumer/pull")


def test_with_pd_engine_channel_http_the_same_load_goes_over_http(pd):
    p_kv = vllm_caches(seed=12)
    params = produce(pd, "plug-h", p_kv, [6, 2, 4], 10)
    before, socket_before = http_requests(pd), socket_requests(pd)
    results, d_kv = load_on_d(pd, LoadSpec("plug-h-d", "plug-h-d", list(range(10)), params, [1, 7, 3], 0),
                              engine_channel="http")
    after, socket_after = http_requests(pd), socket_requests(pd)
    assert results.finished == {"plug-h-d"} and results.failed == {}
    assert delta(after, before, PULL) == delta(after, before, RELEASE) == 1, after
    assert delta(socket_after, socket_before, ("pull", "200")) == 0, socket_after
    for name, t in d_kv.items():
        for p_block, d_block in ((6, 1), (2, 7), (4, 3)):
            assert torch.equal(t[d_block], p_kv[name][p_block]), (name, p_block)
    assert d_holds(pd) == (0, 0)


def test_kv_written_through_ps_file_comes_out_of_ds_pull_into_other_vllm_blocks_unchanged(pd):
    p_kv = vllm_caches(seed=11)
    params = produce(pd, "plug-1", p_kv, [6, 2, 4], 10)
    assert params["do_remote_prefill"] is True and params["remote_num_tokens"] == 10
    assert "remote_lease_slot" in params and "remote_lease_nonce" in params
    before, socket_before = http_requests(pd), socket_requests(pd)
    results, d_kv = load_on_d(pd, LoadSpec("plug-1-d", "plug-1-d", list(range(10)), params, [1, 7, 3], 0))
    after, socket_after = http_requests(pd), socket_requests(pd)
    assert results.finished == {"plug-1-d"} and results.failed == {}
    # the KV came out of D's shared file: D served the pull and its release on its engine socket, no KV
    # read-out and no HTTP pull or release
    table_end = 32 * L * 2 * H * T * D * 4 + 32 * 8
    assert (pd.shm_dir / "pd-pd-plugin-test-d0.kv").stat().st_size == -(-table_end // 4096) * 4096, \
        "32 blocks, then their epochs, in whole pages"
    assert after.get(KV_READOUT, 0) == before.get(KV_READOUT, 0) == 0, after
    assert delta(after, before, PULL) == delta(after, before, RELEASE) == 0, after
    assert delta(socket_after, socket_before, ("pulls", "200")) == 1, socket_after   # a step's pulls, its releases
    assert delta(socket_after, socket_before, ("releases", "204")) == 1, socket_after
    assert d_holds(pd) == (0, 0), "released: D's blocks are free again"
    p_layers, d_layers = list(p_kv.values()), list(d_kv.values())
    for l in range(L):   # whole blocks, the last one too: a plane's interior is the attention kernel's
        assert torch.equal(d_layers[l][1], p_layers[l][6]) and torch.equal(d_layers[l][7], p_layers[l][2])
        assert torch.equal(d_layers[l][3], p_layers[l][4])
        assert not d_layers[l][0].any() and not d_layers[l][2].any()


def test_a_steps_loads_go_as_one_request_of_pulls_and_one_of_releases_and_land_unchanged(pd):
    p_kv = vllm_caches(seed=12)
    params_a = produce(pd, "step-a", p_kv, [6, 2, 4], 10)
    params_b = produce(pd, "step-b", p_kv, [5, 0], 7)
    before = socket_requests(pd)
    client = PdClient(pd.url)
    d_kv = vllm_caches()
    worker = PdWorker(client, 0, 1, 1)
    worker.register(d_kv, client.kv_layout())
    worker.start_loads([LoadSpec("step-a-d", "step-a-d", list(range(10)), params_a, [1, 7, 3], 0),
                        LoadSpec("step-b-d", "step-b-d", list(range(7)), params_b, [0, 5], 0)], [])
    results = outcomes_of(worker, ["step-a-d", "step-b-d"])
    worker.shutdown()
    after = socket_requests(pd)
    assert results.failed == {}, results.failed
    assert delta(after, before, ("pulls", "200")) == 2 and delta(after, before, ("releases", "204")) == 2, after
    assert delta(after, before, ("pull", "200")) == delta(after, before, ("release", "204")) == 0, after
    assert d_holds(pd) == (0, 0), "released: D's blocks are free again"
    p_layers, d_layers = list(p_kv.values()), list(d_kv.values())
    for l in range(L):
        for p_block, d_block in ((6, 1), (2, 7), (4, 3), (5, 0), (0, 5)):
            assert torch.equal(d_layers[l][d_block], p_layers[l][p_block]), (l, p_block, d_block)


GPT_OSS_VOCAB = 201_088   # above pd-connector's own (the reference engine's) 151,936


@pytest.mark.parametrize("engine_channel", ["auto", "http"])
def test_a_prompt_with_ids_of_a_larger_vocabulary_is_pulled_when_the_plugin_names_its_models(pd, engine_channel):
    """A gpt-oss prompt has token ids pd-connector's reference engine does not know; the plugin names the
    model's vocabulary in its pull, so D takes them (over the engine socket and over HTTP) and the KV lands."""
    tokens = [151_935, 151_936, 200_000, GPT_OSS_VOCAB - 1, 7, 8]
    p_kv = vllm_caches(seed=21)
    name = f"vocab-{engine_channel}"
    params = produce(pd, name, p_kv, [3, 5], len(tokens))
    results, d_kv = load_on_d(pd, LoadSpec(f"{name}-d", f"{name}-d", tokens, params, [4, 6], 0),
                              client=PdClient(pd.url, vocab_size=GPT_OSS_VOCAB), engine_channel=engine_channel)
    assert results.finished == {f"{name}-d"} and results.failed == {}, results.failed
    p_layers, d_layers = list(p_kv.values()), list(d_kv.values())
    for l in range(L):
        assert torch.equal(d_layers[l][4], p_layers[l][3]) and torch.equal(d_layers[l][6], p_layers[l][5]), l
    assert d_holds(pd) == (0, 0)


def test_a_token_id_beyond_the_vocabulary_the_plugin_names_is_refused_by_name(pd):
    params = produce(pd, "vocab-over", vllm_caches(seed=22), [0], 3)
    client = PdClient(pd.url, vocab_size=1000)
    with pytest.raises(PdError) as e:
        client.pull("vocab-over-d", [1, 2, 1000], params, 0)
    assert e.value.status == 400 and "[0, 1000)" in str(e.value) and "vocab_size" in str(e.value), str(e.value)
    PdClient(pd.url).abort("vocab-over")
    assert d_holds(pd) == (0, 0), "a refused pull holds nothing"


def test_a_pull_with_a_nonce_that_is_not_ps_is_declined_and_becomes_a_load_failure(pd):
    params = produce(pd, "plug-2", vllm_caches(seed=12), [0, 1], 6)
    forged = dict(params, remote_lease_nonce=params["remote_lease_nonce"] + 1)
    results, d_kv = load_on_d(pd, LoadSpec("plug-2-d", "plug-2-d", list(range(6)), forged, [2, 3], 0))
    assert results.finished == {"plug-2-d"} and results.failed == {"plug-2-d": "lease_mismatch"}
    assert all(not t.any() for t in d_kv.values())
    PdClient(pd.url).abort("plug-2")


def test_a_pull_of_a_prompt_of_another_length_is_a_load_failure(pd):
    params = produce(pd, "plug-3", vllm_caches(seed=13), [0, 1], 6)
    results, _ = load_on_d(pd, LoadSpec("plug-3-d", "plug-3-d", list(range(7)), params, [2, 3], 0))
    assert results.failed == {"plug-3-d": "invalid-kv-transfer-params"}
    PdClient(pd.url).abort("plug-3")


def test_an_aborted_reservation_cannot_be_finished(pd):
    client = PdClient(pd.url)
    client.reserve("plug-4", 5)
    client.abort("plug-4")
    with pytest.raises(PdError) as e:
        client.finish("plug-4")
    assert (e.value.status, e.value.reason) == (404, "unknown-request")


def test_nothing_is_held_after_the_tests(pd):
    """Every lease above was read (D notified P) or aborted: P and D hold no block, slot or pull."""
    deadline_s = 10  # D's read notifications reach P at once; an abort frees at once
    deadline = time.monotonic() + deadline_s
    while True:
        with urllib.request.urlopen(pd.url + "/v1/status", timeout=5) as r:
            status = json.load(r)
        p, d = status["producer"], status["consumer"]
        held = (p["blocks_in_use"], p["slots_in_use"], p["leases_live"], d["pulls_live"], d["blocks_in_use"])
        if held == (0, 0, 0, 0, 0) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert held == (0, 0, 0, 0, 0), (f"P and D holding nothing (P blocks, slots, leases; D pulls, blocks) within "
                                     f"{deadline_s} s: {held}; status {status}")


RETENTION_S = 2


@pytest.fixture(scope="module")
def pd_retention(tmp_path_factory):
    """D keeps an unreleased pull's blocks for pd.consumer.retention (here 2 s, 60 s by default)."""
    with PdService(tmp_path_factory.mktemp("pd-ret"), "pd-plugin-ret",
                   {**GEOMETRY, "pd.consumer.retention": f"{RETENTION_S}s"}) as service:
        yield service


class LateRelease(PdClient):
    """A plugin whose release comes after pd.consumer.retention, one by one or a step's in one request."""

    def release(self, request_id, decode_rank):
        time.sleep(RETENTION_S + 1.5)
        super().release(request_id, decode_rank)

    def releases(self, items):
        time.sleep(RETENTION_S + 1.5)
        return super().releases(items)


def wait_until_d_holds_nothing(service):
    t0 = time.monotonic()
    while d_holds(service) != (0, 0) and time.monotonic() - t0 < RETENTION_S + 10:
        time.sleep(0.1)
    assert d_holds(service) == (0, 0), "freed by pd.consumer.retention"


def test_a_pull_never_released_is_freed_at_the_retention_and_a_later_pull_into_its_blocks_fails_its_copy(
        pd_retention, monkeypatch):
    """The copy outlives the retention, and a later pull gets the blocks (D reuses the last freed first) and
    READs its KV into them before the copy: the epochs read after the copy fail the load."""
    import pd_connector_vllm.kv_places as kv_places
    params = produce(pd_retention, "ret-2", vllm_caches(seed=15), [0, 1], 6)
    later_params = produce(pd_retention, "ret-3", vllm_caches(seed=16), [0, 1], 6)
    copy, later = kv_places.read_pd_blocks, {}

    def copy_after_a_later_pull(src, layers, vllm_blocks, pd_blocks, views=None, only_layers=None):
        wait_until_d_holds_nothing(pd_retention)
        later.update(PdClient(pd_retention.url).pull("ret-3-d", list(range(6)), later_params, 0))
        copy(src, layers, vllm_blocks, pd_blocks, views, only_layers)

    monkeypatch.setattr(kv_places, "read_pd_blocks", copy_after_a_later_pull)
    results, _ = load_on_d(pd_retention, LoadSpec("ret-2-d", "ret-2-d", list(range(6)), params, [2, 3], 0))
    assert results.failed["ret-2-d"].startswith("kv-released-early"), results.failed
    assert later["state"] == "received" and later["blocks_epoch"] != 0
    PdClient(pd_retention.url).release("ret-3-d", 0)
    assert d_holds(pd_retention) == (0, 0)


def test_a_load_checked_by_its_epochs_is_right_although_its_release_comes_after_the_retention(pd_retention):
    p_kv = vllm_caches(seed=17)
    params = produce(pd_retention, "ret-4", p_kv, [0, 1], 6)
    results, d_kv = load_on_d(pd_retention, LoadSpec("ret-4-d", "ret-4-d", list(range(6)), params, [2, 3], 0),
                              LateRelease(pd_retention.url))
    assert results.finished == {"ret-4-d"} and results.failed == {}
    for name, t in d_kv.items():
        assert torch.equal(t[2], p_kv[name][0]) and torch.equal(t[3], p_kv[name][1])
    assert d_holds(pd_retention) == (0, 0), "the late release found nothing left to free"


def test_a_pull_never_released_is_freed_at_the_retention_and_a_release_after_it_fails_the_load(pd_retention):
    params = produce(pd_retention, "ret-1", vllm_caches(seed=14), [0, 1], 6)
    client = PdClient(pd_retention.url)
    pulled = client.pull("ret-1-d", list(range(6)), params, 0)   # and never released
    assert len(pulled["block_ids"]) == 2 and d_holds(pd_retention) == (1, 2)
    t0 = time.monotonic()
    while d_holds(pd_retention) != (0, 0) and time.monotonic() - t0 < RETENTION_S + 10:
        time.sleep(0.1)
    assert d_holds(pd_retention) == (0, 0), "freed by pd.consumer.retention"
    with pytest.raises(PdError) as e:
        client.release("ret-1-d", 0)
    assert e.value.status == 404

    params = produce(pd_retention, "ret-5", vllm_caches(seed=15), [0, 1], 6)
    results, _ = load_on_d(pd_retention, LoadSpec("ret-5-d", "ret-5-d", list(range(6)), params, [2, 3], 0),
                           NoEpochs(pd_retention.url))
    assert results.failed == {"ret-5-d": "kv-released-early"}, "what it copied may be another pull's by then"
    assert d_holds(pd_retention) == (0, 0)


class NoEpochs(LateRelease):
    """A D whose replies name no epochs (anonymous memory, an older pd-connector): the release vouches."""

    def pull(self, request_id, token_ids, params, decode_rank):
        reply = super().pull(request_id, token_ids, params, decode_rank)
        reply.pop("blocks_epoch", None)
        return reply

    def pulls(self, items, on_reply):
        def without_epoch(i, error, reply):
            if reply is not None:
                reply.pop("blocks_epoch", None)
            on_reply(i, error, reply)
        super().pulls(items, without_epoch)


def test_a_server_that_never_answers_is_a_timeout_within_the_deadline():
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)                     # accepts connections in the kernel, never answers
        client = PdClient(f"http://127.0.0.1:{silent.getsockname()[1]}", timeout_s=0.5)
        with pytest.raises(PdError) as e:
            client.kv_layout()
        assert (e.value.status, e.value.reason) == (0, "timeout")


def test_a_closed_port_is_unreachable():
    port = free_port()  # nothing listens there (below the ephemeral range, so no other process's socket either)
    with pytest.raises(PdError) as e:
        PdClient(f"http://127.0.0.1:{port}", timeout_s=2).kv_layout()
    assert (e.value.status, e.value.reason) == (0, "unreachable")


ENGINE_TOKEN = "engine-token-for-the-plugin-0123456789"
NEW_ENGINE_TOKEN = "engine-token-rotated-in-0123456789"
AUTH = {"pd.auth.enabled": "true", "pd.auth.tokens.engine": f"{NEW_ENGINE_TOKEN},{ENGINE_TOKEN}",
        "pd.auth.tokens.router": "router-token-0123456789abcdef", "pd.auth.tokens.peer": "peer-token-0123456789abcdef",
        "pd.auth.tokens.operator": "operator-token-0123456789abcdef"}


@pytest.fixture(scope="module")
def pd_auth(tmp_path_factory):
    """Auth on, mid-rotation: the engine role accepts the new token and the old one (README "Rotation")."""
    with PdService(tmp_path_factory.mktemp("pd-auth"), "pd-plugin-auth", {**GEOMETRY, **AUTH}) as service:
        yield service


def test_with_auth_on_the_plugin_presents_its_engine_token_and_without_it_is_refused(pd_auth):
    client = PdClient(pd_auth.url, token=ENGINE_TOKEN)
    assert client.kv_layout()["layers"] == L
    r = client.reserve("auth-1", 5)
    assert r["block_ids"]
    client.abort("auth-1")
    with pytest.raises(PdError) as e:
        PdClient(pd_auth.url).kv_layout()
    assert (e.value.status, e.value.reason) == (401, "unauthenticated")


def test_with_auth_on_ds_plugin_pulls_and_releases_with_its_engine_token(pd_auth):
    """The vLLM overlay gives each plugin the engine token only: D's load (pull, release) must take it."""
    p_kv = vllm_caches(seed=16)
    params = produce(pd_auth, "auth-2", p_kv, [5, 3], 6, token=ENGINE_TOKEN)
    results, d_kv = load_on_d(pd_auth, LoadSpec("auth-2-d", "auth-2-d", list(range(6)), params, [0, 1], 0),
                              PdClient(pd_auth.url, token=ENGINE_TOKEN))
    assert results.failed == {} and results.finished == {"auth-2-d"}
    for p_layer, d_layer in zip(p_kv.values(), d_kv.values()):
        assert torch.equal(d_layer[0], p_layer[5]) and torch.equal(d_layer[1], p_layer[3])


def test_during_a_rotation_the_plugin_given_the_services_token_list_is_accepted(pd_auth, monkeypatch):
    """k8s/overlays/vllm gives PD_ENGINE_TOKEN the Secret's PD_AUTH_TOKENS_ENGINE: mid-rotation the plugin
    holds the service's own list and presents its first token; the list itself is no token."""
    monkeypatch.setenv("PD_ENGINE_TOKEN", AUTH["pd.auth.tokens.engine"])
    client = PdSettings.from_extra({"pd_url": pd_auth.url}).client()
    assert client.kv_layout()["layers"] == L
    client.reserve("rot-1", 5)
    client.abort("rot-1")
    client.close()
    with pytest.raises(PdError) as e:
        PdClient(pd_auth.url, token=AUTH["pd.auth.tokens.engine"]).kv_layout()
    assert (e.value.status, e.value.reason) == (401, "unauthenticated")


# ---- tensor parallelism: a TP 2 engine beside a pd-connector of 2 ranks (role both: P and D at TP 2) ----

@pytest.fixture(scope="module")
def pd_tp2(tmp_path_factory):
    with PdService(tmp_path_factory.mktemp("pd-tp2"), "pd-plugin-tp2", {**GEOMETRY, "pd.tp-size": "2"}) as service:
        yield service


def rank_caches(seed):
    """Each TP worker's own caches: H / 2 heads of every layer."""
    gen = torch.Generator().manual_seed(seed)
    return {f"model.layers.{i}.self_attn.attn": torch.randn(NB, H // 2, T, 2 * D, generator=gen) for i in range(L)}


def test_tp2_workers_save_their_heads_and_join_one_pull_whose_blocks_stay_until_both_released(pd_tp2):
    client = PdClient(pd_tp2.url)
    layout = client.kv_layout()
    assert layout["tp_size"] == 2 and layout["heads_per_rank"] == H // 2
    r = client.reserve("tp-1", 10)
    p_kv = [rank_caches(seed=20 + rank) for rank in range(2)]
    for rank in range(2):   # each P worker writes its heads into its rank's file
        w = PdWorker(client, rank, 2, 1)
        w.register(p_kv[rank], layout)
        w.save([SaveSpec("tp-1", "tp-1", [5, 0, 3], r["block_ids"], 10,
                         [(x["kv_file"], x["region_bytes"]) for x in r["ranks"]])])
        w.shutdown()
    params = client.finish("tp-1")["kv_transfer_params"]
    before = socket_requests(pd_tp2)

    gate = threading.Barrier(2)
    d_kv, workers = [vllm_caches_tp2() for _ in range(2)], []
    for rank in range(2):   # both D workers ask at once: one starts the pull, the other joins it
        w = PdWorker(JoinAtOnce(pd_tp2.url, gate), rank, 2, 1)
        w.register(d_kv[rank], layout)
        workers.append(w)
    workers[0].start_loads([LoadSpec("tp-1-d", "tp-1-d", list(range(10)), params, [2, 7, 4], 0)], [])
    workers[1].start_loads([LoadSpec("tp-1-d", "tp-1-d", list(range(10)), params, [2, 7, 4], 0)], [])
    outcomes = [outcomes_of(w, ["tp-1-d"]) for w in workers]
    for w in workers:
        w.shutdown()
    assert all(o.finished == {"tp-1-d"} and o.failed == {} for o in outcomes), outcomes
    for rank in range(2):   # each D worker got its own rank's heads, P's blocks 5, 0, 3 in D's vLLM blocks 2, 7, 4
        for name, t in d_kv[rank].items():
            for p_block, d_block in ((5, 2), (0, 7), (3, 4)):
                assert torch.equal(t[d_block], p_kv[rank][name][p_block]), (rank, name, p_block)
    after = socket_requests(pd_tp2)
    assert delta(after, before, ("pulls", "200")) == 2 and delta(after, before, ("releases", "204")) == 2, after
    assert metric_value(pd_tp2, 'pd_pulls_total{outcome="received"}') == 1, "one pull for both ranks"
    assert d_holds(pd_tp2) == (0, 0), "D freed the pull's blocks once both ranks released"


def test_tp2_one_rank_released_keeps_the_blocks_for_the_other(pd_tp2):
    client = PdClient(pd_tp2.url)
    layout = client.kv_layout()
    r = client.reserve("tp-2", 6)
    for rank in range(2):
        w = PdWorker(client, rank, 2, 1)
        w.register(rank_caches(seed=30 + rank), layout)
        w.save([SaveSpec("tp-2", "tp-2", [1, 2], r["block_ids"], 6, [(x["kv_file"], x["region_bytes"]) for x in r["ranks"]])])
        w.shutdown()
    params = client.finish("tp-2")["kv_transfer_params"]
    pulled = client.pull("tp-2-d", list(range(6)), params, 0)
    client.release("tp-2-d", 0)
    assert d_holds(pd_tp2) == (1, 2), "rank 1 has not copied yet: the blocks stay"
    assert client.pull("tp-2-d", list(range(6)), params, 1)["block_ids"] == pulled["block_ids"], "rank 1 joins late"
    client.release("tp-2-d", 1)
    assert d_holds(pd_tp2) == (0, 0)


def vllm_caches_tp2():
    return {f"model.layers.{i}.self_attn.attn": torch.zeros(NB, H // 2, T, 2 * D) for i in range(L)}


class JoinAtOnce(PdClient):
    """Both ranks' pulls leave together, so the second reaches D while the first is in flight."""

    def __init__(self, url, gate):
        super().__init__(url)
        self._gate = gate

    def pull(self, request_id, token_ids, params, decode_rank):
        self._gate.wait(10)
        return super().pull(request_id, token_ids, params, decode_rank)


def metric_value(service, sample):
    with urllib.request.urlopen(service.url + "/q/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(sample + " "):
                return float(line.split()[-1])
    raise AssertionError(f"{service.name} exports no {sample}")
