#!/usr/bin/env python3
"""D's load as vLLM sees it (the plugin's load thread: pull, copy from D's KV file into vLLM's blocks, the epochs
checked or the release waited for) against what it cannot do without: pd-connector's own pull_ms plus one memcpy.

    JAVA_HOME=... PD_NIXL_HOME=.../nixl-cu12-1.5.1 PYTHONPATH=integrations/vllm \\
        <vLLM venv>/bin/python bench/d_load_bench.py [--geometry tiny,qwen] [--prompts 300,4096] [--n 100] \\
        [--channel both|http|socket] [--setting key=value ...]

Per geometry, a P (producer) and a D (consumer) pd-connector, each its own JVM on 127.0.0.1 with its KV files in
a fresh directory under /dev/shm, D knowing P through the static registry; the plugin's P worker writes each
prompt's KV through P's file and finishes it, then the plugin's D worker loads it into vLLM-shaped CPU caches
(what a load thread runs for a step of one load, up to reporting it: ``PdLoader._batch`` on the engine socket,
``PdLoader._load`` over HTTP), split into the pull as the plugin sees it, the copy and the release (0 when the pull's epochs vouched for the copy and the release followed it);
over HTTP and over D's engine socket (the path D's kv-layout names), loads taking turns, one row each
(``--channel``). For reference it then times the previous engine path on as many pulls of the same size, in a loop
of its own: the pull plus the KV read out over HTTP (``GET .../kv``, which releases). ``memcpy`` is one ``memmove`` of the pulled bytes
between two contiguous buffers, on the load thread. The ``socket-rf`` row (unless ``--no-baseline``) is the same
run's baseline: loads over the socket whose client drops the reply's ``blocks_epoch``, so each waits for its
release before it is reported, as before D's files carried epochs; the ``socket-list`` row another: pulls that
send their token ids as the JSON list rather than packed (``token_ids_le32``); the ``socket-calls`` row sends its
load as one pull and one release call (ops pull and release) rather than ops pulls and releases.
Each takes its turn with the others, and the socket row says its load as a ratio to each. Prints one row per
geometry, prompt length and channel (p50 and p90 in ms) and writes target/d-load-bench.json. Every process it starts is stopped at the end.
"""
from __future__ import annotations

import argparse
import ctypes
import http.client
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "integrations/vllm"))
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "integrations/vllm/e2e"))

from pd_connector_vllm.client import PdClient  # noqa: E402
from pd_connector_vllm.engine_socket import PACKED_TOKEN_IDS, EngineSocket  # noqa: E402
from pd_connector_vllm.loading import _self_checking_epoch  # noqa: E402
from pd_connector_vllm.specs import LoadSpec, SaveSpec  # noqa: E402
from pd_connector_vllm.worker import PdWorker  # noqa: E402

from fleet import metric  # noqa: E402
from pd_service import BLOCK_TOKENS, GEOMETRIES, Service, pct  # noqa: E402

CHANNELS = {"both": ("http", "socket"), "http": ("http",), "socket": ("socket",)}  # --channel -> each D worker's pd_engine_channel


class TimedClient(PdClient):
    """The plugin's client, keeping the last pull's reply and the release's time for the bench."""

    def pull(self, request_id, token_ids, params, decode_rank):
        t0 = time.perf_counter()
        self.last_reply = super().pull(request_id, token_ids, params, decode_rank)
        self.pull_s = time.perf_counter() - t0
        return self.last_reply

    def release(self, request_id, decode_rank):
        t0 = time.perf_counter()
        super().release(request_id, decode_rank)
        self.release_s = time.perf_counter() - t0

    def pulls(self, items, on_reply):
        t0 = time.perf_counter()

        def timed(i, error, reply):
            self.pull_s, self.last_reply = time.perf_counter() - t0, reply
            on_reply(i, error, reply)
        super().pulls(items, timed)

    def releases(self, items):
        t0 = time.perf_counter()
        out = super().releases(items)
        self.release_s = time.perf_counter() - t0
        return out


class ReleaseFirstClient(TimedClient):
    """The same client with the pull's epoch dropped from its reply: the load waits for its release before it is
    reported, as every load did before D's files carried epochs (the same run's baseline)."""

    def pull(self, request_id, token_ids, params, decode_rank):
        reply = super().pull(request_id, token_ids, params, decode_rank)
        reply.pop("blocks_epoch", None)
        return reply

    def pulls(self, items, on_reply):
        def without_epoch(i, error, reply):
            if reply is not None:
                reply.pop("blocks_epoch", None)
            on_reply(i, error, reply)
        super().pulls(items, without_epoch)


