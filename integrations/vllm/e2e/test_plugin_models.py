"""The model shapes P/D fleets serve beyond a plain GQA model, through the plugin on vLLM's CPU build:

- ``mla``: a DeepSeek-V2-architecture model (multi-head latent attention, a 576-wide latent: kv_lora_rank 512 +
  rope 64), which vLLM's CPU build runs on its MLA backend (AMX_MLA where the CPU has AMX, else CPU_MLA); each
  pd-connector runs pd.model.attention=mla.
- ``sliding``: a Llama-architecture model whose first layer attends through a 64-token sliding window and the
  second fully (Gemma 3's and gpt-oss's shape). The plugin declares SupportsHMA, so vLLM keeps its hybrid KV
  cache manager on: two KV cache groups, the window layer keeping a request's last blocks only, and the plugin
  moves each group's blocks (docs/vllm.md, "Sliding windows").

Per model, one fleet: P with the plugin (8 blocks' worth of 128 tokens, 6 s leases) and D under kv_load_failure_policy
``recompute`` (with ``PD_E2E_FULL=1`` a D under ``fail`` too), started at once, every plugin logging a
digest of each request's KV. The reference answers are P's own for requests without kv_transfer_params (the
plugin leaves those to vLLM), each under a fresh ``cache_salt`` so that its prefix cache is cold, then warm, as
the oracle below needs. The ``fail`` tests are opt-in: each vLLM server more takes about 30 s of the fleet's start
on the 2-core VM, and what ``fail`` adds (vLLM failing the request on pd-connector's decline) does not depend on
the model; test_plugin.py runs it in CI on the Qwen2 model.

The oracle. D loads all of a prompt but its last token and computes that one over the loaded KV: one new token,
which vLLM's MLA runs through its decode kernel, where one instance computing the whole prompt runs it through
its prefill kernel, and in bfloat16 the two differ enough to change greedy answers of the random-weight model.
So the prompts are a whole number of 128-token blocks (so of CPU_MLA's 16-token ones too) plus one token, and the
reference is a plain request's answer when the prefix cache already holds the prompt's full blocks (asked
twice): the last token then goes through the same path on both sides, and any difference is the KV's. Shown for each model: D's KV, as its vLLM
holds it after the load, hashes to what P's vLLM held (the digests); P/D answers equal the reference (where that
instance caches prefixes: vLLM turns its prefix cache off for MLA on a CPU without AMX, and that test then says it
did not run); the seed
reproducer (lapse) is declined, failing the request under ``fail`` and answering the reference under
``recompute``; a reused request id's late reader is declined and the new attempt's reader served."""
import json
import re
import urllib.request
import uuid

import pytest

from conftest import FULL
from fleet import Decoder, Endpoint, Fleet, blocks_of, metric, refused_pull, status as service_status
from test_plugin import LEASE_S, SOCKET, assert_failed_with_lease_reason
from workload import Case, P_BLOCKS, Reproducer, answer_text, ask, client, prefill_on_p, reuse, token_prompt

ARCHES = ["mla", "sliding"]
# vLLM's blocks on P: pd-connector's P_BLOCKS per KV cache group (the sliding model has two, and 8 blocks split
# between them would not hold one longest sequence); both counted in 128-token blocks (fleet.blocks_of)
VLLM_P_GROUPS = {"mla": 1, "sliding": 2}


def p_blocks(fleet: Fleet, groups: int = 1) -> int:
    return blocks_of(fleet.geometry, groups * P_BLOCKS)

DIGESTS = {"pd_log_kv_digest": "true"}
# 2 and 5 whole blocks and one token: D computes that token alone, as one instance with the blocks cached does
CASES = [Case(f"completion-{n}-{tag}", False, stream, token_prompt(7700 + n + stream, n))
         for n in (257, 641) for stream, tag in ((False, "plain"), (True, "stream"))]
# the request as the router named it: vLLM appends a suffix of its own on each instance (cmpl-<id>-0-<8 hex>)
# vLLM's CPU platform, for MLA without AMX (CPU_MLA), turns its prefix cache off and says so
READ_BYTES = "nixl_bytes_transferred_sum"  # D's block READs (pd-connector's metric, as vLLM's NIXL names it)
PREFIX_CACHE_OFF = "forcing chunked prefill and prefix caching to be disabled"
DIGEST_LINE = re.compile(r"KV digest: ([PD]) rank 0 (?:saved|loaded) (\S+)-[0-9a-f]{8}: ([0-9a-f]+)")


