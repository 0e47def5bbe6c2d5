#!/usr/bin/env python3
"""D's loads of one engine step, batched against one call each: K loads handed to the plugin's ``start_loads`` at
once, timed until vLLM would see every one of them (``take_results``), with the step's pulls and releases in one
request each over D's engine socket (ops pulls and releases), and, in the same run, with one pull and one
release call per load on the load threads (ops pull and release; the baseline).

    JAVA_HOME=... PD_NIXL_HOME=.../nixl-cu12-1.5.1 PYTHONPATH=integrations/vllm \\
        <vLLM venv>/bin/python bench/d_step_bench.py [--geometry tiny,qwen] [--tokens 300] [--steps 2,4,16] \\
        [--n 60] [--warmup 200]

Per geometry a P and a D pd-connector (d_load_bench's set-up); two D workers of the plugin beside D, 8 load
threads each (pd_load_threads' default), one batching as the plugin does and one not, taking turns step by step.
Per step size:
the step's time p50/p90 (ms, start_loads to the last load reported), the time per load, and D's JVM CPU per load
(ms of /proc/<pid>/stat's utime+stime over the row's steps, its releases included: each step waits until D
has answered every release before the next). Writes target/d-step-bench.json; every process it starts is stopped at the end.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "integrations/vllm"))
sys.path.insert(0, str(REPO / "bench"))

from pd_connector_vllm.client import PdClient  # noqa: E402
from pd_connector_vllm.specs import LoadSpec, SaveSpec  # noqa: E402
from pd_connector_vllm.worker import PdWorker  # noqa: E402

from d_load_bench import caches  # noqa: E402
from pd_service import BLOCK_TOKENS, GEOMETRIES, PD_BLOCKS, Service, pct  # noqa: E402

ROWS = ("batched", "calls")
TICKS = os.sysconf("SC_CLK_TCK")


def jvm_cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return 1000.0 * (int(fields[11]) + int(fields[12])) / TICKS   # utime, stime


class CountingClient(PdClient):
    """The plugin's client, counting the releases D answered, so a step can wait for its last one without asking D
    (which would cost D's CPU)."""

    def __init__(self, url: str):
        super().__init__(url)
        self.released = 0
        self._done = threading.Condition()

    def release(self, request_id, decode_rank):
        super().release(request_id, decode_rank)
        self._count(1)

    def releases(self, items):
        out = super().releases(items)
        self._count(len(items))
        return out

    def _count(self, n: int) -> None:
        with self._done:
            self.released += n
            self._done.notify_all()

    def wait_released(self, total: int, seconds: float = 10.0) -> None:
        with self._done:
            if not self._done.wait_for(lambda: self.released >= total, seconds):
                raise RuntimeError(f"{total - self.released} releases not answered {seconds} s after the step")


def run_geometry(name: str, tokens: int, steps: list[int], n: int, warmup: int) -> list[dict]:
    layers, heads, dim = GEOMETRIES[name]
    work = Path(tempfile.mkdtemp(prefix="pd-dstep-bench-", dir="/dev/shm"))
    services, rows = [], []
    blocks = -(-tokens // BLOCK_TOKENS)
    nb = max(steps) * blocks + 2
    room = {"pd.kv.num-blocks": max(PD_BLOCKS, nb + 8)}   # a whole step's prompts held on P and on D at once
    try:
        p = Service(work, f"step-{name}-p", "producer", GEOMETRIES[name], None, room)
        services.append(p)
        d = Service(work, f"step-{name}-d", "consumer", GEOMETRIES[name], p.url, room)
        services.append(d)
        d.lists(f"step-{name}-p")
        p_client = PdClient(p.url)
        p_worker = PdWorker(p_client, 0, 1, 1)
        p_worker.register(caches(layers, heads, dim, blocks + 2, seed=1), p_client.kv_layout())
        layout = PdClient(d.url).kv_layout()
        workers, clients = {}, {}
        for row in ROWS:
            clients[row] = CountingClient(d.url)
            worker = PdWorker(clients[row], 0, 1, 8, engine_channel="socket")
            worker.register(caches(layers, heads, dim, nb, seed=None), layout)
            if not worker._loader._batches:
                raise RuntimeError("D's engine socket does not read op pulls (a jar without pull-batch)")
            worker._loader.batch(row == "batched")
            workers[row] = worker
        seq = 0

        def prefill() -> tuple[str, list[int], dict]:
            nonlocal seq
            seq += 1
            rid = f"{name}-{seq}"
            r = p_client.reserve(rid, tokens)
            p_worker.save([SaveSpec(rid, rid, list(range(blocks)), r["block_ids"], tokens,
                                    [(x["kv_file"], x["region_bytes"]) for x in r["ranks"]])])
            ids = [(seq * 7919 + i * 104729) % 150_000 for i in range(tokens)]
            return rid, ids, p_client.finish(rid)["kv_transfer_params"]

        for k in steps:
            times = {row: [] for row in ROWS}
            cpu = {row: 0.0 for row in ROWS}
            released = {row: clients[row].released for row in ROWS}
            for i in range(warmup + n):
                for row, worker in workers.items():
                    specs = []
                    for j in range(k):
                        rid, ids, params = prefill()
                        specs.append(LoadSpec(rid, rid, ids, params, list(range(j * blocks, (j + 1) * blocks)), 0))
                    cpu0 = jvm_cpu_ms(d.process.pid)
                    t0 = time.perf_counter()
                    worker.start_loads(specs, [])
                    waiting, failed = {s.request_id for s in specs}, {}
                    deadline = time.monotonic() + 30
                    while waiting:
                        r = worker.take_results()
                        waiting -= r.finished
                        failed.update(r.failed)
                        if time.monotonic() > deadline:
                            raise RuntimeError(f"{row}: loads not reported within 30 s: {sorted(waiting)}")
                        if waiting:
                            time.sleep(0.0002)
                    t_step = time.perf_counter() - t0
                    if failed:
                        raise RuntimeError(f"{row}: loads failed: {failed}")
                    clients[row].wait_released(released[row] + k)
                    released[row] += k
                    if i >= warmup:
                        times[row].append(1000 * t_step)
                        cpu[row] += jvm_cpu_ms(d.process.pid) - cpu0
            for row in ROWS:
                xs = times[row]
                out = {"geometry": name, "tokens": tokens, "loads_per_step": k, "row": row, "n": n,
                       "step_ms": {"p50": statistics.median(xs), "p90": pct(xs, 0.9)},
                       "per_load_ms_p50": statistics.median(xs) / k, "d_cpu_ms_per_load": cpu[row] / (n * k)}
                if row == "batched":
                    out["step_vs_calls_p50"] = statistics.median(xs) / statistics.median(times["calls"])
                    out["d_cpu_vs_calls"] = cpu[row] / cpu["calls"] if cpu["calls"] else None
                rows.append(out)
                vs = (f" | {out['step_vs_calls_p50']:.2f}x the calls' step, D CPU {out['d_cpu_vs_calls']:.2f}x"
                      if row == "batched" else "")
                print(f"{name:5s} {tokens:5d} tok {k:3d} loads/step {row:8s} | step p50 {out['step_ms']['p50']:7.2f} "
                      f"p90 {out['step_ms']['p90']:7.2f} | per load {out['per_load_ms_p50']:6.2f} | D CPU/load "
                      f"{out['d_cpu_ms_per_load']:5.2f}{vs}", flush=True)
        p_worker.shutdown()
        for worker in workers.values():
            worker.shutdown()
    finally:
        for s in reversed(services):
            s.stop()
        shutil.rmtree(work, ignore_errors=True)
    return rows


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # stop the services (finally) on a kill too
    ap = argparse.ArgumentParser()
    ap.add_argument("--geometry", default="tiny,qwen")
    ap.add_argument("--tokens", type=int, default=300)
    ap.add_argument("--steps", default="2,4,16", help="loads per step, one pair of rows each")
    ap.add_argument("--n", type=int, default=60, help="measured steps per row and step size")
    ap.add_argument("--warmup", type=int, default=200, help="unmeasured steps per row first (the JVMs' JIT)")
    a = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; all times ms", flush=True)
    rows = []
    for g in a.geometry.split(","):
        rows += run_geometry(g, a.tokens, [int(x) for x in a.steps.split(",")], a.n, a.warmup)
    out = REPO / "target/d-step-bench.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(rows, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
