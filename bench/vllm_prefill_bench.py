#!/usr/bin/env python3
"""P's prefill-only throughput: one vLLM instance with no connector, with vLLM's own NixlConnector, and with the
pd-connector plugin beside a producer pd-connector, each fleet started alone, the same requests to each.

    bench/vllm-pd.sh --prefill [--requests 48] [--warmup 8] [--concurrency 1,16] [--prompt-tokens 300]
                               [--fleets none,stock,plugin] [--dtype float32] [--threads]
                               (PD_BENCH_MODEL: another model)

Fleet `noop` is vLLM with bench/noop_connector.py, a connector whose every hook does nothing: what vLLM's own
connector machinery costs, the floor under any connector. Fleet `overlap` is the plugin with `pd_save_overlap`: P's
copy layer by layer on a copy thread beside the forward instead of after it, in the step.

Each request is a completion of a prompt of token ids no cache has seen, `max_tokens` 1, with
`kv_transfer_params: {"do_remote_decode": true}` (what a router's P leg sends); nothing reads the KV afterwards,
so stock P and pd-connector hold it until their lease (5 s here) runs out. Reported per fleet and concurrency:
requests/s (requests over the batch's wall time, `c` clients each sending one request after another), latency
p50, CPU seconds per request of the fleet's processes (vLLM's server and engine core, pd-connector's JVM), and
for the plugin the time it spent on vLLM's scheduler thread per request (p50, p99: its `sched` timing lines; p50
per hook in the JSON row), its copy into P's KV file (p50), how long the engine step waited for the copies
(`wait_for_save`: p50 over the requests of the wait of each one's step, and the steps' waits as a share of the
batch's wall time) and
the KV bytes D-facing HTTP carried (none: P's engine path has no KV read-out). Ratios against no connector.
With --threads, each row also says where the CPU went: ms per request of each thread kind, by the OS names of
process and thread (the plugin names its own `pd-control` and `pd-load`; pd-connector's step loops are
`producer-<engine>`/`consumer-<engine>`).
Writes target/vllm-bench/prefill.json.
"""
import argparse
import json
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "integrations/vllm/e2e"))
sys.path.insert(0, str(REPO / "bench"))

import openai  # noqa: E402

from fleet import Fleet, metric  # noqa: E402
from fleet_cpu import fleet_sessions, session_cpu_seconds, thread_cpu_delta, thread_cpu_seconds  # noqa: E402
from vllm_pd_bench import percentile  # noqa: E402
from pd_connector_vllm.timing_lines import SAVE_LINE, SAVE_WAIT, SCHED_HOOKS, SCHED_LINE, SCHED_SPLIT  # noqa: E402
from workload import MODEL, token_prompt  # noqa: E402

# the fleets with the plugin: its timing lines and pd-connector's counts are read for them
PLUGIN_FLEETS = ("plugin", "overlap")
REQUEST_TIMEOUT_S = 120.0
BATCH_DEADLINE_S = 900.0
LEASE_S = 5


def start(fleet: Fleet, kind: str):
    if kind == "none":
        return fleet.vllm("p", None), None
    if kind == "stock":
        return fleet.stock_vllm("p", lease_s=LEASE_S), None
    if kind == "noop":
        config = {"kv_connector": "NoopConnector", "kv_connector_module_path": "noop_connector", "kv_role": "kv_both",
                  "kv_buffer_device": "cpu"}
        return fleet.vllm("p", config, python_paths=(str(REPO / "bench"),)), None
    pd = fleet.pd_service("pd-p", "producer", lease=f"{LEASE_S}s", num_blocks=1024)
    settings = {"pd_log_timings": True, "pd_save_overlap": kind == "overlap"}
    return fleet.plugin_vllm("p", pd, plugin_settings=settings), pd


