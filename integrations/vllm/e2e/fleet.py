"""Processes of a vLLM P/D fleet on 127.0.0.1 for the end-to-end tests and the side-by-side bench.

A `Fleet` owns every process it starts (vLLM servers, pd-connector services, the proxy) and stops all of them,
in reverse order, when it is closed, also when a start or a test failed. Each process runs in its own session
so that stopping it also stops the children it made (vLLM's engine core). Every wait has a deadline.

Environment (all optional):
  PD_VLLM_PYTHON     the venv's python that runs vLLM and the proxy (default: this interpreter)
  PD_VLLM_MODEL      the tiny model (default <repo>/.cache/vllm/model, as setup-vllm.sh makes it)
  PD_CONNECTOR_JAR   the packaged service (default <repo>/target/quarkus-app/quarkus-run.jar)
  PD_NIXL_HOME       the unpacked NIXL wheel the service loads (default <repo>/.cache/nixl/nixl-cu12-1.5.1, or
                     $PD_NIXL_CACHE/nixl-cu12-1.5.1)
  JAVA_HOME          Java 25 (default /usr/lib/jvm/temurin-25-jdk-amd64)
  PD_E2E_LOGS        where process logs go (default <repo>/target/vllm-e2e)
  PD_E2E_JAVA_OPTS   pd-connector's JVM options instead of the tests' small, quick-starting ones
  PD_E2E_VLLM_KV_MIB each vLLM TP worker's KV cache in MiB, unless a test sets its blocks (default 128; the
                     benches set 1024)
A missing one of these fails loudly; nothing is skipped.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[3]
E2E_DIR = Path(__file__).resolve().parent
VLLM_START_DEADLINE_S = float(os.environ.get("PD_E2E_VLLM_START_S", "600"))  # ~40 s idle, minutes on a busy machine
PD_START_DEADLINE_S = 90.0
# Every server of a fleet takes the same longest sequence; vLLM wants one block more than that, and the
# reproducer's P has only 8 blocks of vLLM's CPU block size.
BLOCK_TOKENS = 128
MAX_MODEL_LEN = 896
STOP_GRACE_S = 20.0

# pd-connector's JVM: small and quick to start for the tests (C1 only, serial GC); PD_E2E_JAVA_OPTS replaces them
# (the benches pass what a deployment runs: k8s/base/configmap.yaml's heap, the JVM's default compilers and GC).
JAVA_OPTS = (os.environ.get("PD_E2E_JAVA_OPTS") or "-Xmx384m -XX:+UseSerialGC -XX:TieredStopAtLevel=1").split()

# vLLM's KV cache per TP worker: 128 MiB hold 1,024 blocks of the tiny model in float32, far more than a test uses,
# where vLLM's CPU worker allocates and touches the whole cache at start. This VM hands out fresh memory slowly (two
# processes touching 3 GiB each took 24 s), and a TP fleet's workers used to take 1 GiB each.
VLLM_KV_BYTES = int(os.environ.get("PD_E2E_VLLM_KV_MIB", "128")) << 20

# The KV transfer config of the plugin: vLLM's own extension point, no patch to vLLM.
PLUGIN_MODULE = "pd_connector_vllm.connector"
PLUGIN_CLASS = "PdConnector"
# sitecustomize for vLLM instances without the plugin: the AMX tile registers (pd_connector_vllm.cpu_tiles)
AMX_SITE = E2E_DIR / "amx_site"


sys.path.insert(0, str(REPO / "scripts"))
from free_port import free_port  # noqa: E402  (below the ephemeral range, as the Java tests' FreePort)


def _path_from_env(var: str, default: Path, what: str) -> Path:
    path = Path(os.environ.get(var) or default)
    if not path.exists():
        raise RuntimeError(f"{what} not found at {path} (set {var}, or run integrations/vllm/scripts/setup-vllm.sh "
                           "and ./mvnw package / scripts/fetch-nixl.sh)")
    return path


def vllm_python() -> str:
    return os.environ.get("PD_VLLM_PYTHON") or sys.executable


def model_dir(arch: str | None = None) -> Path:
    """The tiny model; ``arch`` (``mla``, ``sliding``) its sibling of that shape (setup-vllm.sh makes each beside
    the Qwen2 one: ``model-mla``, ``model-sliding``)."""
    path = _path_from_env("PD_VLLM_MODEL", REPO / ".cache/vllm/model", "the tiny model")
    if arch is None:
        return path
    sibling = path.with_name(f"{path.name}-{arch}")
    if not sibling.exists():
        raise RuntimeError(f"the tiny {arch} model is not at {sibling} (run integrations/vllm/scripts/setup-vllm.sh)")
    return sibling


# vLLM's block size for the tiny models' caches on its CPU build: 128, except MLA on a CPU without AMX, where its
# CPU_MLA backend (the decode kernel compiles for no other size) makes every block 16 tokens whatever --block-size
# says; with AMX its AMX_MLA backend takes the 128.
VLLM_CPU_BLOCK_TOKENS = 128
CPU_MLA_BLOCK_TOKENS = 16


def geometry(arch: str | None = None) -> dict:
    """The model's KV geometry (make-tiny-model.py writes it beside the model), ``block_tokens`` the block size
    vLLM's CPU build gives its cache on this machine."""
    g = json.loads((model_dir(arch) / "pd-geometry.json").read_text())
    mla_without_amx = g.get("attention") == "mla" and not torch.cpu._is_amx_tile_supported()
    return dict(g, block_tokens=CPU_MLA_BLOCK_TOKENS if mla_without_amx else VLLM_CPU_BLOCK_TOKENS)


