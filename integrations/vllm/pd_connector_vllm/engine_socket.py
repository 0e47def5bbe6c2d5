"""The engine socket (protocol 1): the plugin's per-step batch to P's pd-connector and its pull and release to
D's, over a Unix domain socket, where loopback HTTP costs milliseconds a call.

A frame, either way, is a 4-byte big-endian length N (1 to 4 MiB) then N bytes of UTF-8 JSON holding one
object. A request is ``{"op": ..., ...}``, its reply ``{"status": <HTTP's meaning>, "body": {...}}`` (no body
for 204; a problem document for status >= 400). The server answers one request at a time per connection, so
each thread (the load threads pull concurrently) has its own connection, opened with a hello that carries the
engine token. Nothing is retried: a pull is not idempotent. A connection that may be left mid-frame (a timeout,
a reset, a frame refused) is dropped, and the thread's next call opens a new one.

The hello's reply names the ``features`` the server reads beyond protocol 1. With ``token-ids-le32`` a pull's
``token_ids`` go as ``token_ids_le32``, base64 of little-endian 32-bit words: a 4,096-token list took about
0.3 ms to write as JSON, the packed string a third of that, and pd-connector reads it for a fraction of the
list's cost. Each connection packs by its own hello: a pd-connector restarted at another version is asked
what it reads.
"""

from __future__ import annotations

import array
import base64
import json
import select
import socket
import sys
import threading
import time
from typing import Any

from .errors import PdError, problem_of

PROTOCOL = 1
MAX_FRAME = 4 * 1024 * 1024
PACKED_TOKEN_IDS = "token-ids-le32"
_WORD = next(code for code in "IL" if array.array(code).itemsize == 4)  # an unsigned 32-bit array typecode


class BadFrame(Exception):
    """A reply that is no frame of the protocol."""


class EngineSocket:
    """Connections, one per thread, to the engine socket at ``path``; all closed by :meth:`close`."""

    def __init__(self, path: str, token: str | None):
        self.path = path
        self._token = token
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[socket.socket] = []

    def probe(self, timeout_s: float) -> None:
        """Opens the calling thread's connection (connect and hello) within ``timeout_s``; PdError if refused."""
        self._connection(time.monotonic() + timeout_s, timeout_s)

    def request(self, frame: dict[str, Any], timeout_s: float, expect: int) -> dict[str, Any] | None:
        """Sends ``frame`` and returns its reply's body (None for 204) when the status is ``expect``; PdError
        otherwise, or when no reply came within ``timeout_s`` (connecting included)."""
        what = f"{frame['op']} over {self.path}"
        deadline = time.monotonic() + timeout_s
        sock = self._connection(deadline, timeout_s)
        if frame["op"] == "pull" and PACKED_TOKEN_IDS in self._local.features:
            frame = _packed(frame)
        payload = _encode(frame, what)
        status, body = self._roundtrip(sock, payload, deadline, timeout_s, what)
        if status == expect:
            if status == 204:
                return None
            if isinstance(body, dict):
                return body
            self._drop(sock)
            raise PdError(status, "bad-answer", f"{what}: status {status} without an object as its body")
        if status >= 400:
            # The server keeps the connection after a problem, except the ones that end it (a refused hello,
            # a malformed request): those close it, and the next call notices before sending (_stale).
            reason, detail = problem_of(body) or ("http-error", _excerpt(body))
            raise PdError(status, reason, f"{what}: {detail}")
        self._drop(sock)
        raise PdError(status, "bad-answer", f"{what}: status {status}, expected {expect}")

    def close(self) -> None:
        """Closes every connection any thread opened; a later call opens a new one."""
        with self._lock:
            socks, self._connections = self._connections, []
        for s in socks:
            s.close()

    # ---- plumbing -----------------------------------------------------------------------------

    def _connection(self, deadline: float, timeout_s: float) -> socket.socket:
        sock = getattr(self._local, "sock", None)
        if sock is not None:
            if sock.fileno() >= 0 and not _stale(sock):
                return sock
            self._drop(sock)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._local.sock = sock
        with self._lock:
            self._connections.append(sock)
        try:
            sock.settimeout(_remaining(deadline))
            sock.connect(self.path)
        except TimeoutError:
            self._drop(sock)
            raise PdError(0, "timeout", f"connect to {self.path}: not connected within {timeout_s} s") from None
        except OSError as e:  # no such file, refused (nobody listens), permission
            self._drop(sock)
            raise PdError(0, "unreachable", f"connect to {self.path}: {e}") from None
        what = f"hello over {self.path}"
        status, body = self._roundtrip(sock, _encode({"op": "hello", "token": self._token}, what), deadline,
                                       timeout_s, what)
        if status != 200:
            self._drop(sock)
            reason, detail = problem_of(body) or ("bad-answer", f"status {status}, expected 200")
            raise PdError(status, reason, f"{what}: {detail}")
        if not isinstance(body, dict) or body.get("protocol") != PROTOCOL:
            self._drop(sock)
            raise PdError(status, "bad-answer", f"{what}: the server speaks protocol "
                          f"{body.get('protocol') if isinstance(body, dict) else None}, the plugin {PROTOCOL}")
        features = body.get("features")
        self._local.features = frozenset(features) if isinstance(features, list) else frozenset()
        return sock

    def _roundtrip(self, sock: socket.socket, payload: bytes, deadline: float, timeout_s: float,
                   what: str) -> tuple[int, Any]:
        """One request frame out, its reply frame in: (status, body). A failure drops the connection."""
        try:
            sock.settimeout(_remaining(deadline))
            sock.sendall(payload)  # its timeout bounds the whole send
            doc = _receive(sock, deadline)
        except TimeoutError:
            self._drop(sock)
            raise PdError(0, "timeout", f"{what}: no answer within {timeout_s} s") from None
        except BadFrame as e:
            self._drop(sock)
            raise PdError(0, "bad-answer", f"{what}: {e}") from None
        except OSError as e:  # reset, broken pipe, closed by the server
            self._drop(sock)
            raise PdError(0, "unreachable", f"{what}: {e}") from None
        status = doc.get("status") if isinstance(doc, dict) else None
        if not isinstance(status, int) or isinstance(status, bool):
            self._drop(sock)
            raise PdError(0, "bad-answer", f"{what}: a reply without a status: {_excerpt(doc)}")
        return status, doc.get("body")

    def _drop(self, sock: socket.socket) -> None:
        sock.close()
        if getattr(self._local, "sock", None) is sock:
            self._local.sock = None
        with self._lock:
            if sock in self._connections:
                self._connections.remove(sock)