class ModelFleet:
    def __init__(self, fleet: Fleet, arch: str):
        self.fleet, self.arch = fleet, arch
        self.pd_p = fleet.pd_service("pd-p", "producer", lease=f"{LEASE_S}s", num_blocks=p_blocks(fleet))
        self.decoders = {policy: Decoder(fleet, self.pd_p, policy, LEASE_S, plugin_settings=DIGESTS)
                         for policy in (("recompute", "fail") if FULL else ("recompute",))}
        self.p = fleet.plugin_vllm("p", self.pd_p, num_blocks=p_blocks(fleet, VLLM_P_GROUPS[arch]), wait=False,
                                   plugin_settings=DIGESTS)
        fleet.ready(self.p, *(dec.d for dec in self.decoders.values()))
        self.proxy = fleet.proxy(self.p, self.decoders["recompute"].d)

    def reproducer(self) -> Reproducer:
        return Reproducer(lease_s=LEASE_S, p_leases=lambda: service_status(self.pd_p)["producer"]["leases_live"])

    def reference(self, case: Case) -> tuple[str, str]:
        return reference(self.p, case)

    def digests(self, side: str) -> dict[str, str]:
        logs = self.p.process.log_text() + "".join(d.d.process.log_text() for d in self.decoders.values())
        return {m.group(2): m.group(3) for m in DIGEST_LINE.finditer(logs) if m.group(1) == side}


def reference(instance: Endpoint, case: Case) -> tuple[str, str]:
    """One instance's answer to a plain request computing the whole prompt, then with its full blocks cached."""
    c, salt = client(instance.url), uuid.uuid4().hex
    return ask(c, case, cache_salt=salt), ask(c, case, cache_salt=salt)


@pytest.fixture(scope="module", params=ARCHES)
def model(request):
    with Fleet(f"model-{request.param}", arch=request.param) as fleet:
        yield ModelFleet(fleet, request.param)
    assert all(p.session_gone() for p in fleet.stopped), "a process of the model fleet outlived its fleet"


def test_d_holds_ps_kv_after_the_load(model):
    for service in (model.pd_p, model.decoders["recompute"].pd_d):
        with urllib.request.urlopen(service.url + "/v1/kv-layout", timeout=5) as r:
            layout = json.load(r)
        assert layout["attention"] == model.fleet.geometry["attention"], layout
        assert layout["block_tokens"] == model.fleet.geometry["block_tokens"], layout
    if model.arch == "sliding":
        log = model.p.process.log_text()
        assert "Turning off hybrid kv cache manager" not in log, "vLLM turned its hybrid manager off beside the plugin"
        assert "PdConnector: 2 KV cache group(s) ['SlidingWindowSpec', 'FullAttentionSpec']" in log, \
            "P's plugin did not see the window group beside the full one"
    model.references = {case.name: model.reference(case) for case in CASES}
    d = model.decoders["recompute"]
    received_before = metric(d.pd_d, SOCKET, {"op": "pulls", "status": "200"})
    read_before = metric(d.pd_d, READ_BYTES)
    model.answers = {case.name: ask(client(model.proxy.url), case) for case in CASES}
    received = metric(d.pd_d, SOCKET, {"op": "pulls", "status": "200"}) - received_before
    read, expected = metric(d.pd_d, READ_BYTES) - read_before, bytes_read(model.fleet.geometry)
    assert read == expected, f"{model.arch}: D's pd-connector read {read} bytes for the prompts, not {expected}"
    assert received >= len(CASES), f"D received {received} pulls for {len(CASES)} multi-block prompts"
    assert d.lease_declines() == 0, "a pull was declined although every D leg came right after its P leg"
    saved, loaded = model.digests("P"), model.digests("D")
    assert len(loaded) >= len(CASES), f"D logged {len(loaded)} digests for {len(CASES)} pulls"
    differ = {r: (loaded[r], saved.get(r)) for r in loaded if saved.get(r) != loaded[r]}
    assert not differ, f"{model.arch}: the KV D's vLLM holds after the load is not what P's vLLM held: {differ}"


