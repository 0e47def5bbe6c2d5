"""A real pd-connector (the packaged jar) on 127.0.0.1 for the plugin's tests.

The jar is ``$PD_CONNECTOR_JAR`` or the repository's ``target/quarkus-app/quarkus-run.jar``; NIXL is
``$PD_NIXL_HOME`` or the repository's ``.cache/nixl/nixl-cu12-1.5.1``; Java is ``$JAVA_HOME`` (or
``$PD_JAVA_HOME``). A missing one fails the test with what to do, it is never skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def _required(path: Path, what: str) -> Path:
    if not path.exists():
        raise AssertionError(f"{what} not found at {path}: build the jar (./mvnw package -DskipTests) and "
                             "fetch NIXL (scripts/fetch-nixl.sh), or set PD_CONNECTOR_JAR / PD_NIXL_HOME / JAVA_HOME")
    return path


sys.path.insert(0, str(REPO / "scripts"))
from free_port import free_port  # noqa: E402  (below the ephemeral range, as the Java tests' FreePort)


class PdService:
    """Starts on enter, is ready (``/q/health/ready`` 200) within 90 s or fails; killed on exit."""

    def __init__(self, workdir: Path, name: str, settings: dict[str, str]):
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workdir / f"{name}.log"
        self.shm_dir = workdir / f"{name}-shm"   # pd.kv.shm-dir: P's and D's KV files
        jar = _required(Path(os.environ.get("PD_CONNECTOR_JAR", REPO / "target/quarkus-app/quarkus-run.jar")),
                        "the packaged pd-connector jar")
        nixl = _required(Path(os.environ.get("PD_NIXL_HOME", REPO / ".cache/nixl/nixl-cu12-1.5.1")), "NIXL")
        java_home = os.environ.get("PD_JAVA_HOME") or os.environ.get("JAVA_HOME") or "/usr/lib/jvm/temurin-25-jdk-amd64"
        java = _required(Path(java_home) / "bin" / "java", "Java 25")
        props = {"quarkus.http.port": str(self.port), "quarkus.http.host": "127.0.0.1", "pd.nixl.home": str(nixl),
                 "pd.engine-id": name, "pd.lease.state-dir": str(workdir / f"{name}-state"),
                 "pd.kv.shm-dir": str(self.shm_dir), "pd.advertised-port": str(self.port)}
        props.update(settings)
        self.cmd = [str(java), "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                    "--enable-native-access=ALL-UNNAMED", *[f"-D{k}={v}" for k, v in props.items()], "-jar", str(jar)]
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> "PdService":
        self._out = open(self.log, "w")
        self.process = subprocess.Popen(self.cmd, stdout=self._out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 90
        last = "no answer"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.__exit__(None, None, None)
                raise AssertionError(f"{self.name} exited with {self.process.returncode}; log:\n{self.tail()}")
            try:
                with urllib.request.urlopen(self.url + "/q/health/ready", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError as e:
                last = str(e)
            time.sleep(0.3)
        self.__exit__(None, None, None)
        raise AssertionError(f"{self.name} not ready in 90 s ({last}); log:\n{self.tail()}")

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._out.close()

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