def _packed(frame: dict[str, Any]) -> dict[str, Any]:
    """The pull with its ``token_ids`` as ``token_ids_le32``; as it was without a list of unsigned 32-bit words
    (pd-connector then answers it as it answers such a list)."""
    body = dict(frame["body"])
    try:
        words = array.array(_WORD, body.pop("token_ids"))
    except (KeyError, OverflowError, TypeError):
        return frame
    if sys.byteorder == "big":
        words.byteswap()
    body["token_ids_le32"] = base64.b64encode(words.tobytes()).decode("ascii")
    return {**frame, "body": body}


def _encode(frame: dict[str, Any], what: str) -> bytes:
    payload = json.dumps(frame, separators=(",", ":")).encode()
    if len(payload) > MAX_FRAME:
        raise PdError(0, "frame-too-large", f"{what}: a request of {len(payload)} bytes, the engine socket takes "
                                            f"at most {MAX_FRAME}")
    return len(payload).to_bytes(4, "big") + payload


def _receive(sock: socket.socket, deadline: float) -> Any:
    head = bytearray(4)
    _receive_into(sock, memoryview(head), deadline)
    n = int.from_bytes(head, "big")
    if not 1 <= n <= MAX_FRAME:
        raise BadFrame(f"a frame of {n} bytes (1 to {MAX_FRAME} allowed)")
    buf = bytearray(n)
    _receive_into(sock, memoryview(buf), deadline)
    try:
        return json.loads(buf.decode("utf-8"))
    except ValueError as e:  # UnicodeDecodeError too
        raise BadFrame(f"a frame that is not UTF-8 JSON ({e})") from None


def _receive_into(sock: socket.socket, view: memoryview, deadline: float) -> None:
    got = 0
    while got < len(view):
        sock.settimeout(_remaining(deadline))
        n = sock.recv_into(view[got:])
        if n == 0:
            raise ConnectionResetError("pd-connector closed the connection" + (" mid-frame" if got else ""))
        got += n


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def _stale(sock: socket.socket) -> bool:
    """True when an idle connection can be read: the server closed it (it restarted, or ended the connection
    after a problem) or wrote out of turn. Caught before sending, a new connection replaces it and nothing is
    sent twice. poll, not select: a vLLM process may hold descriptors above select's 1024."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


def _excerpt(doc: Any) -> str:
    return json.dumps(doc)[:300]
