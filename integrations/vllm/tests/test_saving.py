"""P's copies of a step (saving.PdSaver): beside the forward, a layer's copy starts when vLLM says the layer is
written and runs on the copy thread while the engine's thread goes on; in either mode wait_for_save returns only
once every layer of every saved request is copied (G2: the params leave after it), a failed copy gives its grant
back before the step ends, a copy that never ends stops the engine, and no thread outlives close."""

import logging
import threading
import time

import pytest

from pd_connector_vllm import timing_lines
from pd_connector_vllm.client import PdError
from pd_connector_vllm.saving import PdSaver, SaveStuck
from pd_connector_vllm.specs import SaveSpec

NAMES = [f"model.layers.{i}.self_attn.attn" for i in range(3)]


def spec(request_id, grant="g1"):
    return SaveSpec(request_id, request_id, [1], [7], 4, [("/dev/shm/f", 64)], grant)


class Copies:
    """Records each copy (request, layers, thread); ``gates`` holds a layer's copy until set; ``fail`` fails a
    request's copies."""

    def __init__(self, gates=None, fail=()):
        self.gates = gates or {}
        self.fail = set(fail)
        self.done: list[tuple[str, tuple | None, str]] = []
        self.lock = threading.Lock()

    def __call__(self, s, layers):
        for layer in layers or ():
            gate = self.gates.get(layer)
            if gate is not None:
                assert gate.wait(10), f"layer {layer}'s gate was never opened"
        if s.request_id in self.fail:
            raise OSError(f"no file for {s.request_id}")
        with self.lock:
            self.done.append((s.request_id, None if layers is None else tuple(layers), threading.current_thread().name))


def saver(copies, overlap=True, deadline_s=10.0, returns=None, **kw):
    give_back = (returns.append if returns is not None else (lambda g: None))
    return PdSaver(copies, give_back, NAMES, overlap, deadline_s, **kw)


def test_beside_the_forward_a_layers_copy_starts_on_the_copy_thread_while_the_engine_goes_on():
    gate = threading.Event()
    copies = Copies(gates={0: gate})
    s = saver(copies)
    specs = [spec("a"), spec("b")]
    s.layer_written(NAMES[0], specs)          # returns although layer 0's copy is held
    s.layer_written(NAMES[1], specs)
    assert copies.done == [], "the copies are the thread's, in layer order"
    gate.set()
    s.save(specs)
    assert sorted((r, l) for r, l, _ in copies.done) == [("a", (0,)), ("a", (1,)), ("a", (2,)),
                                                         ("b", (0,)), ("b", (1,)), ("b", (2,))]
    assert {t for _, _, t in copies.done} == {"pd-save"}
    assert s.close()


def test_wait_for_save_returns_only_once_every_layer_is_copied_even_those_vllm_never_named(caplog):
    slow = threading.Event()
    threading.Timer(0.3, slow.set).start()
    copies = Copies(gates={2: slow})
    s = saver(copies)
    specs = [spec("a")]
    s.layer_written(NAMES[0], specs)
    s.layer_written(NAMES[0], specs)          # named twice: copied once
    with caplog.at_level(logging.WARNING, logger="vllm.pd_connector"):
        s.save(specs)                         # layers 1 and 2 were never named; layer 2's copy is slow
        s.save([spec("b")])                   # none named: said once only
    assert sorted(l for r, l, _ in copies.done if r == "a") == [(0,), (1,), (2,)]
    assert slow.is_set()
    warnings = [r.getMessage() for r in caplog.records if "did not announce" in r.getMessage()]
    assert warnings == ["vLLM did not announce 2 of the 3 attention layers (save_kv_layer) in a step that saves "
                        "KV: their copies ran after the forward, in the step (said once)"]
    s.layer_written("model.layers.9.mlp", specs)   # not a registered cache: ignored
    assert s.close()


