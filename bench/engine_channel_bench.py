#!/usr/bin/env python3
"""What one call of the plugin's P side costs over each channel: the per-step batch (``POST /v1/producer/batch``
over loopback HTTP with keep-alive, against ``{"op": "batch"}`` on the engine socket), with the plugin's own client.

    JAVA_HOME=... PD_NIXL_HOME=.../nixl-cu12-1.5.1 PYTHONPATH=integrations/vllm \\
        <vLLM venv>/bin/python bench/engine_channel_bench.py [--n 2000] [--warmup 500]

One producer pd-connector JVM on 127.0.0.1 (d_load_bench's settings, the tiny geometry). Each iteration is the
shape of a step that takes a grant and one that gives it back: a batch asking for a grant of one block and one
lease, then a batch returning it. The two channels take turns, iteration by iteration, so both rows come from the
same minutes. Prints p50/p90/p99 per channel and call (ms) and the ratio of the p50s; writes
target/engine-channel-bench.json. The JVM is stopped at the end.
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
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "integrations/vllm"))
sys.path.insert(0, str(REPO / "bench"))

from pd_service import GEOMETRIES, Service, pct  # noqa: E402
from pd_connector_vllm.client import PdClient  # noqa: E402


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # stop the JVM (finally) on a kill too
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=500)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pd-chan-bench-", dir="/dev/shm"))
    p = None
    try:
        p = Service(work, "chan-p", "producer", GEOMETRIES["tiny"], None)
        http = PdClient(p.url)
        sock = PdClient(p.url)
        path = http.kv_layout().get("engine_socket")
        if not path:
            raise RuntimeError("the producer's kv-layout names no engine socket (pd.kv.engine-socket=false?)")
        sock.use_engine_socket(path)
        times: dict[str, dict[str, list[float]]] = {c: {"grant": [], "return": []} for c in ("http", "socket")}
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; all times ms", flush=True)
        for i in range(a.warmup + a.n):
            for channel, client in (("http", http), ("socket", sock)) if i % 2 else (("socket", sock), ("http", http)):
                t0 = time.perf_counter()
                grant = client.batch({"grant": {"blocks": 1, "leases": 1}})["grant"]
                t1 = time.perf_counter()
                returned = client.batch({"returns": [grant["grant_id"]]})
                t2 = time.perf_counter()
                if returned["returns"][0]["status"] != 204:
                    raise RuntimeError(f"return of {grant['grant_id']} answered {returned['returns'][0]}")
                if i >= a.warmup:
                    times[channel]["grant"].append(1000 * (t1 - t0))
                    times[channel]["return"].append(1000 * (t2 - t1))
        rows = []
        for call in ("grant", "return"):
            p50 = {c: statistics.median(times[c][call]) for c in times}
            for c in ("http", "socket"):
                xs = times[c][call]
                rows.append({"call": call, "channel": c, "n": len(xs), "p50": p50[c], "p90": pct(xs, 0.9),
                             "p99": pct(xs, 0.99)})
                print(f"batch ({call:6s}) {c:6s} p50 {p50[c]:6.3f} p90 {pct(xs, 0.9):6.3f} p99 {pct(xs, 0.99):6.3f}",
                      flush=True)
            print(f"batch ({call:6s}) socket / http p50: {p50['socket'] / p50['http']:.2f}", flush=True)
        out = REPO / "target/engine-channel-bench.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps({"rows": rows, "n": a.n, "warmup": a.warmup}, indent=1))
        print(f"wrote {out}")
        http.close()
        sock.close()
    finally:
        if p is not None:
            p.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
