#!/usr/bin/env python3
"""Side by side: vLLM P/D with vLLM's own NixlConnector vs. vLLM P/D with the pd-connector plugin (two pd-connector
services, lease verification on), both behind the same proxy (integrations/vllm/e2e/pd_proxy.py), on this machine,
with one vLLM instance (no connector, asked directly) as the floor.

    bench/vllm-pd.sh [--concurrency 1,8,16] [--requests 48] [--rounds 2] [--prompt-tokens 300] [--output-tokens 8]
    (PD_BENCH_MODEL=<dir> for another model, e.g. bench/make-qwen-geometry-model.py's)

The three run at once (5 vLLM servers, 2 pd-connector services, 2 proxies, all on 127.0.0.1) and the measured
batches take turns between them: the order rotates with the concurrency and is reversed in odd rounds, so over
an even number of rounds each fleet goes before and after each other one equally often at each concurrency, and
load from anything else on the machine falls on all alike. Each request is a streamed completion of a prompt no
server has seen (random token ids), so every D leg moves the whole prompt's KV; TTFT is the time to the first
streamed text through the proxy (the single instance's: from it directly), requests/s a batch's requests over its
wall time with `c` clients each sending one request after another. The answers of the fleets to the same prompts
are compared (greedy decoding: stock's and the plugin's must be equal; the single instance's are counted apart,
since it batches a prompt's prefill with other requests' decode steps, which may round differently). CPU seconds
per request are the user + system time of each fleet's processes (vLLM servers and engine cores, pd-connector
JVMs, its proxy) during its own batches, divided by the batch's requests. The plugin's instances log their timing
lines (pd_log_timings), which the bench splits by batch: the time on P's scheduler thread, P's copy into its KV
file and D's load (the pull as the plugin sees it, pd-connector's own pull_ms, the copy, the release). Prints a
table, the plugin/stock ratios, each P/D fleet's ratios to the single instance and where the plugin's time went;
writes target/vllm-bench/results.json.
"""
import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "integrations/vllm/e2e"))
sys.path.insert(0, str(REPO / "integrations/vllm"))
sys.path.insert(0, str(REPO / "bench"))

import openai  # noqa: E402

from fleet import Fleet, wait_registry_lists  # noqa: E402
from fleet_cpu import fleet_sessions, session_cpu_seconds  # noqa: E402
from workload import MODEL, token_prompt  # noqa: E402
from pd_connector_vllm.timing_lines import LOAD_LINE, SAVE_LINE, SCHED_LINE, load_times  # noqa: E402

# the plugin's timing lines (pd_log_timings) by part: P's scheduler thread per request, P's copy, D's load split
PLUGIN_PARTS = ("sched", "save", "pull", "pd_pull", "copy", "release")

REQUEST_TIMEOUT_S = 120.0
BATCH_DEADLINE_S = 900.0


def start_stock(fleet: Fleet):
    p = fleet.stock_vllm("p", lease_s=30, wait=False)
    d = fleet.stock_vllm("d", lease_s=30, wait=False)
    return p, d


def start_single(fleet: Fleet):
    return fleet.vllm("one", wait=False)


def start_plugin(fleet: Fleet):
    pd_p = fleet.pd_service("pd-p", "producer")
    pd_d = fleet.pd_service("pd-d", "consumer", peers=[pd_p])
    wait_registry_lists(pd_d, fleet.label + "-pd-p")
    p = fleet.plugin_vllm("p", pd_p, wait=False, plugin_settings={"pd_log_timings": True})
    d = fleet.plugin_vllm("d", pd_d, wait=False, plugin_settings={"pd_log_timings": True})
    return p, d


class PluginTimings:
    """The plugin's timing lines its P and D wrote during one batch: the log text appended meanwhile."""

    def __init__(self, p, d):
        self._logs = (p.process.log_path, d.process.log_path)
        self._at = [0, 0]

    def mark(self) -> None:
        self._at = [path.stat().st_size for path in self._logs]

    def since_mark(self) -> dict[str, list[float]]:
        text = ""
        for path, at in zip(self._logs, self._at):
            with open(path, "rb") as f:
                f.seek(at)
                text += f.read().decode(errors="replace")
        parts = {k: [] for k in PLUGIN_PARTS}
        parts["sched"] = [float(m.group(2)) for m in SCHED_LINE.finditer(text)]
        parts["save"] = [float(m.group(1)) for m in SAVE_LINE.finditer(text)]
        for m in LOAD_LINE.finditer(text):
            for key, value in zip(("pull", "pd_pull", "copy", "release"), load_times(m)):
                parts[key].append(value)
        return parts


def one_request(c: openai.OpenAI, prompt: list[int], output_tokens: int) -> tuple[float, str]:
    t0 = time.perf_counter()
    ttft = None
    text = []
    for chunk in c.completions.create(model=MODEL, prompt=prompt, max_tokens=output_tokens, temperature=0,
                                      stream=True, extra_body={"ignore_eos": True}):
        if chunk.choices and chunk.choices[0].text:
            if ttft is None:
                ttft = time.perf_counter() - t0
            text.append(chunk.choices[0].text)
    if ttft is None:
        raise RuntimeError("a streamed answer without text")
    return ttft, "".join(text)


