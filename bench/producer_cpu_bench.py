#!/usr/bin/env python3
"""What a plugin's P costs pd-connector's JVM in CPU: per request, by thread, and idle, without vLLM beside it.

    JAVA_HOME=... PD_NIXL_HOME=.../nixl-cu12-1.5.1 PYTHONPATH=integrations/vllm \\
        <vLLM venv>/bin/python bench/producer_cpu_bench.py [--jars A.jar,B.jar] [--rounds 2] [--rate 100] \\
        [--seconds 20] [--idle 5] [--blocks 3]

One producer pd-connector JVM on 127.0.0.1 (the tiny geometry, 1,024 blocks, 5 s leases, as the prefill bench's),
driven by the plugin's own P control path (``control.PdControl`` over the engine socket: the bulk grant, one
batch of commits per round trip), as vLLM's scheduler drives it: ``--rate`` requests a second, each taking
``--blocks`` blocks and a lease slot from the grant and committing it; nothing reads the KV, so every lease runs
out after 5 s. Measured per JVM: CPU seconds of each thread (by its OS name) over ``--idle`` seconds with the
grant held and no request, then over ``--seconds`` of requests, as % of a core idle and ms per request. With
several ``--jars`` (builds to compare; ``jar@key=value@...`` adds pd-connector settings, so one build
can be compared with itself under other settings), the JVMs take turns A B B A ... for ``--rounds`` rounds, so their rows
come from the same minutes. Writes target/producer-cpu-bench.json; every JVM is stopped at the end.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "integrations/vllm"))
sys.path.insert(0, str(REPO / "bench"))

from fleet_cpu import process_thread_cpu_seconds, thread_cpu_delta  # noqa: E402
from pd_service import GEOMETRIES, Service  # noqa: E402
from pd_connector_vllm.client import PdClient  # noqa: E402
from pd_connector_vllm.control import PdControl  # noqa: E402

NUM_BLOCKS = 1024
JVM_POOLS = ("C1 Compiler", "C2 Compiler", "GC Thread", "pd-engine-conn")  # threads summed by kind
TOP_THREADS = 6


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds per thread of the JVM (``producer-x`` is the step loop, ``producer-x#2`` NIXL's progress thread)."""
    return process_thread_cpu_seconds(pid, JVM_POOLS)


def one_run(work: Path, variant: str, label: str, a) -> dict:
    jar, *settings = variant.split("@")
    extra = {"pd.kv.num-blocks": NUM_BLOCKS, "pd.lease.duration": "5s"}
    extra.update(kv.split("=", 1) for kv in settings)
    p = Service(work, f"cpu-{label}", "producer", GEOMETRIES["tiny"], None, extra=extra, jar=jar)
    control = None
    try:
        client = PdClient(p.url)
        client.use_engine_socket(client.kv_layout()["engine_socket"])
        control = PdControl(client, NUM_BLOCKS, NUM_BLOCKS, verify=True)
        control.start()
        control.wait_for_credit(30)
        drive(control, a.rate, a.warmup, label + "-warm", a.blocks)
        time.sleep(6)  # the warm-up's leases run out before the idle reading
        t0 = thread_cpu(p.process.pid)
        time.sleep(a.idle)
        idle = thread_cpu_delta(t0, thread_cpu(p.process.pid))
        t1 = thread_cpu(p.process.pid)
        started = time.perf_counter()
        sent = drive(control, a.rate, int(a.rate * a.seconds), label, a.blocks)
        time.sleep(6)  # their leases run out too: the reaper's share is counted
        busy = thread_cpu_delta(t1, thread_cpu(p.process.pid))
        wall = time.perf_counter() - started
        # the requests' window also held the idle cost; per request is what is beyond it
        idle_per_s = sum(idle.values()) / a.idle
        row = {"jar": variant, "label": label, "requests": sent, "refused": control.stats.commits_refused,
               "no_credit": control.stats.no_credit, "batches": control.stats.batches,
               "idle_core_pct": round(100 * idle_per_s, 2),
               "cpu_ms_per_request": round(1000 * sum(busy.values()) / sent, 3),
               "beyond_idle_ms_per_request": round(1000 * (sum(busy.values()) - idle_per_s * wall) / sent, 3),
               "idle_threads_pct": {k: round(100 * v / a.idle, 2) for k, v in
                                    sorted(idle.items(), key=lambda kv: -kv[1])[:TOP_THREADS]},
               "threads_ms_per_request": {k: round(1000 * v / sent, 3) for k, v in
                                          sorted(busy.items(), key=lambda kv: -kv[1])[:TOP_THREADS]}}
        print(json.dumps(row), flush=True)
        return row
    finally:
        if control is not None:
            control.close(10)
        p.stop()


def drive(control: PdControl, rate: float, n: int, label: str, blocks: int) -> int:
    """n requests at `rate` a second, each a take and a commit, as vLLM's scheduler thread makes them."""
    start = time.perf_counter()
    for i in range(n):
        wait = start + i / rate - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        bound = None
        deadline = time.monotonic() + 10
        while bound is None:
            bound = control.take(blocks)
            if bound is None:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{label}: no credit for 10 s")
                time.sleep(0.001)
        control.commit(bound, f"{label}-{i}", blocks * 128)
    return n


def main() -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jars", default=os.environ.get("PD_CONNECTOR_JAR",
                                                     str(REPO / "target/quarkus-app/quarkus-run.jar")))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--rate", type=float, default=100.0)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--idle", type=float, default=5.0)
    ap.add_argument("--blocks", type=int, default=3)
    a = ap.parse_args()
    if not (1 <= a.rate <= 1000 and 1 <= a.seconds <= 120 and 1 <= a.rounds <= 10 and 1 <= a.blocks <= 8):
        ap.error("--rate 1..1000, --seconds 1..120, --rounds 1..10, --blocks 1..8")
    jars = a.jars.split(",")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
    rows = []
    for r in range(a.rounds):
        for j, jar in enumerate(jars if r % 2 == 0 else list(reversed(jars))):
            work = Path(tempfile.mkdtemp(prefix="pd-cpu-bench-", dir="/dev/shm"))
            try:
                rows.append(one_run(work, jar, f"{chr(65 + jars.index(jar))}{r}", a))
            finally:
                shutil.rmtree(work, ignore_errors=True)
    print(f"\n{'jar':4} {'idle % core':>12} {'CPU ms/request':>15} {'beyond idle':>12}")
    for jar in jars:
        mine = [x for x in rows if x["jar"] == jar]
        tag = chr(65 + jars.index(jar))
        print(f"{tag:4} {' / '.join(str(x['idle_core_pct']) for x in mine):>12} "
              f"{' / '.join(str(x['cpu_ms_per_request']) for x in mine):>15} "
              f"{' / '.join(str(x['beyond_idle_ms_per_request']) for x in mine):>12}   {jar}")
    out = REPO / "target/producer-cpu-bench.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"args": vars(a), "rows": rows}, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
