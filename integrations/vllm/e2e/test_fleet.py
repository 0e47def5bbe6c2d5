"""The harness's own promise: every process a Fleet started is gone when the Fleet closes, also when a test
or a start failed (cheap processes only: the proxy and a child that exits early)."""
import sys

import pytest

from fleet import Endpoint, Fleet, free_port


def test_no_port_is_handed_out_twice():
    # A fleet starts P's and D's vLLM before either binds its ports (D's NIXL side channel minutes later): two
    # processes given the same port lose one start. 2,000 draws from about 16,000 ports repeat one all but surely
    # when nothing prevents it.
    draws = 2000
    assert len({free_port() for _ in range(draws)}) == draws


def test_a_failing_test_still_stops_every_process():
    with pytest.raises(ZeroDivisionError):
        with Fleet("cleanup") as fleet:
            nowhere = f"http://127.0.0.1:{free_port()}"
            a = fleet.proxy(Endpoint("p", nowhere, None), Endpoint("d", nowhere, None), name="proxy-a")
            b = fleet.proxy(Endpoint("p", nowhere, None), Endpoint("d", nowhere, None), name="proxy-b")
            assert a.process.alive() and b.process.alive()
            1 / 0
    assert not fleet.processes
    assert [p.name for p in fleet.stopped] == ["cleanup-proxy-b", "cleanup-proxy-a"]
    assert all(p.session_gone() for p in fleet.stopped)


def test_a_process_that_exits_before_ready_fails_the_start_with_its_log():
    with Fleet("early-exit") as fleet:
        process = fleet._start("crash", [sys.executable, "-c", "print('boom: bad flag'); raise SystemExit(3)"])
        with pytest.raises(RuntimeError, match="exited with 3 before it was ready(?s:.*)boom: bad flag"):
            process.wait_ready(f"http://127.0.0.1:{free_port()}/", 30)
    assert process.session_gone()


def test_a_process_that_never_answers_fails_the_start_at_its_deadline():
    with Fleet("never-ready") as fleet:
        process = fleet._start("sleeper", [sys.executable, "-c", "import time; time.sleep(600)"])
        with pytest.raises(RuntimeError, match="not ready .* within 2 s"):
            process.wait_ready(f"http://127.0.0.1:{free_port()}/", 2)
    assert process.session_gone()