class ListSocket(EngineSocket):
    """The engine socket as if pd-connector's hello did not name ``token-ids-le32``: each pull's token ids go as
    the JSON list, as before pulls packed them."""

    def _connection(self, deadline, timeout_s):
        sock = super()._connection(deadline, timeout_s)
        self._local.features = self._local.features - {PACKED_TOKEN_IDS}
        return sock


class ListIdsClient(TimedClient):
    """The bench's client with its pulls' token ids sent as the JSON list (the same run's baseline)."""

    def use_engine_socket(self, path):
        super().use_engine_socket(path)
        self._engine.close()
        self._engine = ListSocket(path, self._token)
        self._engine.probe(self.timeout_s)


def row_kinds(channels: tuple[str, ...], baseline: bool) -> dict[str, tuple[str, type, bool]]:
    """Row name -> (the D worker's pd_engine_channel, its client class, whether its load goes as the plugin sends
    a step's loads on a socket that batches them, ops pulls and releases, rather than one call each way)."""
    kinds = {ch: (ch, TimedClient, ch == "socket") for ch in channels}
    if baseline and "socket" in channels:
        kinds["socket-rf"] = ("socket", ReleaseFirstClient, True)
        kinds["socket-list"] = ("socket", ListIdsClient, True)
        kinds["socket-calls"] = ("socket", TimedClient, False)
    return kinds


def caches(layers: int, heads: int, dim: int, blocks: int, seed: int | None) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    return {f"model.layers.{i}.self_attn.attn": (torch.randn(blocks, heads, BLOCK_TOKENS, 2 * dim, generator=gen)
                                                 if gen else torch.zeros(blocks, heads, BLOCK_TOKENS, 2 * dim))
            .to(torch.bfloat16) for i in range(layers)}



def read_out(url: str, request_id: str) -> bytes:
    """The previous engine path's read-out: the KV as an HTTP body (GET .../kv releases the pull)."""
    u = url.removeprefix("http://")
    conn = http.client.HTTPConnection(u.split(":")[0], int(u.split(":")[1]), timeout=30)
    try:
        conn.request("GET", f"/v1/consumer/requests/{request_id}/kv")
        r = conn.getresponse()
        body = r.read()
        if r.status != 200:
            raise RuntimeError(f"GET .../kv {r.status}")
        return body
    finally:
        conn.close()


def lease_held(p: Service) -> dict[str, float]:
    """P's pd_lease_duration (export to release) from its Prometheus endpoint: how soon D's read notifications
    reached P and released the leases."""
    count = metric(p, "pd_lease_duration_seconds_count")
    return {"count": count,
            "mean_ms": 1000 * metric(p, "pd_lease_duration_seconds_sum") / count if count else float("nan"),
            "max_ms": 1000 * metric(p, "pd_lease_duration_seconds_max")}


