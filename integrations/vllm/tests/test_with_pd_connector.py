"""The plugin's pieces against a real pd-connector (packaged jar, role both, real NIXL, on
127.0.0.1): KV written through P's shared file the way the P worker writes it comes out of D's pull
into other vLLM blocks unchanged; a declined pull is a load failure with pd-connector's reason; the
client's errors and deadlines."""

import socket

import pytest
import torch

from pd_connector_vllm.client import PdClient, PdError
from pd_connector_vllm.connector import PdSettings
from pd_connector_vllm.layout import PdGeometry, write_pd_blocks
from pd_connector_vllm.specs import LoadSpec, SaveSpec
from pd_connector_vllm.worker import PdWorker

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


def produce(pd, request_id, p_kv, vllm_blocks, num_tokens):
    """What the plugin does on P: reserve, the worker's copy into the shared file, finish."""
    client = PdClient(pd.url)
    r = client.reserve(request_id, num_tokens)
    p_worker = PdWorker(client, 0, 1, 1)
    p_worker.register(p_kv, client.kv_layout())
    p_worker.save([SaveSpec(request_id, request_id, vllm_blocks, r["block_ids"], num_tokens,
                            [(x["kv_file"], x["region_bytes"]) for x in r["ranks"]])])
    params = client.finish(request_id)["kv_transfer_params"]
    p_worker.shutdown()
    return params


def load_on_d(pd, spec):
    client = PdClient(pd.url)
    d_kv = vllm_caches()
    worker = PdWorker(client, 0, 1, 1)
    worker.register(d_kv, client.kv_layout())
    worker.start_loads([spec], [])
    worker.shutdown()
    return worker.take_results(), d_kv


def test_kv_written_through_ps_file_comes_out_of_ds_pull_into_other_vllm_blocks_unchanged(pd):
    p_kv = vllm_caches(seed=11)
    params = produce(pd, "plug-1", p_kv, [6, 2, 4], 10)
    assert params["do_remote_prefill"] is True and params["remote_num_tokens"] == 10
    assert "remote_lease_slot" in params and "remote_lease_nonce" in params
    results, d_kv = load_on_d(pd, LoadSpec("plug-1-d", "plug-1-d", list(range(10)), params, [1, 7, 3], 0))
    assert results.finished == {"plug-1-d"} and results.failed == {}
    p_layers, d_layers = list(p_kv.values()), list(d_kv.values())
    for l in range(L):   # whole blocks, the last one too: a plane's interior is the attention kernel's
        assert torch.equal(d_layers[l][1], p_layers[l][6]) and torch.equal(d_layers[l][7], p_layers[l][2])
        assert torch.equal(d_layers[l][3], p_layers[l][4])
        assert not d_layers[l][0].any() and not d_layers[l][2].any()


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
    import json
    import time
    import urllib.request
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
