"""Stock vLLM P and D with vLLM's own NixlConnector behind the proxy: the baseline the plugin is held to, and the
seed's bug reproduced on it (D answers 200 with KV that was no longer P's)."""
import time
from types import SimpleNamespace

import openai
import pytest

from conftest import FULL, REPRODUCER_PROMPTS
from fleet import Fleet, record
from workload import P_BLOCKS, Case, Reproducer, answer_text, ask, client, equality_cases, reuse, token_prompt

if not FULL:
    pytest.skip("DID NOT RUN: stock NixlConnector's fleet runs with PD_E2E_FULL=1 (stock vLLM changes only with the "
                "vLLM version setup-vllm.sh pins; run it when that changes)", allow_module_level=True)

LEASE_S = 2
# A multi-block prompt no other test asks: its D leg is stock D's first contact with stock P (the NIXL handshake
# over P's side channel, which vLLM gives 5 s).
FIRST_CONTACT = Case("stock-first-contact", False, False, token_prompt(6100, 300))


def first_contact(fleet: SimpleNamespace) -> None:
    """Establishes the stock pair before the compared prompts: one request that makes D handshake with P. Stock's
    first contact is the anchor's, not pd-connector's: its outcome is logged and counted (<logs>/e2e-events.jsonl),
    not asserted; what it measures is reported (README), and every compared prompt after it is held strictly."""
    t0 = time.monotonic()
    try:
        ask(client(fleet.proxy.url), FIRST_CONTACT)
        outcome = "200"
    except openai.APIStatusError as e:
        outcome = f"HTTP {e.status_code}"
    except openai.APIError as e:
        outcome = type(e).__name__
    seconds = time.monotonic() - t0
    handshake_timed_out = "zmq.error.Again" in fleet.d.process.log_text()
    record({"fleet": "stock", "first_contact": outcome, "seconds": round(seconds, 1),
            "handshake_timed_out": handshake_timed_out})
    print(f"\nstock D's first contact with stock P: {outcome} in {seconds:.1f} s"
          + (" (D's NIXL handshake timed out: zmq.error.Again in _nixl_handshake)" if handshake_timed_out else ""))


@pytest.fixture(scope="module")
def stock():
    with Fleet("stock") as fleet:
        p = fleet.stock_vllm("p", lease_s=LEASE_S, num_blocks=P_BLOCKS, wait=False)
        d = fleet.stock_vllm("d", lease_s=LEASE_S, wait=False)
        fleet.ready(p, d)
        pair = SimpleNamespace(fleet=fleet, p=p, d=d, proxy=fleet.proxy(p, d))
        first_contact(pair)
        yield pair
    assert all(p.session_gone() for p in fleet.stopped), "a process of the stock fleet outlived its fleet"


def test_stock_pd_answers_equal_one_instance(stock, reference):
    c = client(stock.proxy.url)
    mismatches = {}
    for case in equality_cases():
        got = ask(c, case)
        if got != reference.equality[case.name]:
            mismatches[case.name] = (got, reference.equality[case.name])
    assert not mismatches, f"stock P/D answered differently from one instance: {mismatches}"


def test_stock_seed_reproducer_answers_200_with_a_wrong_answer(stock, reference):
    """The bug, on unmodified vLLM: P's blocks were freed at lease expiry and refilled by other prefills; D reads
    them anyway and decodes from foreign KV."""
    name = "stock-seed"
    status, body = Reproducer(lease_s=LEASE_S).run(stock.p.url, stock.d.url, REPRODUCER_PROMPTS[name], name)
    assert status == 200, f"stock D answered {status}: {body}"
    got = answer_text(body)
    assert got is not None and got != reference.reproducer[name], \
        "stock D answered the reference: the reproducer did not reproduce the bug"
    warned = "Potentially invalid KV blocks" in stock.p.process.log_text()
    print(f"stock D answered 200 {got!r} (reference {reference.reproducer[name]!r}); "
          f"P logged 'Potentially invalid KV blocks': {warned}")


def test_stock_request_id_reuse_late_reader_gets_a_wrong_answer(stock, reference):
    (late_status, late), (second_status, second) = reuse(
        stock.p.url, stock.d.url, Reproducer(lease_s=LEASE_S), "stock",
        (REPRODUCER_PROMPTS["stock-reuse-1"], REPRODUCER_PROMPTS["stock-reuse-2"]))
    assert late_status == 200, f"stock D answered the late reader {late_status}: {late}"
    assert answer_text(late) != reference.reproducer["stock-reuse-1"], \
        "stock D answered attempt 1's late reader correctly: the reuse case did not reproduce the bug"
    assert second_status == 200 and answer_text(second) == reference.reproducer["stock-reuse-2"], \
        f"attempt 2's reader: {second_status} {second}"
