"""Shared fixtures: the reference answers of one plain vLLM instance, and a duration line for every test.

The reference instance runs once per session, answers every prompt any test compares against, and is stopped
before the P/D fleets start, so at most two vLLM servers (plus two pd-connector services and the proxy) run at
once on the 2-core machine.
"""
import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet import Fleet  # noqa: E402
from workload import Case, ask, client, equality_cases, token_prompt  # noqa: E402

# The fleets CI's vllm stage leaves out to stay within about 15 minutes on the 2-core VM, each saying it did not run:
# stock NixlConnector's (its behaviour changes only with the vLLM version setup-vllm.sh pins), the plugin's copy
# beside the forward (a setting off by default, its copies checked byte for byte in tests/test_worker.py), and the
# other model shapes' fail-policy and stock fleets. PD_E2E_FULL=1 runs them.
FULL = os.environ.get("PD_E2E_FULL") == "1"
# The multi-block prompts the reproducers send (300 tokens = 2 full 128-token blocks and a partial one),
# each used once per fleet so D never holds it in its prefix cache beforehand.
REPRODUCER_PROMPTS = {name: token_prompt(seed, 300) for seed, name in enumerate([
    "stock-seed", "stock-reuse-1", "stock-reuse-2",
    "plugin-fail-seed", "plugin-fail-reuse-1", "plugin-fail-reuse-2",
    "plugin-recompute-seed", "plugin-recompute-reuse-1", "plugin-recompute-reuse-2",
], start=7000)}
# The tensor-parallel fleets' prompts (test_tp_*.py), answered by the float32 reference.
TP_PROMPTS = {name: token_prompt(seed, 300) for seed, name in enumerate([
    "p1d2-stock-seed", "p1d2-fail-seed", "p1d2-recompute-seed",
    "p2d1-stock-seed", "p2d1-fail-seed", "p2d1-recompute-seed", "p2d1-read-fault",
], start=7500)}
TP_DTYPE = "float32"


def multi_block_cases() -> list[Case]:
    """The equality prompts whose KV D pulls (a block or more); the shorter ones D computes itself."""
    return [case for case in equality_cases() if "short" not in case.name]


class Reference:
    def __init__(self, equality: dict[str, str], reproducer: dict[str, str]):
        self.equality = equality
        self.reproducer = reproducer


@pytest.fixture(scope="session")
def reference() -> Reference:
    t0 = time.monotonic()
    with Fleet("reference") as fleet:
        single = fleet.vllm("single")
        c = client(single.url)
        equality = {case.name: ask(c, case) for case in equality_cases()}
        reproducer = {name: ask(c, Case(name, False, False, prompt)) for name, prompt in REPRODUCER_PROMPTS.items()}
    print(f"\nreference answers from one vLLM instance: {len(equality) + len(reproducer)} prompts "
          f"in {time.monotonic() - t0:.1f} s (start included)")
    distinct = set(equality.values()) | set(reproducer.values())
    assert len(distinct) == len(equality) + len(reproducer), \
        "two prompts gave the same reference answer: the tiny model cannot tell wrong KV from right"
    return Reference(equality, reproducer)


@pytest.fixture(scope="session")
def reference_tp() -> Reference:
    """The tensor-parallel fleets' reference: one TP 1 instance serving the model in float32 (Fleet's `dtype`)."""
    t0 = time.monotonic()
    with Fleet("reference-f32", dtype=TP_DTYPE) as fleet:
        c = client(fleet.vllm("single").url)
        equality = {case.name: ask(c, case) for case in multi_block_cases()}
        reproducer = {name: ask(c, Case(name, False, False, prompt)) for name, prompt in TP_PROMPTS.items()}
    print(f"\nreference answers ({TP_DTYPE}) from one vLLM instance: {len(equality) + len(reproducer)} prompts "
          f"in {time.monotonic() - t0:.1f} s (start included)")
    assert len(set(equality.values()) | set(reproducer.values())) == len(equality) + len(reproducer), \
        "two prompts gave the same reference answer: the tiny model cannot tell wrong KV from right"
    return Reference(equality, reproducer)


def pytest_configure(config):
    config.addinivalue_line("markers", "tp: a tensor-parallel fleet (test_tp_*.py); CI's vllm stage runs them only "
                                       "with PD_E2E_TP=1")


def pytest_runtest_logreport(report):
    """Every test says how long it took (setup includes the servers its module starts)."""
    if report.when in ("setup", "call", "teardown") and report.duration >= 0.01:
        sys.stdout.write(f"\n[duration] {report.nodeid} {report.when}: {report.duration:.1f} s\n")
        sys.stdout.flush()
