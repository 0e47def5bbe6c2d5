"""A stand-in for D's pd-connector's engine socket: accepts on a Unix socket, reads each frame, records it and
answers with what the test scripted for its op.

``answers[op]`` is a reply object (``{"status": ..., "body": ...}``, sent as one frame), a list of them (one
per request, the last repeated), a callable taking the request and giving one, or one of:
``CLOSE`` (close the connection without a reply), ``SILENCE`` (never answer) or ``Raw(bytes)`` (these bytes
as they are, framing included; ``Raw(bytes, close=True)`` then closes the connection). A hello is answered ``{"protocol": 1}`` unless scripted.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from dataclasses import dataclass

CLOSE = "close"
SILENCE = "silence"


@dataclass
class Raw:
    data: bytes
    close: bool = False   # end the connection once sent


def frame(obj) -> bytes:
    payload = json.dumps(obj).encode()
    return len(payload).to_bytes(4, "big") + payload


class Connection:
    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.requests: list[dict] = []
        self.frames: list[bytes] = []   # each request frame as it came, length prefix included
        self.closed_by_client = threading.Event()


class FakeEngineSocket:

    def __init__(self, path, answers=None):
        self.path = str(path)
        self.answers = dict(answers or {})
        self.connections: list[Connection] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(self.path)
        self._server.listen(16)
        self._server.settimeout(0.05)   # the accept loop looks at _stop this often
        self._threads = [threading.Thread(target=self._accept, name="fake-engine-socket", daemon=True)]
        self._threads[0].start()

    def requests(self, op=None) -> list[dict]:
        with self._lock:
            return [r for c in self.connections for r in c.requests if op is None or r.get("op") == op]

    def wait_for(self, condition, seconds=5.0, what="the condition"):
        deadline = time.monotonic() + seconds
        while not condition():
            if time.monotonic() >= deadline:
                raise AssertionError(f"{what} did not come within {seconds} s")
            time.sleep(0.01)

    def stop(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        self._threads[0].join(5)   # no connection comes after this
        with self._lock:
            conns, threads = list(self.connections), list(self._threads)
        for c in conns:
            try:
                c.sock.shutdown(socket.SHUT_RDWR)   # wakes its thread out of recv
            except OSError:
                pass
        for t in threads:
            t.join(5)
        assert not [t for t in threads if t.is_alive()], "a fake engine socket thread outlived stop()"
        self._server.close()
        for c in conns:
            c.sock.close()
        os.unlink(self.path)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                sock, _ = self._server.accept()
            except TimeoutError:
                continue
            sock.settimeout(None)
            conn = Connection(sock)
            t = threading.Thread(target=self._serve, args=(conn,), name="fake-engine-conn", daemon=True)
            with self._lock:
                self.connections.append(conn)
                self._threads.append(t)
            t.start()

    def _serve(self, conn: Connection) -> None:
        try:
            while not self._stop.is_set():
                head = _read(conn.sock, 4)
                if head is None:
                    conn.closed_by_client.set()
                    return
                payload = _read(conn.sock, int.from_bytes(head, "big"))
                if payload is None:
                    conn.closed_by_client.set()
                    return
                request = json.loads(payload.decode("utf-8"))
                with self._lock:
                    conn.frames.append(head + payload)
                    conn.requests.append(request)
                reply = self._answer(request)
                if reply == CLOSE:
                    conn.sock.shutdown(socket.SHUT_RDWR)
                    return
                if reply == SILENCE:
                    self._stop.wait(30)
                    return
                conn.sock.sendall(reply.data if isinstance(reply, Raw) else frame(reply))
                if isinstance(reply, Raw) and reply.close:
                    conn.sock.shutdown(socket.SHUT_RDWR)
                    return
        except OSError:
            return   # the client went away mid-frame, or stop() shut the connection

    def _answer(self, request):
        op = request.get("op")
        if op not in self.answers:
            return {"status": 200, "body": {"protocol": 1}} if op == "hello" else \
                {"status": 400, "body": {"status": 400, "reason": "unknown-op", "detail": f"no answer for {op}"}}
        a = self.answers[op]
        if isinstance(a, list):
            a = a.pop(0) if len(a) > 1 else a[0]
        return a(request) if callable(a) else a


def _read(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)
