"""P's copy of each finished prompt's KV from vLLM's blocks into pd-connector's granted blocks.

vLLM's scheduler hands a request's params out in the ``request_finished`` that follows the step's
``wait_for_save``, so every copy of a step is complete when ``wait_for_save`` returns (rule G2: the params leave
only once the bytes D will READ are there). Within that rule there are two ways to run the copies:

- **in the step** (``pd_save_overlap`` false): ``wait_for_save`` copies every layer of every saved request on
  vLLM's worker thread, after the forward.
- **beside the forward** (``pd_save_overlap`` true, the file only): vLLM calls ``save_kv_layer`` after each
  attention layer wrote its KV; the layer's blocks of the step's saved requests go to one copy thread at once,
  which copies them while the forward computes the next layers (numpy's copies release the GIL). ``wait_for_save``
  hands over any layer vLLM did not announce and waits for the thread to finish the step's copies, with a
  deadline: so the step still ends only once every byte is in pd-connector's blocks.

A copy that fails for one request gives the request's whole grant back before the step ends (its slots are zeroed
first, so a decoder that got its params declines them and P refuses the commit). A copy that outlasts the deadline
stops the engine (``SaveStuck``): the thread may still write into the grant's blocks, so they can neither be given
back nor trusted.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Callable, Sequence

from .client import PdError
from .osthread import name_current_thread
from .specs import SaveSpec

log = logging.getLogger("vllm.pd_connector")

CopyLayers = Callable[[SaveSpec, "Sequence[int] | None"], None]  # (spec, layer indices or None for all)


class SaveStuck(RuntimeError):
    """The copy thread did not finish a step's copies within the deadline."""


class _StepCopies:
    """One step's saves as the copy thread works through them. The thread writes the results; the engine's
    thread reads them only after ``done`` is set (the Event orders the two)."""

    def __init__(self, specs: list[SaveSpec], layers: int) -> None:
        self.specs = specs
        self.handed = [False] * layers          # engine thread only
        self.errors: dict[str, Exception] = {}  # request id -> why its copy failed
        self.copy_s = {s.request_id: 0.0 for s in specs}
        self.done = threading.Event()
        self.cancelled = False