def blocks_of(g: dict, blocks_of_128: int) -> int:
    """As many of the geometry's blocks as hold the tokens of ``blocks_of_128`` 128-token blocks."""
    return blocks_of_128 * VLLM_CPU_BLOCK_TOKENS // g["block_tokens"]


def logs_dir() -> Path:
    path = Path(os.environ.get("PD_E2E_LOGS") or REPO / "target/vllm-e2e")
    path.mkdir(parents=True, exist_ok=True)
    return path


def http_get(url: str, timeout_s: float = 5.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class Process:
    """One child process with its log file; `stop` ends its whole session (SIGTERM, then SIGKILL)."""

    def __init__(self, name: str, cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None):
        self.name = name
        self.cmd = cmd
        self.log_path = logs_dir() / f"{name}.log"
        self._log = open(self.log_path, "w")
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.popen = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=full_env,
                                      cwd=str(cwd) if cwd else None, start_new_session=True)

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, lines: int = 40) -> str:
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, url: str, deadline_s: float) -> None:
        deadline = time.monotonic() + deadline_s
        last = "no answer"
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"{self.name} exited with {self.popen.returncode} before it was ready; "
                                   f"log {self.log_path}:\n{self.tail()}")
            try:
                status, _ = http_get(url, timeout_s=2)
                if status == 200:
                    return
                last = f"HTTP {status}"
            except OSError as e:
                last = str(e)
            time.sleep(0.5)
        raise RuntimeError(f"{self.name} not ready at {url} within {deadline_s:.0f} s ({last}); "
                           f"log {self.log_path}:\n{self.tail()}")

    def stop(self) -> None:
        if self.alive():
            try:
                os.killpg(self.popen.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.popen.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
        # The session may hold children (vLLM's engine core) even when the leader is gone.
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.popen.wait(10)
        except subprocess.TimeoutExpired:
            pass
        deadline = time.monotonic() + 10  # killed orphans are reaped by init a moment later
        while not self.session_gone() and time.monotonic() < deadline:
            time.sleep(0.1)
        self._log.close()

    def session_gone(self) -> bool:
        """True when no process of this one's session is left (what the cleanup test checks)."""
        try:
            os.killpg(self.popen.pid, 0)
            return False
        except ProcessLookupError:
            return True


@dataclass
class Endpoint:
    name: str
    url: str
    process: Process


# The KV dtypes a fleet can serve the model in: vLLM's --dtype and pd-connector's pd.model.dtype-bytes.
DTYPE_BYTES = {"bfloat16": 2, "float32": 4}
KV_DTYPE_NAMES = {"fp8": "fp8_e4m3", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2"}  # pd.model.kv-dtype of each


class Fleet:
    """Starts processes and owns them; `close` stops all of them in reverse order of start.

    `dtype` serves the model in another dtype than its own (geometry's `vllm_dtype`), every process alike:
    tensor-parallel fleets run float32, because vLLM's TP 2 sums a layer's partial products in another order
    than TP 1, and in bfloat16 that alone changes some greedy answers of the random-weight test model."""

    def __init__(self, label: str, dtype: str | None = None, kv_cache_dtype: str | None = None,
                 arch: str | None = None):
        self.label = label
        self.processes: list[Process] = []
        self.stopped: list[Process] = []
        self.shm_dirs: list[Path] = []
        self.model = model_dir(arch)   # `arch`: every vLLM of the fleet serves that tiny model (mla, sliding)
        self.geometry = geometry(arch)
        if dtype is not None:
            self.geometry = dict(self.geometry, vllm_dtype=dtype, dtype_bytes=DTYPE_BYTES[dtype])
        # `kv_cache_dtype` (fp8, fp8_e4m3, fp8_e5m2) quantizes every vLLM's KV cache (--kv-cache-dtype), and every
        # pd-connector names it (pd.model.kv-dtype) with its 1-byte width
        self.kv_cache_dtype = kv_cache_dtype
        if kv_cache_dtype is not None:
            self.geometry = dict(self.geometry, dtype_bytes=1, kv_dtype=KV_DTYPE_NAMES[kv_cache_dtype])

    def __enter__(self) -> "Fleet":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        while self.processes:
            process = self.processes.pop()
            process.stop()
            self.stopped.append(process)
        while self.shm_dirs:   # after the processes: a pd-connector removes its own files when it stops
            shutil.rmtree(self.shm_dirs.pop(), ignore_errors=True)

    def stop(self, endpoint: Endpoint) -> None:
        endpoint.process.stop()
        self.processes.remove(endpoint.process)
        self.stopped.append(endpoint.process)

    def _start(self, name: str, cmd: list[str], env: dict[str, str] | None = None) -> Process:
        process = Process(f"{self.label}-{name}", cmd, env)
        self.processes.append(process)
        return process

    def vllm(self, name: str, kv_transfer_config: dict | None = None, num_blocks: int | None = None,
             env: dict[str, str] | None = None, max_num_seqs: int | None = None, wait: bool = True,
             tp: int = 1, python_paths: tuple[str, ...] = ()) -> Endpoint:
        """Starts a vLLM server (with `tp` > 1 its TP workers are processes of its own session); with wait=False
        the caller waits (`ready`), so several start at once. `python_paths` go on its PYTHONPATH (a connector
        module of a bench's own)."""
        port = free_port()
        cmd = [vllm_python(), "-m", "vllm.entrypoints.openai.api_server", "--model", str(self.model),
               "--served-model-name", "tiny", "--dtype", self.geometry["vllm_dtype"], "--enforce-eager", "--host", "127.0.0.1", "--port", str(port),
               "--max-model-len", str(MAX_MODEL_LEN), "--disable-uvicorn-access-log"]
        if num_blocks is not None:
            if (num_blocks - 1) * BLOCK_TOKENS < MAX_MODEL_LEN:
                raise ValueError(f"{num_blocks} KV blocks cannot hold a {MAX_MODEL_LEN}-token sequence")
            cmd += ["--num-gpu-blocks-override", str(num_blocks)]
        cmd += ["--kv-cache-memory-bytes", str(VLLM_KV_BYTES)]
        if max_num_seqs is not None:
            cmd += ["--max-num-seqs", str(max_num_seqs)]
        if self.kv_cache_dtype is not None:
            cmd += ["--kv-cache-dtype", self.kv_cache_dtype]
        if tp > 1:
            cmd += ["--tensor-parallel-size", str(tp), "--distributed-executor-backend", "mp"]
        if kv_transfer_config is not None:
            cmd += ["--kv-transfer-config", json.dumps(kv_transfer_config)]
        # One OpenMP thread, not bound: vLLM's default binds every instance's threads to all cores, and several
        # instances (P, D, the reference) spinning on the same 2 cores decode at a fraction of a token per second.
        # An instance without the plugin gets the AMX tile registers from amx_site's sitecustomize; the plugin's
        # worker asks for them itself (pd_connector_vllm.cpu_tiles: vLLM's CPU attention dies without them).
        plugin = (kv_transfer_config or {}).get("kv_connector_module_path") == PLUGIN_MODULE
        paths = [str(REPO / "integrations/vllm"), *python_paths, *([] if plugin else [str(AMX_SITE)]),
                 os.environ.get("PYTHONPATH")]
        full_env = {"VLLM_LOGGING_LEVEL": "INFO",
                    "VLLM_CPU_OMP_THREADS_BIND": "nobind", "OMP_NUM_THREADS": "1",
                    "PYTHONPATH": os.pathsep.join(filter(None, paths))}
        full_env.update(env or {})
        process = self._start(name, cmd, full_env)
        endpoint = Endpoint(name, f"http://127.0.0.1:{port}", process)
        if wait:
            self.ready(endpoint)
        return endpoint

    @staticmethod
    def ready(*vllm_servers: Endpoint) -> None:
        deadline = time.monotonic() + VLLM_START_DEADLINE_S
        for server in vllm_servers:
            server.process.wait_ready(server.url + "/v1/models", max(1.0, deadline - time.monotonic()))

    def stock_vllm(self, name: str, lease_s: int, num_blocks: int | None = None, **kw) -> Endpoint:
        """vLLM with its own NixlConnector (each instance its own side-channel port)."""
        config = {"kv_connector": "NixlConnector", "kv_role": "kv_both", "kv_buffer_device": "cpu",
                  "kv_connector_extra_config": {"kv_lease_duration": lease_s}}
        env = {"VLLM_NIXL_SIDE_CHANNEL_PORT": str(free_port()), "VLLM_NIXL_SIDE_CHANNEL_HOST": "127.0.0.1"}
        return self.vllm(name, config, num_blocks, env, **kw)

    def plugin_vllm(self, name: str, pd: Endpoint, failure_policy: str = "fail", num_blocks: int | None = None,
                    plugin_settings: dict | None = None, **kw) -> Endpoint:
        """vLLM with the pd-connector plugin, talking to the pd-connector service `pd` beside it; `plugin_settings`
        go into kv_connector_extra_config beside pd_url (e.g. pd_log_timings)."""
        config = {"kv_connector": PLUGIN_CLASS, "kv_connector_module_path": PLUGIN_MODULE, "kv_role": "kv_both",
                  "kv_buffer_device": "cpu", "kv_load_failure_policy": failure_policy,
                  "kv_connector_extra_config": {"pd_url": pd.url, **(plugin_settings or {})}}
        return self.vllm(name, config, num_blocks, **kw)

    def pd_service(self, name: str, role: str, lease: str = "30s", num_blocks: int = 256,
                   peers: list[Endpoint] = (), extra: dict[str, str] | None = None, tp: int = 1) -> Endpoint:
        """The packaged pd-connector, geometry from the model: P `producer`, D `consumer` listing P (static); `tp`
        ranks, one per TP worker of the vLLM beside it."""
        jar = _path_from_env("PD_CONNECTOR_JAR", REPO / "target/quarkus-app/quarkus-run.jar", "the packaged jar")
        nixl_default = Path(os.environ.get("PD_NIXL_CACHE") or REPO / ".cache/nixl") / "nixl-cu12-1.5.1"
        nixl = _path_from_env("PD_NIXL_HOME", nixl_default, "NIXL")
        java = _path_from_env("JAVA_HOME", Path("/usr/lib/jvm/temurin-25-jdk-amd64"), "Java 25") / "bin/java"
        g = self.geometry
        port = free_port()
        work = logs_dir() / f"{self.label}-{name}"
        work.mkdir(parents=True, exist_ok=True)
        # pd.kv.shm-dir: a short directory of its own in a tmpfs, as in a pod; the engine socket in it must fit
        # in 107 bytes whatever the checkout's path
        shm = Path(tempfile.mkdtemp(prefix="pd-e2e-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
        self.shm_dirs.append(shm)
        props = {
            "quarkus.http.host": "127.0.0.1", "quarkus.http.port": str(port),
            "pd.role": role, "pd.engine-id": f"{self.label}-{name}",
            "pd.advertised-host": "127.0.0.1", "pd.advertised-port": str(port),
            "pd.transfer.engine": "nixl", "pd.nixl.home": str(nixl),
            "pd.model.layers": str(g["layers"]), "pd.model.kv-heads": str(g["kv_heads"]),
            "pd.model.head-dim": str(g["head_dim"]), "pd.model.block-tokens": str(g["block_tokens"]),
            "pd.model.dtype-bytes": str(g["dtype_bytes"]), "pd.kv.num-blocks": str(num_blocks), "pd.tp-size": str(tp),
            "pd.lease.duration": lease, "pd.lease.state-dir": str(work / "state"), "pd.kv.shm-dir": str(shm),
            # D's pull declines (409 with the reason); what the engine does then is vLLM's kv_load_failure_policy.
            "pd.consumer.failure-policy": "fail",
        }
        if "kv_dtype" in g:
            props["pd.model.kv-dtype"] = g["kv_dtype"]
        if g.get("attention", "mha") != "mha":
            props["pd.model.attention"] = g["attention"]
        if "kv_groups" in g:
            props["pd.model.kv-groups"] = g["kv_groups"]
        if peers:
            props["pd.registry.store"] = "static"
            props["pd.registry.static.peers"] = ",".join(p.url.removeprefix("http://") for p in peers)
        props.update(extra or {})
        cmd = [str(java), *JAVA_OPTS, "--enable-native-access=ALL-UNNAMED",
               *[f"-D{k}={v}" for k, v in props.items()], "-jar", str(jar)]
        process = self._start(name, cmd)
        url = f"http://127.0.0.1:{port}"
        process.wait_ready(url + "/q/health/ready", PD_START_DEADLINE_S)
        return Endpoint(name, url, process)

    def proxy(self, prefill: Endpoint, decode: Endpoint, name: str = "proxy") -> Endpoint:
        port = free_port()
        cmd = [vllm_python(), str(E2E_DIR / "pd_proxy.py"), "--port", str(port), "--prefill", prefill.url,
               "--decode", decode.url]
        process = self._start(name, cmd)
        url = f"http://127.0.0.1:{port}"
        process.wait_ready(url + "/healthcheck", 60)
        return Endpoint(name, url, process)


class Decoder:
    """D for one kv_load_failure_policy: its pd-connector (listing P, `tp` ranks) and its vLLM (TP `tp`), started
    without waiting for vLLM (the caller's `Fleet.ready`). `extra` adds pd-connector settings (fault injection)."""

    def __init__(self, fleet: Fleet, pd_p: Endpoint, policy: str, lease_s: float, tp: int = 1, name: str | None = None,
                 extra: dict[str, str] | None = None, plugin_settings: dict | None = None):
        name = name or policy
        self.pd_d = fleet.pd_service(f"pd-d-{name}", "consumer", lease=f"{lease_s}s", peers=[pd_p], tp=tp, extra=extra)
        wait_registry_lists(self.pd_d, pd_p.process.name)
        wait_peer_loaded(self.pd_d, pd_p.process.name)
        self.d = fleet.plugin_vllm(f"d-{name}", self.pd_d, failure_policy=policy, wait=False, tp=tp,
                                   plugin_settings=plugin_settings)

    def lease_declines(self) -> float:
        return metric(self.pd_d, "pd_pull_declines_total", {"reason": "lease_mismatch"})


def wait_registry_lists(d: Endpoint, engine_id: str, deadline_s: float = 30.0) -> None:
    """D's static registry fetches P every refresh; a pull before D lists P would be `unknown_peer`."""
    deadline = time.monotonic() + deadline_s
    body = b""
    while time.monotonic() < deadline:
        status, body = http_get(d.url + "/v1/registry")
        if status == 200 and engine_id.encode() in body:
            return
        time.sleep(0.5)
    raise RuntimeError(f"{d.name} does not list {engine_id} within {deadline_s} s: {body[:500]!r}")


def wait_peer_loaded(d: Endpoint, engine_id: str, deadline_s: float = 30.0) -> None:
    """D's pd-connector handshakes with a producer when its registry announces it, before any pull needs it;
    waits for that handshake (`pd_handshakes_total`), so the first pull finds P's metadata loaded."""
    deadline = time.monotonic() + deadline_s
    loaded = metric(d, "pd_handshakes_total")
    while loaded < 1:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{d.name} did not load the metadata of {engine_id}, which its registry lists, within "
                               f"{deadline_s} s (pd_handshakes_total {loaded})")
        time.sleep(0.2)
        loaded = metric(d, "pd_handshakes_total")


def refused_pull(d: Endpoint, request_id: str, prompt: list[int], params: dict) -> dict:
    """Asks D's pd-connector, once its registry lists P, to pull what P exported under `params`, where it must refuse
    the producer at the handshake: the problem document of its 422 `incompatible-peer` answer, D found holding
    nothing after it."""
    wait_registry_lists(d, params["remote_engine_id"])
    body = json.dumps({"request_id": request_id, "token_ids": prompt, "kv_transfer_params": params}).encode()
    req = urllib.request.Request(d.url + "/v1/consumer/pull", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            raise AssertionError(f"{d.name} answered {r.status} to a pull it must refuse: {r.read()[:300]!r}")
    except urllib.error.HTTPError as refused:
        code, problem = refused.code, json.loads(refused.read())
    assert code == 422 and problem["type"].endswith("incompatible-peer"), problem
    consumer = status(d)["consumer"]
    assert (consumer["pulls_live"], consumer["blocks_in_use"]) == (0, 0), consumer
    return problem


def status(endpoint: Endpoint) -> dict:
    """The service's `GET /v1/status`."""
    code, body = http_get(endpoint.url + "/v1/status")
    if code != 200:
        raise RuntimeError(f"{endpoint.name} /v1/status answered {code}: {body[:300]!r}")
    return json.loads(body)


def record(event: dict) -> None:
    """Appends one measured event (a fleet's first contact ...) to <logs>/e2e-events.jsonl, for the report."""
    with open(logs_dir() / "e2e-events.jsonl", "a") as f:
        f.write(json.dumps(event) + "\n")


def metric(endpoint: Endpoint, name: str, labels: dict[str, str] | None = None) -> float:
    """Sum of a Prometheus counter's samples at the service's /q/metrics whose labels include `labels`."""
    status, body = http_get(endpoint.url + "/q/metrics")
    if status != 200:
        raise RuntimeError(f"{endpoint.name} /q/metrics answered {status}")
    total = 0.0
    for line in body.decode().splitlines():
        if not line.startswith(name) or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        metric_name, _, label_text = head.partition("{")
        if metric_name != name:
            continue
        if all(f'{k}="{v}"' in label_text for k, v in (labels or {}).items()):
            total += float(value)
    return total