def run_geometry(name: str, prompts: list[int], n: int, warmup: int, channels: tuple[str, ...],
                 baseline: bool, settings: dict[str, str]) -> list[dict]:
    layers, heads, dim = GEOMETRIES[name]
    work = Path(tempfile.mkdtemp(prefix="pd-dload-bench-", dir="/dev/shm"))
    services = []
    rows = []
    try:
        p = Service(work, f"bench-{name}-p", "producer", GEOMETRIES[name], None, extra=settings)
        services.append(p)
        d = Service(work, f"bench-{name}-d", "consumer", GEOMETRIES[name], p.url, extra=settings)
        services.append(d)
        d.lists(f"bench-{name}-p")
        nb = max(prompts) // BLOCK_TOKENS + 2
        p_client, d_http = PdClient(p.url), PdClient(d.url)
        p_worker = PdWorker(p_client, 0, 1, 1)
        p_worker.register(caches(layers, heads, dim, nb, seed=1), p_client.kv_layout())
        layout = d_http.kv_layout()
        if "socket" in channels and not layout.get("engine_socket"):
            raise RuntimeError("D's kv-layout names no engine socket (pd.kv.engine-socket=false, or a jar "
                               "without it): run with --channel http")
        # One D worker per channel, registered as the plugin registers: engine_channel=socket makes it
        # use_engine_socket(kv-layout's engine_socket), and fails loudly if that cannot be reached.
        d_side, d_batch = {}, {}
        kinds = row_kinds(channels, baseline)
        for kind, (ch, client_class, batches) in kinds.items():
            client = client_class(d.url)
            worker = PdWorker(client, 0, 1, 1, engine_channel=ch)
            worker.register(caches(layers, heads, dim, nb, seed=None), layout)
            assert worker._loader._batches == (ch == "socket"), (kind, "D reads op pulls over its socket")
            d_batch[kind] = batches
            assert client.engine_socket == (layout["engine_socket"] if ch == "socket" else None)
            if ch == "socket":  # D reads packed ids, and only the list row sends lists
                packs = PACKED_TOKEN_IDS in client._engine._local.features
                assert packs == (client_class is not ListIdsClient), (kind, packs)
            d_side[kind] = (client, worker)
        seq = 0

        def prefill(tokens: int) -> tuple[str, list[int], dict]:
            nonlocal seq
            seq += 1
            rid = f"{name}-{tokens}-{seq}"
            ids = [(seq * 7919 + i * 104729) % 150_000 for i in range(tokens)]
            r = p_client.reserve(rid, tokens)
            blocks = len(r["block_ids"])
            p_worker.save([SaveSpec(rid, rid, list(range(blocks)), r["block_ids"], tokens,
                                    [(x["kv_file"], x["region_bytes"]) for x in r["ranks"]])])
            return rid, ids, p_client.finish(rid)["kv_transfer_params"]

        for tokens in prompts:
            blocks = -(-tokens // BLOCK_TOKENS)
            nbytes = blocks * layout["block_bytes"]
            src, dst = torch.empty(nbytes, dtype=torch.uint8), torch.empty(nbytes, dtype=torch.uint8)
            src.fill_(1)
            dst.fill_(0)
            keys = ("load", "pull", "pd_pull", "copy", "release", "memcpy")
            samples = {kind: {k: [] for k in keys} for kind in kinds}
            # The channels take turns, load by load, so drift on this machine (the JIT, other work) weighs on
            # both alike.
            for i in range(warmup + n):
                for ch, (d_client, d_worker) in d_side.items():
                    rid, ids, params = prefill(tokens)
                    spec = LoadSpec(rid, rid, ids, params, list(range(blocks)), 0)
                    d_client.release_s = 0.0
                    t0 = time.perf_counter()
                    if d_batch[ch]:   # a step of one load, as the plugin's load thread runs it on the socket
                        d_worker._loader._batch([(spec, True)])
                    else:             # one call each way (HTTP, or the socket-calls baseline)
                        d_worker._loader._load(spec)
                    t_all = time.perf_counter() - t0
                    result = d_worker.take_results()
                    if result.finished != {rid} or result.failed:
                        raise RuntimeError(f"load of {rid} over {ch} failed: {result.failed}")
                    reply, t_pull = d_client.last_reply, d_client.pull_s
                    if _self_checking_epoch(reply) is not None:
                        # its epochs vouched for it: vLLM's once copied, the release followed off the clock
                        t_load, t_release = t_all - d_client.release_s, 0.0
                    else:
                        t_load, t_release = t_all, d_client.release_s
                    t1 = time.perf_counter()
                    ctypes.memmove(dst.data_ptr(), src.data_ptr(), nbytes)
                    t_memcpy = time.perf_counter() - t1
                    if i < warmup:
                        continue
                    xs = samples[ch]
                    xs["load"].append(1000 * t_load)
                    xs["pd_pull"].append(float(reply["timings"]["pull_ms"]))
                    xs["pull"].append(1000 * t_pull)
                    xs["release"].append(1000 * t_release)
                    xs["copy"].append(1000 * (t_load - t_pull - t_release))
                    xs["memcpy"].append(1000 * t_memcpy)
            # the previous engine path, in a loop of its own (its 48 MiB bodies would load D's JVM and the
            # memory bus under the loads above): the pull over HTTP, then the KV as an HTTP body
            http_path, http_pd_pull = [], []
            for i in range(warmup + n):
                rid, ids, params = prefill(tokens)
                t2 = time.perf_counter()
                reply2 = d_http.pull(rid, ids, params, 0)
                body = read_out(d.url, rid)
                t_http = time.perf_counter() - t2
                assert len(body) == nbytes
                if i >= warmup:
                    http_path.append(1000 * t_http)
                    http_pd_pull.append(float(reply2["timings"]["pull_ms"]))
            for ch in kinds:
                xs = dict(samples[ch], http_path=http_path, http_pd_pull=http_pd_pull)
                xs["floor"] = [a + b for a, b in zip(xs["pd_pull"], xs["memcpy"])]
                row = {"geometry": name, "tokens": tokens, "channel": ch, "blocks": blocks, "mib": nbytes / 2**20,
                       "n": n}
                for key in ("load", "pd_pull", "memcpy", "floor", "pull", "copy", "release", "http_path",
                            "http_pd_pull"):
                    row[key] = {"p50": statistics.median(xs[key]), "p90": pct(xs[key], 0.9)}
                row["ratio_p50"] = row["load"]["p50"] / row["floor"]["p50"]
                row["ratio_each_p50"] = statistics.median(a / b for a, b in zip(xs["load"], xs["floor"]))
                vs = ""
                for base, key in (("socket-rf", "load_vs_release_first_p50"), ("socket-list", "load_vs_list_ids_p50"),
                                  ("socket-calls", "load_vs_one_call_each_p50")):
                    if ch == "socket" and base in samples:
                        row[key] = row["load"]["p50"] / statistics.median(samples[base]["load"])
                        vs += f" | {row[key]:.2f}x of {base}"
                rows.append(row)
                print(f"{name:5s} {tokens:5d} tok {nbytes / 2**20:6.2f} MiB {ch:9s} | load p50 "
                      f"{row['load']['p50']:7.2f} p90 {row['load']['p90']:7.2f} | pd pull_ms p50 "
                      f"{row['pd_pull']['p50']:6.2f} + memcpy {row['memcpy']['p50']:6.2f} = {row['floor']['p50']:7.2f} "
                      f"| ratio {row['ratio_p50']:.2f} (per pull {row['ratio_each_p50']:.2f}) | plugin's pull "
                      f"{row['pull']['p50']:.2f} copy {row['copy']['p50']:.2f} release {row['release']['p50']:.2f} "
                      f"| old path (pull + GET .../kv) p50 {row['http_path']['p50']:7.2f} p90 "
                      f"{row['http_path']['p90']:7.2f}{vs}", flush=True)
        held = lease_held(p)
        print(f"{name:5s} P held its {held['count']:.0f} leases export to release: mean {held['mean_ms']:.2f} ms, "
              f"max {held['max_ms']:.2f} ms (pd_lease_duration)", flush=True)
        for row in rows:
            row["p_lease_held"] = held
        p_worker.shutdown()
        for _, worker in d_side.values():
            worker.shutdown()
        d_http.close()
    finally:
        for s in reversed(services):
            s.stop()
        shutil.rmtree(work, ignore_errors=True)
    return rows


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # stop the services (finally) on a kill too
    ap = argparse.ArgumentParser()
    ap.add_argument("--geometry", default="tiny,qwen")
    ap.add_argument("--prompts", default="300,4096")
    ap.add_argument("--n", type=int, default=100)
    # pd-connector's per-pull code (the frame's JSON, the pull's checks, its reply) runs once per pull: after 30
    # pulls it is still interpreted and a small pull took 3-4x what it takes once the JIT compiled it (~1,000)
    ap.add_argument("--warmup", type=int, default=1000, help="unmeasured loads per row first (the JVMs' JIT)")
    ap.add_argument("--channel", choices=sorted(CHANNELS), default="both",
                    help="how the plugin's pull and release reach D's pd-connector: one row per channel")
    ap.add_argument("--no-baseline", action="store_true",
                    help="without the socket-rf and socket-list rows: loads over the socket that wait for the "
                         "release (no epochs), and pulls that send their token ids as a JSON list")
    ap.add_argument("--setting", action="append", default=[], metavar="KEY=VALUE",
                    help="a pd-connector setting for both JVMs (repeatable), to compare a build with itself")
    a = ap.parse_args()
    settings = dict(kv.split("=", 1) for kv in a.setting)
    rows = []
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; all times ms", flush=True)
    for g in a.geometry.split(","):
        rows += run_geometry(g, [int(x) for x in a.prompts.split(",")], a.n, a.warmup, CHANNELS[a.channel],
                             not a.no_baseline, settings)
    out = REPO / "target/d-load-bench.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(rows, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