class PdSaver:
    """The step's copies, in the step or beside the forward (module comment). ``copy_layers`` copies a spec's
    blocks for the given layer indices (all of them for None); ``give_back`` returns a grant to P."""

    def __init__(self, copy_layers: CopyLayers, give_back: Callable[[str], None], layer_names: Sequence[str],
                 overlap: bool, deadline_s: float, timing_level: int = logging.DEBUG) -> None:
        if deadline_s <= 0:
            raise ValueError(f"the save deadline must be positive, got {deadline_s}")
        self._copy_layers = copy_layers
        self._give_back = give_back
        self._index = {name: i for i, name in enumerate(layer_names)}
        self._deadline_s = deadline_s
        self._timing_level = timing_level
        self._step: _StepCopies | None = None
        self._warned = False
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        if overlap:
            self._thread = threading.Thread(target=self._run, name="pd-save", daemon=True)
            self._thread.start()

    @property
    def overlaps(self) -> bool:
        return self._thread is not None

    def layer_written(self, layer_name: str, specs: list[SaveSpec]) -> None:
        """vLLM's worker thread, after the attention layer ``layer_name`` wrote its KV in a step that saves
        ``specs``: the layer's copies start now, on the copy thread. A layer vLLM names twice is copied once."""
        if self._thread is None or not specs:
            return
        index = self._index.get(layer_name)
        if index is None:
            return  # not one of the registered caches: wait_for_save hands every layer over anyway
        step = self._current(specs)
        if not step.handed[index]:
            step.handed[index] = True
            self._queue.put((step, index))

    def save(self, specs: list[SaveSpec]) -> None:
        """wait_for_save: returns once every copy of the step is done, each failed one's grant given back."""
        if not specs:
            return
        start = time.perf_counter()
        if self._thread is None:
            step = _StepCopies(specs, len(self._index))
            for spec in specs:
                self._copy(step, spec, None)
        else:
            step = self._wait(self._current(specs))
        waited_ms = 1000 * (time.perf_counter() - start)
        for spec in specs:
            error = step.errors.get(spec.request_id)
            if error is not None:
                self._failed(spec, error)
            else:
                log.log(self._timing_level, "P saved %s: vLLM blocks %s -> pd blocks %s, copy %.2f ms, the step "
                        "waited %.2f ms for its %d copies", spec.request_id, spec.vllm_blocks, spec.pd_blocks,
                        1000 * step.copy_s[spec.request_id], waited_ms, len(specs))

    def close(self, timeout_s: float = 5.0) -> bool:
        """Stops the copy thread (after the copies queued before); False if it did not stop in time."""
        if self._thread is None:
            return True
        self._queue.put((None, None))
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _current(self, specs: list[SaveSpec]) -> _StepCopies:
        # A step's plan is one object for all its hooks: a new one means a new step, even if the last step
        # never reached wait_for_save (its forward failed).
        if self._step is None or self._step.specs is not specs:
            self._step = _StepCopies(specs, len(self._index))
        return self._step

    def _wait(self, step: _StepCopies) -> _StepCopies:
        self._step = None
        unannounced = [index for index, handed in enumerate(step.handed) if not handed]
        for index in unannounced:
            step.handed[index] = True
            self._queue.put((step, index))
        if unannounced and not self._warned:
            # The copies are still complete, but not beside the forward: say so once rather than hide it.
            self._warned = True
            log.warning("vLLM did not announce %d of the %d attention layers (save_kv_layer) in a step that saves "
                        "KV: their copies ran after the forward, in the step (said once)", len(unannounced),
                        len(step.handed))
        self._queue.put((step, None))
        if not step.done.wait(self._deadline_s):
            step.cancelled = True  # the thread skips the step's layers it has not started
            raise SaveStuck(f"P's KV copy of {[s.request_id for s in step.specs]} did not finish within "
                            f"{self._deadline_s:g} s (pd_save_timeout_s); its grants' blocks may still be written, "
                            "so the engine stops rather than hand out params or give the blocks back")
        return step

    def _failed(self, spec: SaveSpec, error: Exception) -> None:
        # The scheduler hands the params out after this step without knowing; giving the whole grant back now,
        # before this step ends, zeroes its slots first, so a decoder declines them and P refuses the commit.
        # Other requests of the grant not yet committed are declined too.
        log.error("P request %s: KV copy into pd-connector failed (%s); giving grant %s back",
                  spec.request_id, error, spec.grant_id)
        try:
            self._give_back(spec.grant_id)
        except PdError as return_error:
            log.error("grant %s not given back either (%s): a decoder may read blocks without this request's KV "
                      "until the grant expires", spec.grant_id, return_error)

    def _run(self) -> None:
        name_current_thread("pd-save")
        while True:
            step, index = self._queue.get()
            if step is None:
                return
            if index is None:
                step.done.set()
                continue
            if step.cancelled:
                continue
            for spec in step.specs:
                if spec.request_id not in step.errors:  # a failed one's grant goes back: no use copying more
                    self._copy(step, spec, (index,))

    def _copy(self, step: _StepCopies, spec: SaveSpec, layers: Sequence[int] | None) -> None:
        """One spec's copy of ``layers`` (all for None), its time added to the spec's; a failure is recorded for
        save, which gives the grant back (no decoder may take these blocks for the KV)."""
        t = time.perf_counter()
        try:
            self._copy_layers(spec, layers)
        except Exception as e:  # noqa: BLE001 - any failure, whatever its kind
            step.errors[spec.request_id] = e
        step.copy_s[spec.request_id] += time.perf_counter() - t