def batch(url: str, prompts, concurrency: int):
    queue = list(prompts)
    lock = threading.Lock()
    latencies, errors, without_params = [], [], []

    def client_loop():
        c = openai.OpenAI(base_url=url + "/v1", api_key="unused", timeout=REQUEST_TIMEOUT_S, max_retries=0)
        while True:
            with lock:
                if not queue:
                    return
                seed, prompt = queue.pop(0)
            t0 = time.perf_counter()
            try:
                r = c.completions.create(model=MODEL, prompt=prompt, max_tokens=1, temperature=0,
                                         extra_body={"kv_transfer_params": {"do_remote_decode": True}})
            except Exception as e:  # noqa: BLE001 - counted, the batch goes on
                with lock:
                    errors.append(f"{seed}: {e}")
                continue
            with lock:
                latencies.append(time.perf_counter() - t0)
                params = getattr(r, "kv_transfer_params", None) or (r.model_extra or {}).get("kv_transfer_params")
                if not params or not params.get("do_remote_prefill"):
                    without_params.append(seed)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client_loop, daemon=True) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(1.0, BATCH_DEADLINE_S - (time.perf_counter() - t0)))
    if any(t.is_alive() for t in threads):
        raise RuntimeError(f"a batch did not finish within {BATCH_DEADLINE_S} s")
    return latencies, time.perf_counter() - t0, errors, without_params


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=48, help="measured requests per fleet and concurrency")
    parser.add_argument("--warmup", type=int, default=8, help="unmeasured requests per fleet first")
    parser.add_argument("--concurrency", default="1,16")
    parser.add_argument("--prompt-tokens", type=int, default=300)
    parser.add_argument("--fleets", default="none,stock,plugin",
                        help="in this order, a fleet named twice runs twice: none (no connector), noop (vLLM's "
                             "connector machinery with a connector that does nothing), stock, plugin, overlap "
                             "(the plugin copying beside the forward)")
    parser.add_argument("--dtype", choices=["bfloat16", "float32"], default=None,
                        help="serve the model and its KV in this dtype (default: the model's own, bfloat16)")
    parser.add_argument("--threads", action="store_true",
                        help="also CPU ms per request of each thread kind (process/thread by OS name), the top 12")
    args = parser.parse_args(argv)
    levels = [int(x) for x in args.concurrency.split(",")]
    fleets = args.fleets.split(",")
    if not (1 <= args.requests <= 2000 and 0 <= args.warmup <= 2000 and all(1 <= c <= 64 for c in levels)):
        parser.error("--requests 1..2000, --warmup 0..2000, concurrency 1..64")
    if set(fleets) - {"none", "noop", "stock", "plugin", "overlap"}:
        parser.error("--fleets takes none, noop, stock, plugin, overlap")

    started = time.perf_counter()
    rows = []
    for kind in fleets:
        with Fleet(f"prefill-{kind}", dtype=args.dtype) as fleet:
            p, pd = start(fleet, kind)
            seed = 900_000
            batch(p.url, [(seed + i, token_prompt(seed + i, args.prompt_tokens)) for i in range(args.warmup)], 1)
            for c in levels:
                seed = 1_000_000 * (1 + levels.index(c))  # the same prompts for every fleet, none seen before
                prompts = [(seed + i, token_prompt(seed + i, args.prompt_tokens)) for i in range(args.requests)]
                log_from = p.process.log_path.stat().st_size
                cpu0 = session_cpu_seconds(fleet_sessions(fleet))
                threads0 = thread_cpu_seconds(fleet_sessions(fleet)) if args.threads else {}
                latencies, wall, errors, without = batch(p.url, prompts, c)
                cpu = session_cpu_seconds(fleet_sessions(fleet)) - cpu0
                threads = thread_cpu_delta(threads0, thread_cpu_seconds(fleet_sessions(fleet))) if args.threads else {}
                if not latencies:
                    raise RuntimeError(f"{kind} c={c}: no request answered ({errors[:3]})")
                row = {"fleet": kind, "c": c, "requests": len(latencies), "errors": len(errors),
                       "requests_per_s": round(len(latencies) / wall, 2),
                       "latency_p50_ms": round(percentile(latencies, 50) * 1000, 1),
                       "cpu_s_per_request": round(cpu / max(1, len(latencies)), 4),
                       "answers_without_params": len(without) if kind != "none" else None}
                if threads:
                    top = sorted(threads.items(), key=lambda kv: -kv[1])[:12]
                    row["thread_cpu_ms_per_request"] = {k: round(1000 * v / max(1, len(latencies)), 2) for k, v in top}
                if kind in PLUGIN_FLEETS:
                    with open(p.process.log_path, errors="replace") as f:
                        f.seek(log_from)
                        text = f.read()
                    sched = [float(m.group(2)) for m in SCHED_LINE.finditer(text)]
                    split = [tuple(float(x) for x in m.groups()) for m in SCHED_SPLIT.finditer(text)]
                    if split:  # where the scheduler thread's time went, p50 per hook
                        row["sched_hooks_ms_p50"] = {h: round(percentile([x[i] for x in split], 50), 4)
                                                     for i, h in enumerate(SCHED_HOOKS)}
                    row["sched_ms_p50"] = round(percentile(sched, 50), 4) if sched else None
                    row["sched_ms_p99"] = round(percentile(sched, 99), 4) if sched else None
                    row["sched_samples"] = len(sched)
                    # P's copy into its KV file, and how long the steps waited for it in wait_for_save: all of the
                    # copy when it runs in the step, what is left of it when it runs beside the forward. A step's
                    # line per copy names the step's copies: each line counts 1/n of its step's wait.
                    saves = [float(m.group(1)) for m in SAVE_LINE.finditer(text)]
                    waits = [(float(m.group(1)), int(m.group(2))) for m in SAVE_WAIT.finditer(text)]
                    step_waits = [w for w, _ in waits]  # each request's step's wait
                    row["save_ms_p50"] = round(percentile(saves, 50), 3) if saves else None
                    row["save_ms_p99"] = round(percentile(saves, 99), 3) if saves else None
                    row["save_wait_ms_p50"] = round(percentile(step_waits, 50), 3) if step_waits else None
                    row["save_wait_share_of_wall"] = (round(sum(w / n for w, n in waits) / 1000 / wall, 4)
                                                      if waits else None)
                    row["pd_kv_readouts"] = metric(pd, "http_server_requests_seconds_count",
                                                   {"uri": "/v1/consumer/requests/{id}/kv"})
                    # cumulative over the fleet's life: the plugin's batches on each channel
                    row["pd_batches_http"] = metric(pd, "http_server_requests_seconds_count",
                                                    {"uri": "/v1/producer/batch"})
                    row["pd_batches_socket"] = metric(pd, "pd_engine_socket_requests_total", {"op": "batch"})
                rows.append(row)
                print(json.dumps(row), flush=True)
    base = {r["c"]: r for r in rows if r["fleet"] == "none"}
    print(f"\n{'fleet':7} {'c':>3} {'req/s':>7} {'vs none':>8} {'p50 ms':>8} {'cpu s/req':>10} {'sched p50/p99 ms':>17} "
          f"{'P copy p50, step wait p50 ms, share':>36}")
    for r in rows:
        ratio = r["requests_per_s"] / base[r["c"]]["requests_per_s"] if r["c"] in base else float("nan")
        r["requests_per_s_vs_none"] = round(ratio, 3)
        sched = f"{r.get('sched_ms_p50')}/{r.get('sched_ms_p99')}" if r["fleet"] in PLUGIN_FLEETS else ""
        save = (f"{r['save_ms_p50']}, {r['save_wait_ms_p50']}, {100 * r['save_wait_share_of_wall']:.1f} %"
                if r.get("save_wait_share_of_wall") is not None else "")
        print(f"{r['fleet']:7} {r['c']:>3} {r['requests_per_s']:>7.1f} {ratio:>8.2f} {r['latency_p50_ms']:>8.1f} "
              f"{r['cpu_s_per_request']:>10.4f} {sched:>17} {save:>36}")
    out = REPO / "target/vllm-bench"
    out.mkdir(parents=True, exist_ok=True)
    (out / "prefill.json").write_text(json.dumps({"prompt_tokens": args.prompt_tokens, "dtype": args.dtype,
                                                  "rows": rows}, indent=2) + "\n")
    print(f"took {time.perf_counter() - started:.0f} s; results in {out / 'prefill.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
