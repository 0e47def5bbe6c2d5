#!/usr/bin/env python3
"""The vLLM plugin's time on vLLM's scheduler thread per P request, without vLLM: the scheduler side's four
hooks (get_num_new_matched_tokens, which takes the request's share of the grant, update_state_after_alloc,
build_connector_meta's share, request_finished) driven as vLLM's scheduler drives them, over the real control
path (control.PdControl and its background thread) against a pd-connector that answers batches at once (so
nothing here waits on a network, which is the point of the design).

    PYTHONPATH=integrations/vllm python bench/plugin_sched_bench.py [--requests 20000] [--per-step 1,16] [--cold]

Per request: the sum of its hooks' times, as the plugin's own `sched` timing line reports it. Prints p50, p99
and max in ms for each number of requests per engine step. In vLLM a forward pass runs between the hooks and
leaves the caches cold; `--cold` copies 32 MiB before each hook call to do the same.
"""
import argparse
import sys
import threading
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integrations/vllm"))

from pd_connector_vllm.control import PdControl  # noqa: E402
from pd_connector_vllm.scheduler import PdScheduler  # noqa: E402

BLOCK_TOKENS = 128


class Status(Enum):
    RUNNING = 1
    FINISHED_LENGTH_CAPPED = 3


@dataclass
class Request:
    request_id: str
    prompt_token_ids: list
    kv_transfer_params: dict
    num_computed_tokens: int = 0
    status: Status = Status.RUNNING

    @property
    def num_prompt_tokens(self):
        return len(self.prompt_token_ids)


class InstantP:
    """pd-connector's batch call answered at once: grants fresh blocks and slots, commits everything."""
    base_url = "in-process"

    def __init__(self):
        self.lock = threading.Lock()
        self.next_block = 0
        self.nonce = 1

    def batch(self, body):
        with self.lock:
            answer = {"commits": [{"id": c["request_id"], "status": 200} for c in body.get("commits", [])],
                      "aborts": [], "returns": []}
            ask = body.get("grant")
            if ask:
                blocks = list(range(self.next_block, self.next_block + ask["blocks"]))
                self.next_block += ask["blocks"]
                leases = [{"slot": i, "nonce": self.nonce + i} for i in range(ask["leases"])]
                self.nonce += ask["leases"]
                answer["grant"] = {"grant_id": ask.get("extend") or "g1-1", "block_ids": blocks, "leases": leases,
                                   "expires_in_ms": 600_000, "block_bytes": 1, "ranks": [
                                       {"rank": 0, "kv_file": "/dev/shm/x", "region_bytes": 1}],
                                   "params_template": {"remote_engine_id": "p"}}
            return answer


class HookTimer:
    """Times each hook; when cold, evicts the CPU caches before it: a numpy copy of more than the last-level
    cache holds, which (like a forward's torch ops) leaves the GIL to the plugin's other threads meanwhile."""

    def __init__(self, cold: bool):
        if cold:
            import numpy  # the vLLM venv has it
            self.src, self.dst = numpy.ones(4 << 20), numpy.zeros(4 << 20)  # 32 MiB each
            self.copyto = numpy.copyto
        else:
            self.src = None

    def timed(self, hook, *args) -> tuple[Any, int]:
        """The hook's result and its nanoseconds, the caches evicted first when cold."""
        if self.src is not None:
            self.copyto(self.dst, self.src)
        t0 = time.perf_counter_ns()
        result = hook(*args)
        return result, time.perf_counter_ns() - t0


HOOKS = ("share", "alloc", "plan", "finish")


def run(requests: int, per_step: int, timer: HookTimer, by_hook: dict[str, list[float]] | None = None) -> list[float]:
    control = PdControl(InstantP(), 4096, 4096, verify=True)
    control.start()
    control.wait_for_credit(10)
    sched = PdScheduler(control, BLOCK_TOKENS)
    times = []
    prompt = list(range(300))
    for step in range(requests // per_step):
        reqs = [Request(f"r{step}-{i}", prompt, {"do_remote_decode": True}) for i in range(per_step)]
        spent = {}
        for r in reqs:  # schedule(): each waiting request's share of the grant, then its allocation
            _, matched_ns = timer.timed(sched.get_num_new_matched_tokens, r, 0)
            _, alloc_ns = timer.timed(sched.update_state_after_alloc, r, [1, 2, 3], [], 0)
            spent[r.request_id] = matched_ns + alloc_ns
            if by_hook is not None:
                by_hook["share"].append(matched_ns / 1e6)
                by_hook["alloc"].append(alloc_ns / 1e6)
        # build_connector_meta(): the step's plan, shared by its requests
        _, plan_ns = timer.timed(sched.build_plan, {r.request_id: 300 for r in reqs}, lambda rid: [1, 2, 3])
        share = plan_ns / per_step
        for r in reqs:  # update_from_output(): each finished request
            r.num_computed_tokens = 300
            r.status = Status.FINISHED_LENGTH_CAPPED
            (_, params), finished_ns = timer.timed(sched.request_finished, r)
            spent[r.request_id] += finished_ns + share
            if by_hook is not None:
                by_hook["plan"].append(share / 1e6)
                by_hook["finish"].append(finished_ns / 1e6)
            assert params is not None, "a request got no params: the credit ran dry"
        times += [v / 1e6 for v in spent.values()]
    control.close(10)
    return times


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--per-step", default="1,16")
    parser.add_argument("--cold", action="store_true", help="evict the CPU caches before each hook, as a forward does")
    args = parser.parse_args(argv)
    timer = HookTimer(args.cold)
    for per_step in (int(x) for x in args.per_step.split(",")):
        run(min(2000, args.requests), per_step, timer)  # warm-up
        by_hook = {h: [] for h in HOOKS}
        t = sorted(run(args.requests, per_step, timer, by_hook))
        q = lambda v, p: v[min(len(v) - 1, int(p / 100 * len(v)))]  # noqa: E731
        hooks = ", ".join(f"{h} {q(sorted(v), 50):.4f}" for h, v in by_hook.items())
        print(f"{per_step:>3} requests per step: {len(t)} requests, scheduler thread per request "
              f"p50 {q(t, 50):.4f} ms, p99 {q(t, 99):.4f} ms, max {t[-1]:.3f} ms; p50 by hook: {hooks}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
