"""Stock vLLM with its own NixlConnector at different TP sizes on P and D (P TP1 / D TP2, P TP2 / D TP1): the seed's
bug on a tensor-parallel fleet, the baseline the plugin's TP rows are held to (test_tp_plugin.py). One fleet at a
time: the module's fixture is torn down before the next pair starts."""
from types import SimpleNamespace

import pytest

from conftest import TP_DTYPE, TP_PROMPTS, multi_block_cases
from fleet import Fleet
from test_stock_nixl import first_contact
from workload import P_BLOCKS, Reproducer, answer_text, ask, client

TP_PAIRS = [(1, 2), (2, 1)]
pytestmark = pytest.mark.tp   # opt-in: integrations/vllm/scripts/ci.sh runs these with PD_E2E_TP=1 only
LEASE_S = 6  # as test_tp_plugin.py's, for the same reason: an in-time read must not outlast it on a loaded machine


@pytest.fixture(scope="module", params=TP_PAIRS, ids=lambda pair: f"p{pair[0]}d{pair[1]}")
def stock_tp(request):
    p_tp, d_tp = request.param
    with Fleet(f"stock-p{p_tp}d{d_tp}", dtype=TP_DTYPE) as fleet:
        p = fleet.stock_vllm("p", lease_s=LEASE_S, num_blocks=P_BLOCKS, wait=False, tp=p_tp)
        d = fleet.stock_vllm("d", lease_s=LEASE_S, wait=False, tp=d_tp)
        fleet.ready(p, d)
        pair = SimpleNamespace(fleet=fleet, p=p, d=d, proxy=fleet.proxy(p, d), tag=f"p{p_tp}d{d_tp}")
        first_contact(pair)
        yield pair
    assert all(p.session_gone() for p in fleet.stopped), "a process of the stock TP fleet outlived its fleet"


def test_stock_tp_answers_equal_one_instance_when_read_in_time(stock_tp, reference_tp):
    """The baseline works at these sizes: what the reproducer shows below is the lease race, not a broken fleet."""
    c = client(stock_tp.proxy.url)
    mismatches = {case.name: got for case in multi_block_cases()
                  if (got := ask(c, case)) != reference_tp.equality[case.name]}
    assert not mismatches, f"stock P/D {stock_tp.tag} answered differently from one instance: {mismatches}"


def test_stock_tp_seed_reproducer_answers_200_with_a_wrong_answer(stock_tp, reference_tp):
    name = f"{stock_tp.tag}-stock-seed"
    status, body = Reproducer(lease_s=LEASE_S).run(stock_tp.p.url, stock_tp.d.url, TP_PROMPTS[name], name)
    assert status == 200, f"stock D ({stock_tp.tag}) answered {status}: {body}"
    got = answer_text(body)
    assert got is not None and got != reference_tp.reproducer[name], \
        f"stock D ({stock_tp.tag}) answered the reference: the reproducer did not reproduce the bug"
    print(f"stock {stock_tp.tag}: D answered 200 {got!r} (reference {reference_tp.reproducer[name]!r})")