def bytes_read(g: dict) -> int:
    """What D's pd-connector reads of CASES' KV: every layer of every block P exported (ceil(tokens / block)), but a
    window group's layers of a request's last ceil(window / block) + 1 blocks only (pd-connector's KvGroups)."""
    layer_bytes = (1 if g["attention"] == "mla" else 2) * g["kv_heads"] * g["block_tokens"] * g["head_dim"] * \
        g["dtype_bytes"]
    groups = [item.split("/") for item in g.get("kv_groups", f"full/{g['layers']}").split(",")]
    total = 0
    for case in CASES:
        blocks = -(-len(case.prompt) // g["block_tokens"])
        for kind, layers in groups:
            window = int(kind.removeprefix("window:")) if kind.startswith("window:") else 0
            reach = -(-window // g["block_tokens"]) + 1 if window else blocks
            total += int(layers) * min(blocks, reach) * layer_bytes
    return total


def test_pd_answers_what_one_instance_answers_over_its_cached_blocks(model):
    if not hasattr(model, "answers"):
        pytest.skip("DID NOT RUN: test_d_holds_ps_kv_after_the_load did not ask the prompts")
    if PREFIX_CACHE_OFF in model.p.process.log_text():
        pytest.skip(f"DID NOT RUN: vLLM turned its prefix cache off for {model.arch} on this CPU (MLA without AMX runs "
                    "CPU_MLA), so no instance computes a prompt's last token over cached blocks as D does; D's KV "
                    "equals P's (test_d_holds_ps_kv_after_the_load)")
    cold_differs = sorted(n for n, (cold, warm) in model.references.items() if cold != warm)
    print(f"\n{model.arch}: one instance answered {len(cold_differs)} of {len(CASES)} prompts differently with its "
          f"blocks cached than computing them whole: {cold_differs}")
    mismatches = {n: (a, model.references[n][1]) for n, a in model.answers.items() if a != model.references[n][1]}
    assert not mismatches, f"{model.arch} P/D through pd-connector answered differently from one instance: {mismatches}"


def test_a_decoder_of_other_kv_cache_groups_or_attention_is_refused_at_the_handshake(model):
    """A decoder's pd-connector naming other groups (a wider window) or the other attention is refused by P's
    compatibility hash, naming both geometries, and holds nothing."""
    other = ({"pd.model.kv-groups": "window:128/1,full/1"} if model.arch == "sliding"
             else {"pd.model.attention": "mha"})
    d = model.fleet.pd_service("pd-d-other", "consumer", peers=[model.pd_p], extra=other)
    prompt = token_prompt(7620, 257)
    params = prefill_on_p(model.p.url, prompt, f"{model.arch}-other-reader")["kv_transfer_params"]
    problem = refused_pull(d, f"{model.arch}-other-reader", prompt, params)
    said = ("kvGroups=window:64/1,full/1", "kvGroups=window:128/1,full/1") if model.arch == "sliding" else (
        "attention=MLA", "attention=MHA")
    assert all(s in problem["detail"] for s in said), problem
    model.fleet.stop(d)


def fail_decoder(model: ModelFleet) -> Decoder:
    if not FULL:
        pytest.skip("DID NOT RUN: the fail-policy tests of the other model shapes run with PD_E2E_FULL=1 "
                    "(a fourth vLLM server per fleet; test_plugin.py runs them on the Qwen2 model)")
    return model.decoders["fail"]


def test_the_seed_reproducer_fails_under_fail(model):
    decoder = fail_decoder(model)
    before = decoder.lease_declines()
    name = f"{model.arch}-fail-seed"
    status, body = model.reproducer().run(model.p.url, decoder.d.url, token_prompt(7600, 257), name)
    assert_failed_with_lease_reason(status, body, decoder, before)


def test_the_seed_reproducer_answers_the_reference_under_recompute(model):
    decoder = model.decoders["recompute"]
    before = decoder.lease_declines()
    case = Case(f"{model.arch}-recompute-seed", False, False, token_prompt(7601, 257))
    status, body = model.reproducer().run(model.p.url, decoder.d.url, case.prompt, case.name)
    assert status == 200, f"D answered {status}: {body}"
    assert answer_text(body) == model.reference(case)[0], "D recomputed but answered other than one instance"
    assert decoder.lease_declines() > before, "no lease_mismatch decline: the pull was not the reproducer's late one"


def test_a_reused_request_ids_late_reader_is_declined_and_the_new_attempt_served(model):
    decoder = fail_decoder(model)
    before = decoder.lease_declines()
    one, two = (Case(f"{model.arch}-reuse-{i}", False, False, token_prompt(7602 + i, 257)) for i in (1, 2))
    (late_status, late), (second_status, second) = reuse(model.p.url, decoder.d.url, model.reproducer(),
                                                         f"{model.arch}-fail", (one.prompt, two.prompt))
    assert_failed_with_lease_reason(late_status, late, decoder, before)
    assert second_status == 200, f"attempt 2's reader: {second_status} {second}"
    if PREFIX_CACHE_OFF not in model.p.process.log_text():
        assert answer_text(second) == model.reference(two)[1], f"attempt 2's reader: {second}"
        return
    # no instance computes the last token as D does here (test_pd_answers_...): attempt 2's KV is compared instead
    saved, loaded = model.digests("P"), model.digests("D")
    (rid,) = [r for r in loaded if f"{model.arch}-fail-reused-id" in r]
    assert loaded[rid] == saved.get(rid), f"attempt 2's KV on D is not what P saved for it: {loaded[rid]}"
    print(f"\n{model.arch}: attempt 2's answer not compared (vLLM keeps no prefix cache here); its KV digest is P's")


TP_LEASE_S = 300
TP_DIGEST_LINE = re.compile(r"KV digest: ([PD]) rank (\d) (?:saved|loaded) (\S+)-[0-9a-f]{8}: ([0-9a-f]+)")


@pytest.mark.tp   # opt-in with the other tensor-parallel fleets (PD_E2E_TP=1): docs/vllm.md, "Tensor-parallel fleets"
@pytest.mark.parametrize("p_tp,d_tp", [(1, 2), (2, 1)])
def test_mla_at_different_tp_sizes_moves_the_latent_from_one_p_rank_to_every_d_rank(p_tp, d_tp):
    """P TP 1 / D TP 2 and P TP 2 / D TP 1 with the MLA model: P's TP worker 0 alone saves the latent, and every D
    TP worker's vLLM holds exactly what it saved (the digests). In bfloat16 the answers are not compared: TP 2
    sums a layer's partial products in another order than TP 1, and the MLA model runs only in bfloat16 here
    (AMX_MLA takes no float32)."""
    with Fleet(f"model-mla-p{p_tp}d{d_tp}", arch="mla") as fleet:
        # a lease far longer than a D leg takes: a fresh TP 2 D's first request has waited minutes on this VM
        # (docs/vllm.md, "Tensor-parallel fleets"), and a lapsed lease here would only hide the bytes compared
        pd_p = fleet.pd_service("pd-p", "producer", lease=f"{TP_LEASE_S}s", num_blocks=p_blocks(fleet), tp=p_tp)
        decoder = Decoder(fleet, pd_p, "fail", TP_LEASE_S, tp=d_tp, plugin_settings=DIGESTS)
        p = fleet.plugin_vllm("p", pd_p, num_blocks=p_blocks(fleet), wait=False, tp=p_tp, plugin_settings=DIGESTS)
        fleet.ready(p, decoder.d)
        proxy = fleet.proxy(p, decoder.d)
        for case in CASES[:2]:
            ask(client(proxy.url), case)
        assert decoder.lease_declines() == 0
        lines = [m.groups() for m in TP_DIGEST_LINE.finditer(p.process.log_text() + decoder.d.process.log_text())]
        saved = {(rank, req): digest for side, rank, req, digest in lines if side == "P"}
        loaded = {(rank, req): digest for side, rank, req, digest in lines if side == "D"}
        assert {rank for rank, _ in saved} == {"0"}, f"P ranks that saved: {sorted(saved)}"
        assert {rank for rank, _ in loaded} == {str(r) for r in range(d_tp)}, f"D ranks that loaded: {sorted(loaded)}"
        assert len(saved) >= 2 and all(saved.get(("0", req)) == digest for (_, req), digest in loaded.items()), \
            f"a D rank's vLLM holds other KV than P saved: saved {saved}, loaded {loaded}"


@pytest.fixture(scope="module", params=ARCHES)
def stock_model(request):
    if not FULL:
        pytest.skip("DID NOT RUN: stock NixlConnector on the other model shapes runs with PD_E2E_FULL=1 "
                    "(as test_stock_nixl.py does on the Qwen2 model)")
    with Fleet(f"stock-{request.param}", arch=request.param) as fleet:
        p = fleet.stock_vllm("p", lease_s=2, num_blocks=p_blocks(fleet, VLLM_P_GROUPS[request.param]), wait=False)
        d = fleet.stock_vllm("d", lease_s=2, wait=False)
        fleet.ready(p, d)
        yield request.param, p, d
    assert all(p.session_gone() for p in fleet.stopped), "a process of the stock fleet outlived its fleet"


def test_stock_nixl_answers_200_with_a_wrong_answer_on_the_seed_reproducer_and_a_reused_id(stock_model):
    """The seed's bug on these model shapes with vLLM's own NixlConnector: D reads P's blocks after P's lease ran
    out and other prompts took them, and answers 200 with an answer neither way of computing the prompt gives."""
    arch, p, d = stock_model
    seed = Case(f"stock-{arch}-seed", False, False, token_prompt(7610, 257))
    status, body = Reproducer(lease_s=2).run(p.url, d.url, seed.prompt, seed.name)
    assert status == 200 and answer_text(body) not in reference(p, seed), \
        f"stock D answered {status} {body}: the reproducer did not reproduce the bug"
    one, two = (Case(f"stock-{arch}-reuse-{i}", False, False, token_prompt(7612 + i, 257)) for i in (1, 2))
    (late_status, late), _ = reuse(p.url, d.url, Reproducer(lease_s=2), f"stock-{arch}", (one.prompt, two.prompt))
    assert late_status == 200 and answer_text(late) not in reference(p, one), \
        f"stock D answered attempt 1's late reader {late_status} {late}: the reuse case did not reproduce the bug"
