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

With ``pull-batch`` an engine step's pulls go as one request (op ``pulls``), each answered in a frame of its own
with its ``index`` as D decides it, and its releases as one (op ``releases``), answered in one frame
(:meth:`EngineSocket.pulls`, :meth:`EngineSocket.releases`).
"""

from __future__ import annotations

import array
import base64
import contextlib
import json
import select
import socket
import sys
import threading
import time
from typing import Any, Callable

from .errors import PdError, problem_of

PROTOCOL = 1
MAX_FRAME = 4 * 1024 * 1024
PACKED_TOKEN_IDS = "token-ids-le32"
PULL_BATCH = "pull-batch"
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
            frame = {**frame, "body": _packed(frame["body"])}
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

    def batches_pulls(self, timeout_s: float) -> bool:
        """Whether the calling thread's connection (opened within ``timeout_s`` if need be) said hello with the
        feature ``pull-batch``."""
        self._connection(time.monotonic() + timeout_s, timeout_s)
        return PULL_BATCH in self._local.features

    def pulls(self, bodies: list[dict[str, Any]], timeout_s: float,
              on_reply: Callable[[int, PdError | None, dict[str, Any] | None], None]) -> None:
        """The pulls of ``bodies`` (op pull's bodies) in one request: ``on_reply(i, None, reply)`` or
        ``on_reply(i, error, None)`` exactly once for each, on this thread, as D decides each (so a load can copy
        while later pulls are still under way); what has no reply within ``timeout_s`` gets a PdError of status 0.
        On a connection whose hello did not name ``pull-batch`` (a pd-connector restarted at an older version)
        they go one by one. ``on_reply`` must not raise: the rest of the replies would be left unread."""
        what = f"pulls over {self.path}"
        deadline = time.monotonic() + timeout_s
        try:
            sock = self._connection(deadline, timeout_s)
        except PdError as e:
            for i in range(len(bodies)):
                on_reply(i, e, None)
            return
        packs = PACKED_TOKEN_IDS in self._local.features
        if PULL_BATCH not in self._local.features:
            for i, body in enumerate(bodies):
                try:
                    on_reply(i, None, self.request({"op": "pull", "body": body}, _remaining_or_zero(deadline), 200))
                except PdError as e:
                    on_reply(i, e, None)
            return
        frame = {"op": "pulls", "pulls": [_packed(b) if packs else b for b in bodies]}
        pending = set(range(len(bodies)))
        try:
            self._send_pulls(sock, _encode(frame, what), deadline, timeout_s, what, pending, on_reply)
        except PdError as e:
            for i in sorted(pending):
                on_reply(i, e, None)

    def _send_pulls(self, sock: socket.socket, payload: bytes, deadline: float, timeout_s: float, what: str,
                    pending: set[int], on_reply) -> None:
        with self._failing_drops(sock, what, timeout_s):
            sock.settimeout(_remaining(deadline))
            sock.sendall(payload)
            while pending:
                doc = _receive(sock, deadline)
                status, index, body = _indexed(doc, pending)
                if index is None:  # the request refused whole, nothing pulled
                    reason, detail = problem_of(body) or ("http-error", _excerpt(body))
                    raise PdError(status, reason, f"{what}: {detail}")
                pending.discard(index)
                if status == 200 and isinstance(body, dict):
                    on_reply(index, None, body)
                else:
                    reason, detail = problem_of(body) or ("bad-answer", f"status {status}: {_excerpt(body)}")
                    on_reply(index, PdError(status, reason, f"pull over {self.path}: {detail}"), None)

    def releases(self, items: list[tuple[str, int]], timeout_s: float) -> list[PdError | None]:
        """The releases of ``items`` ((request id, decode rank)) in one request: for each, None once released,
        else its PdError (404: the pull is gone). PdError for the whole when there is no answer. On a connection
        whose hello did not name ``pull-batch`` (a pd-connector restarted at an older version) they go one by
        one, within ``timeout_s`` for them all."""
        deadline = time.monotonic() + timeout_s
        self._connection(deadline, timeout_s)
        if PULL_BATCH not in self._local.features:
            return [self._release_one(r, k, deadline) for r, k in items]
        frame = {"op": "releases", "releases": [{"request_id": r, "decode_rank": int(k)} for r, k in items]}
        body = self.request(frame, _remaining_or_zero(deadline), expect=200)
        results = body.get("results")
        if not isinstance(results, list) or len(results) != len(items):
            raise PdError(200, "bad-answer", f"releases over {self.path}: {len(items)} asked, answered "
                                             f"{_excerpt(results)}")
        out: list[PdError | None] = []
        for result in results:
            status = result.get("status") if isinstance(result, dict) else None
            if status == 204:
                out.append(None)
                continue
            problem = result.get("body") if isinstance(result, dict) else None
            reason, detail = problem_of(problem) or ("bad-answer", _excerpt(result))
            out.append(PdError(status if isinstance(status, int) else 0, reason, f"release over {self.path}: {detail}"))
        return out

    def _release_one(self, request_id: str, decode_rank: int, deadline: float) -> PdError | None:
        try:
            self.request({"op": "release", "request_id": request_id, "decode_rank": int(decode_rank)},
                         _remaining_or_zero(deadline), expect=204)
            return None
        except PdError as e:
            return e

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
        with self._failing_drops(sock, what, timeout_s):
            sock.settimeout(_remaining(deadline))
            sock.sendall(payload)  # its timeout bounds the whole send
            doc = _receive(sock, deadline)
        status = doc.get("status") if isinstance(doc, dict) else None
        if not isinstance(status, int) or isinstance(status, bool):
            self._drop(sock)
            raise PdError(0, "bad-answer", f"{what}: a reply without a status: {_excerpt(doc)}")
        return status, doc.get("body")

    @contextlib.contextmanager
    def _failing_drops(self, sock: socket.socket, what: str, timeout_s: float):
        """A timeout, a frame out of protocol or a broken connection (reset, broken pipe, closed by the server)
        becomes PdError of status 0, and the connection, which may be left mid-frame, is dropped."""
        try:
            yield
        except TimeoutError:
            self._drop(sock)
            raise PdError(0, "timeout", f"{what}: no answer within {timeout_s} s") from None
        except BadFrame as e:
            self._drop(sock)
            raise PdError(0, "bad-answer", f"{what}: {e}") from None
        except OSError as e:
            self._drop(sock)
            raise PdError(0, "unreachable", f"{what}: {e}") from None

    def _drop(self, sock: socket.socket) -> None:
        sock.close()
        if getattr(self._local, "sock", None) is sock:
            self._local.sock = None
        with self._lock:
            if sock in self._connections:
                self._connections.remove(sock)


def _packed(body: dict[str, Any]) -> dict[str, Any]:
    """The pull's body with its ``token_ids`` as ``token_ids_le32``; as it was without a list of unsigned 32-bit
    words (pd-connector then answers it as it answers such a list)."""
    packed = dict(body)
    try:
        words = array.array(_WORD, packed.pop("token_ids"))
    except (KeyError, OverflowError, TypeError):
        return body
    if sys.byteorder == "big":
        words.byteswap()
    packed["token_ids_le32"] = base64.b64encode(words.tobytes()).decode("ascii")
    return packed


def _indexed(doc: Any, pending: set[int]) -> tuple[int, int | None, Any]:
    """(status, index or None, body) of a reply frame of op pulls; BadFrame for an index not awaited."""
    status = doc.get("status") if isinstance(doc, dict) else None
    if not isinstance(status, int) or isinstance(status, bool):
        raise BadFrame(f"a reply without a status: {_excerpt(doc)}")
    index = doc.get("index")
    if index is not None and (not isinstance(index, int) or isinstance(index, bool) or index not in pending):
        raise BadFrame(f"a reply for index {index!r}, awaited {sorted(pending)}")
    return status, index, doc.get("body")


def _remaining_or_zero(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.001)


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
