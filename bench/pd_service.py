"""A pd-connector JVM on 127.0.0.1 for the benches that drive the plugin's client without vLLM (d_load_bench,
engine_channel_bench, producer_cpu_bench): its KV files and state under the bench's own work directory."""
from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

GEOMETRIES = {  # layers, KV heads, head dim; bf16, vLLM's CPU block of 128 tokens
    "tiny": (2, 2, 32),        # integrations/vllm/scripts/make-tiny-model.py
    "qwen": (24, 2, 64),       # Qwen2.5-0.5B
}
BLOCK_TOKENS = 128
PD_BLOCKS = 96


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Service:
    def __init__(self, work: Path, name: str, role: str, geometry: tuple[int, int, int], peer: str | None,
                 extra: dict | None = None, jar: str | None = None):
        layers, heads, dim = geometry
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        java = Path(os.environ.get("JAVA_HOME", "/usr/lib/jvm/temurin-25-jdk-amd64")) / "bin/java"
        jar = jar or os.environ.get("PD_CONNECTOR_JAR", str(REPO / "target/quarkus-app/quarkus-run.jar"))
        props = {"quarkus.http.host": "127.0.0.1", "quarkus.http.port": self.port, "pd.role": role,
                 "pd.engine-id": name, "pd.advertised-port": self.port, "pd.nixl.home": os.environ["PD_NIXL_HOME"],
                 "pd.model.layers": layers, "pd.model.kv-heads": heads, "pd.model.head-dim": dim,
                 "pd.model.block-tokens": BLOCK_TOKENS, "pd.model.dtype-bytes": 2, "pd.kv.num-blocks": PD_BLOCKS,
                 "pd.kv.shm-dir": work / "shm", "pd.lease.state-dir": work / f"{name}-state",
                 "pd.consumer.failure-policy": "fail", "quarkus.log.level": "WARN"}
        props.update(extra or {})
        if peer:
            props.update({"pd.registry.store": "static", "pd.registry.static.peers": peer.removeprefix("http://"),
                          "pd.registry.static.refresh-interval": "300ms"})
        self.log = open(work / f"{name}.log", "w")
        # PD_BENCH_JAVA_OPTS: more JVM options, as bench/run takes them (e.g. a flight recording)
        self.process = subprocess.Popen([str(java), "-Xmx512m", "--enable-native-access=ALL-UNNAMED",
                                         *os.environ.get("PD_BENCH_JAVA_OPTS", "").split(),
                                         *[f"-D{k}={v}" for k, v in props.items()], "-jar", jar],
                                        stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{name} exited; see {self.log.name}")
            try:
                with urllib.request.urlopen(self.url + "/q/health/ready", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"{name} not ready within 120 s")

    def lists(self, engine_id: str) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with urllib.request.urlopen(self.url + "/v1/registry", timeout=5) as r:
                if engine_id.encode() in r.read():
                    return
            time.sleep(0.3)
        raise RuntimeError(f"D does not list {engine_id}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.log.close()


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]