def batch(base_url: str, prompts: list[tuple[int, list[int]]], concurrency: int, output_tokens: int):
    """`concurrency` clients share the prompts; returns (ttfts, wall seconds, {prompt seed: answer})."""
    queue = list(prompts)
    lock = threading.Lock()
    ttfts, answers, errors = [], {}, []

    def client_loop():
        c = openai.OpenAI(base_url=base_url + "/v1", api_key="unused", timeout=REQUEST_TIMEOUT_S, max_retries=0)
        while True:
            with lock:
                if not queue:
                    return
                seed, prompt = queue.pop(0)
            try:
                ttft, text = one_request(c, prompt, output_tokens)
            except Exception as e:  # noqa: BLE001 - counted and reported, the batch goes on
                with lock:
                    errors.append(f"{seed}: {e}")
                continue
            with lock:
                ttfts.append(ttft)
                answers[seed] = text

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client_loop, daemon=True) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(1.0, BATCH_DEADLINE_S - (time.perf_counter() - t0)))
    if any(t.is_alive() for t in threads):
        raise RuntimeError(f"a batch did not finish within {BATCH_DEADLINE_S} s")
    return ttfts, time.perf_counter() - t0, answers, errors


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", default="1,8,16", help="client concurrencies, each a batch per round")
    parser.add_argument("--requests", type=int, default=48, help="requests per batch (c=1: a third of it)")
    parser.add_argument("--rounds", type=int, default=2, help="batches per fleet and concurrency")
    parser.add_argument("--prompt-tokens", type=int, default=300)
    parser.add_argument("--output-tokens", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=4, help="unmeasured requests per fleet first")
    args = parser.parse_args(argv)
    levels = [int(x) for x in args.concurrency.split(",")]
    if not all(1 <= c <= 64 for c in levels):
        parser.error("--concurrency takes values 1..64")
    for name in ("requests", "rounds", "prompt_tokens", "output_tokens"):
        if getattr(args, name) < 1 or getattr(args, name) > 2000:
            parser.error(f"--{name.replace('_', '-')} must be 1..2000")

    started = time.perf_counter()
    with Fleet("bench-stock") as stock_fleet, Fleet("bench-plugin") as plugin_fleet, \
            Fleet("bench-single") as single_fleet:
        stock_p, stock_d = start_stock(stock_fleet)
        plugin_p, plugin_d = start_plugin(plugin_fleet)
        single = start_single(single_fleet)
        timings = PluginTimings(plugin_p, plugin_d)
        Fleet.ready(stock_p, stock_d, plugin_p, plugin_d, single)
        # the floor has no proxy hop either: the single instance is asked directly
        proxies = {"stock": stock_fleet.proxy(stock_p, stock_d), "plugin": plugin_fleet.proxy(plugin_p, plugin_d),
                   "single": single}
        fleets = {"stock": stock_fleet, "plugin": plugin_fleet, "single": single_fleet}
        print(f"fleets up in {time.perf_counter() - started:.0f} s", flush=True)

        seed = 50_000
        for name, proxy in proxies.items():  # warm-up (first requests pay one-time costs), unmeasured
            warm = [(seed + i, token_prompt(seed + i, args.prompt_tokens)) for i in range(args.warmup)]
            batch(proxy.url, warm, 1, args.output_tokens)
            seed += args.warmup

        results = {(f, c): {"ttft": [], "wall": 0.0, "requests": 0, "errors": [], "cpu": 0.0,
                            "plugin": {k: [] for k in PLUGIN_PARTS}} for f in proxies for c in levels}
        answers = {f: {} for f in proxies}
        concurrency_of = {}  # prompt seed -> the concurrency every fleet answered it at
        names = list(proxies)
        for r in range(args.rounds):
            for i, c in enumerate(levels):
                n = max(1, args.requests // 3) if c == 1 else args.requests
                prompts = [(seed + k, token_prompt(seed + k, args.prompt_tokens)) for k in range(n)]
                seed += n
                turn = i % len(names)
                order = names[turn:] + names[:turn]
                if r % 2:
                    order.reverse()
                for f in order:  # every fleet gets the same prompts
                    cpu0 = session_cpu_seconds(fleet_sessions(fleets[f]))
                    timings.mark()
                    ttfts, wall, got, errors = batch(proxies[f].url, prompts, c, args.output_tokens)
                    row = results[(f, c)]
                    if f == "plugin":
                        for key, values in timings.since_mark().items():
                            row["plugin"][key] += values
                    row["cpu"] += session_cpu_seconds(fleet_sessions(fleets[f])) - cpu0
                    row["ttft"] += ttfts
                    row["wall"] += wall
                    row["requests"] += len(ttfts)
                    row["errors"] += errors
                    answers[f].update(got)
                    concurrency_of.update((s, c) for s, _ in prompts)
                    print(f"round {r + 1} c={c} {f}: {len(ttfts)} requests in {wall:.1f} s, "
                          f"TTFT p50 {statistics.median(ttfts) * 1000:.0f} ms, {len(errors)} errors", flush=True)

    common = set(answers["stock"]) & set(answers["plugin"])
    differ = sorted(s for s in common if answers["stock"][s] != answers["plugin"][s])
    common_single = common & set(answers["single"])
    differ_single = sorted(s for s in common_single if answers["single"][s] != answers["plugin"][s])
    report = {"machine_note": "the fleets measured in turn in one run", "concurrency": levels,
              "prompt_tokens": args.prompt_tokens, "output_tokens": args.output_tokens, "rounds": args.rounds,
              "answers_compared": len(common), "answers_differing": len(differ),
              "answers_compared_with_single": len(common_single),
              "answers_differing_from_single": len(differ_single),
              "differing": [{"seed": s, "c": concurrency_of[s], "stock": answers["stock"][s],
                             "plugin": answers["plugin"][s]} for s in differ], "rows": []}
    print(f"\n{'fleet':8} {'c':>2} {'requests':>8} {'TTFT p50 ms':>12} {'TTFT p90 ms':>12} {'req/s':>7} {'cpu s/req':>9} {'errors':>6}")
    for (f, c), row in results.items():
        if not row["ttft"]:
            raise RuntimeError(f"{f} c={c}: no request answered ({row['errors'][:3]})")
        p50, p90 = percentile(row["ttft"], 50) * 1000, percentile(row["ttft"], 90) * 1000
        rps = row["requests"] / row["wall"]
        report["rows"].append({"fleet": f, "c": c, "requests": row["requests"], "ttft_p50_ms": round(p50, 1),
                               "ttft_p90_ms": round(p90, 1), "requests_per_s": round(rps, 3),
                               "cpu_s_per_request": round(row["cpu"] / row["requests"], 4),
                               "errors": len(row["errors"])})
        if f == "plugin":
            report["rows"][-1]["plugin_ms"] = {
                key: {"n": len(v), "p50": round(percentile(v, 50), 3), "p90": round(percentile(v, 90), 3)}
                for key, v in row["plugin"].items() if v}
        print(f"{f:8} {c:>2} {row['requests']:>8} {p50:>12.0f} {p90:>12.0f} {rps:>7.2f} "
              f"{row['cpu'] / row['requests']:>9.3f} {len(row['errors']):>6}")
    by = {(x["fleet"], x["c"]): x for x in report["rows"]}
    print("\nplugin / stock (target: TTFT p50 <= 1.0x, requests/s >= 1.0x):")
    for c in levels:
        s, p = by[("stock", c)], by[("plugin", c)]
        ratios = {"ttft_p50": p["ttft_p50_ms"] / s["ttft_p50_ms"], "ttft_p90": p["ttft_p90_ms"] / s["ttft_p90_ms"],
                  "requests_per_s": p["requests_per_s"] / s["requests_per_s"]}
        report[f"ratios_c{c}"] = {k: round(v, 3) for k, v in ratios.items()}
        print(f"  c={c}: TTFT p50 {ratios['ttft_p50']:.2f}x, p90 {ratios['ttft_p90']:.2f}x, "
              f"requests/s {ratios['requests_per_s']:.2f}x")
    print("\neach P/D fleet / one vLLM instance (the floor):")
    for c in levels:
        one = by[("single", c)]
        for f in ("stock", "plugin"):
            x = by[(f, c)]
            ratios = {"ttft_p50": x["ttft_p50_ms"] / one["ttft_p50_ms"],
                      "requests_per_s": x["requests_per_s"] / one["requests_per_s"]}
            report[f"{f}_over_single_c{c}"] = {k: round(v, 3) for k, v in ratios.items()}
            print(f"  c={c} {f}: TTFT p50 {ratios['ttft_p50']:.2f}x, requests/s {ratios['requests_per_s']:.2f}x")
    print("\nwhere the plugin's time went, ms p50 / p90 (its timing lines): scheduler thread per P request, P's copy"
          " into its KV file, D's load (pull as the plugin sees it, pd-connector's own pull_ms, copy, release):")
    for row in report["rows"]:
        if row["fleet"] == "plugin":
            parts = row.get("plugin_ms", {})
            print(f"  c={row['c']}: " + ", ".join(f"{k} {v['p50']:.2f} / {v['p90']:.2f}" for k, v in parts.items()))
    by_c = {c: sum(1 for s in differ if concurrency_of[s] == c) for c in levels}
    print(f"answers compared between the fleets: {len(common)}, differing: {len(differ)} "
          f"(by concurrency: {', '.join(f'c={c}: {n}' for c, n in by_c.items())})")
    print(f"the plugin's answers against the single instance's: {len(common_single)} compared, "
          f"{len(differ_single)} differing")
    out = REPO / "target/vllm-bench"
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"took {time.perf_counter() - started:.0f} s; results in {out / 'results.json'}")
    if differ:
        print(f"FAILED: the fleets answered {len(differ)} prompts differently", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