def test_in_the_step_every_layer_is_copied_on_the_engines_thread_and_no_thread_is_made():
    before = {t.name for t in threading.enumerate()}
    copies = Copies()
    s = saver(copies, overlap=False)
    assert not s.overlaps and "pd-save" not in {t.name for t in threading.enumerate()} - before
    specs = [spec("a")]
    s.layer_written(NAMES[0], specs)          # nothing beside the forward
    assert copies.done == []
    s.save(specs)
    assert copies.done == [("a", None, threading.current_thread().name)]
    assert s.close()


@pytest.mark.parametrize("overlap", [True, False])
def test_a_failed_copy_gives_its_grant_back_before_the_step_ends_and_the_others_are_saved(overlap):
    copies, returns = Copies(fail={"bad"}), []
    s = saver(copies, overlap=overlap, returns=returns)
    specs = [spec("bad", grant="g-bad"), spec("ok", grant="g-ok")]
    if overlap:
        s.layer_written(NAMES[0], specs)
    s.save(specs)
    assert returns == ["g-bad"]
    assert {r for r, _, _ in copies.done} == {"ok"}
    assert sorted(l or (0, 1, 2) for r, l, _ in copies.done) == ([(0,), (1,), (2,)] if overlap else [(0, 1, 2)])
    assert s.close()


def test_a_grant_that_cannot_be_given_back_is_logged_and_the_step_goes_on(caplog):
    def refuse(grant):
        raise PdError(0, "unreachable", "connection refused")

    s = PdSaver(Copies(fail={"bad"}), refuse, NAMES, True, 10.0)
    with caplog.at_level(logging.ERROR, logger="vllm.pd_connector"):
        s.save([spec("bad", grant="g7")])
    assert any("grant g7 not given back either" in r.getMessage() for r in caplog.records)
    assert s.close()


def test_a_copy_that_outlasts_the_deadline_stops_the_engine_and_the_rest_of_the_step_is_skipped():
    gate = threading.Event()
    copies = Copies(gates={0: gate})
    s = saver(copies, deadline_s=0.2)
    specs = [spec("a")]
    s.layer_written(NAMES[0], specs)
    with pytest.raises(SaveStuck, match=r"\['a'\] did not finish within 0.2 s"):
        s.save(specs)
    gate.set()                                # the stuck copy ends after all
    assert s.close()
    assert [l for _, l, _ in copies.done] == [(0,)], "layers after the deadline are not copied"


def test_a_step_whose_forward_failed_before_wait_for_save_does_not_hold_up_the_next_step():
    copies = Copies()
    s = saver(copies)
    s.layer_written(NAMES[0], [spec("lost")])   # that step never reached wait_for_save
    nxt = [spec("next")]
    s.layer_written(NAMES[0], nxt)
    s.save(nxt)
    assert sorted(l for r, l, _ in copies.done if r == "next") == [(0,), (1,), (2,)]
    assert s.close()


def test_the_timing_line_says_the_copy_and_how_long_the_step_waited_for_it(caplog):
    s = saver(Copies(), timing_level=logging.INFO)
    with caplog.at_level(logging.INFO, logger="vllm.pd_connector"):
        s.save([spec("r1")])
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("P saved r1")]
    assert "vLLM blocks [1] -> pd blocks [7]" in line, line
    (copy,) = timing_lines.SAVE_LINE.finditer(line)
    (waited,) = timing_lines.SAVE_WAIT.finditer(line)
    assert float(copy.group(1)) >= 0 and float(waited.group(1)) >= 0 and waited.group(2) == "1", line
    assert s.close()


def test_close_stops_the_copy_thread():
    s = saver(Copies())
    assert "pd-save" in {t.name for t in threading.enumerate()}
    assert s.close(5)
    deadline = time.monotonic() + 5
    while "pd-save" in {t.name for t in threading.enumerate()} and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "pd-save" not in {t.name for t in threading.enumerate()}


def test_a_deadline_that_is_not_positive_is_refused():
    with pytest.raises(ValueError, match="must be positive"):
        saver(Copies(), deadline_s=0)
