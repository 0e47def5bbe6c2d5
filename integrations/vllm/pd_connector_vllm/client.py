"""Client for the pd-connector service beside a vLLM instance: HTTP, and once
:meth:`PdClient.use_engine_socket` was called, pd-connector's engine socket for P's batch and D's pulls and
releases (one by one, or a step's in one request each).

Every call has a timeout. One keep-alive connection per thread and channel (the scheduler thread, the worker
thread and each load thread use their own), so no connection is shared across threads.
Errors are one exception type carrying the HTTP status and pd-connector's machine-readable reason.
"""

from __future__ import annotations

import http.client
import json
import logging
import threading
import urllib.parse
from typing import Any, Callable

from .engine_socket import EngineSocket
from .errors import PdError, problem_of

__all__ = ["PdClient", "PdError"]


log = logging.getLogger("vllm.pd_connector")


class PdClient:
    """The calls the plugin makes, each with its own deadline in seconds."""

    def __init__(self, base_url: str, token: str | None = None, timeout_s: float = 10.0,
                 pull_timeout_s: float = 150.0, vocab_size: int | None = None):
        url = urllib.parse.urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"pd_url must be http(s)://host:port, got {base_url!r}")
        self._scheme = url.scheme
        self._host = url.hostname
        self._port = url.port or (443 if url.scheme == "https" else 80)
        self._prefix = url.path.rstrip("/")
        self._token = token
        self.timeout_s = timeout_s
        self.pull_timeout_s = pull_timeout_s
        # The model's vocabulary, named in every pull: it bounds the prompt's token ids on D's pd-connector, whose
        # own bound (the reference engine's 151,936) is below a gpt-oss or Gemma 3 vocabulary.
        self.vocab_size = vocab_size
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[http.client.HTTPConnection] = []
        self._engine: EngineSocket | None = None
        self.base_url = base_url

    # ---- P side -------------------------------------------------------------------------------

    def reserve(self, request_id: str, num_tokens: int) -> dict[str, Any]:
        body = {"request_id": request_id, "num_tokens": num_tokens,
                "kv_transfer_params": {"do_remote_decode": True}}
        return self._json("POST", "/v1/producer/requests", body, self.timeout_s, expect=(201,))

    def finish(self, request_id: str) -> dict[str, Any]:
        return self._json("POST", f"/v1/producer/requests/{_quote(request_id)}/finish", None,
                          self.timeout_s, expect=(200,))

    def abort(self, request_id: str) -> None:
        self._call("DELETE", f"/v1/producer/requests/{_quote(request_id)}", None, self.timeout_s,
                   expect=(204,))

    def batch(self, body: dict[str, Any]) -> dict[str, Any]:
        """One engine step's commits, aborts and returned grants, and a grant (``control.PdControl``). Over P's
        engine socket once :meth:`use_engine_socket` was called, else ``POST /v1/producer/batch``."""
        if self._engine is not None:
            return self._engine.request({"op": "batch", "body": body}, self.timeout_s, expect=200)
        return self._json("POST", "/v1/producer/batch", body, self.timeout_s, expect=(200,))

    # ---- D side -------------------------------------------------------------------------------

    def pull(self, request_id: str, token_ids: list[int], params: dict[str, Any], decode_rank: int) -> dict[str, Any]:
        """D's pull of P's KV for the vLLM worker of TP rank ``decode_rank``: every worker of the instance asks
        with its rank and joins the one pull (one set of READs, one lease check over every P rank). The reply
        says where D's pd-connector holds the KV (``block_ids`` in each rank's ``ranks[].kv_file``) until every
        rank's :meth:`release`. Never asks for ``kv_checksum`` or ``matches_reference``.

        Over D's engine socket once :meth:`use_engine_socket` was called, else ``POST /v1/consumer/pull``."""
        body = self._pull_body(request_id, token_ids, params, decode_rank)
        if self._engine is not None:
            return self._engine.request({"op": "pull", "body": body}, self.pull_timeout_s, expect=200)
        return self._json("POST", "/v1/consumer/pull", body, self.pull_timeout_s, expect=(200,))

    def _pull_body(self, request_id: str, token_ids: list[int], params: dict[str, Any],
                   decode_rank: int) -> dict[str, Any]:
        body = {"request_id": request_id, "token_ids": list(token_ids), "kv_transfer_params": params,
                "decode_rank": int(decode_rank)}
        if self.vocab_size is not None:
            body["vocab_size"] = int(self.vocab_size)
        return body

    def release(self, request_id: str, decode_rank: int) -> None:
        """This rank is done with the pull (an undecided pull is aborted for every rank); D frees its blocks once
        every rank released. 404 if the pull is gone already.

        Over D's engine socket once :meth:`use_engine_socket` was called, else
        ``DELETE /v1/consumer/requests/{id}?decode_rank=``."""
        if self._engine is not None:
            self._engine.request({"op": "release", "request_id": request_id, "decode_rank": int(decode_rank)},
                                 self.timeout_s, expect=204)
            return
        self._call("DELETE", f"/v1/consumer/requests/{_quote(request_id)}?decode_rank={int(decode_rank)}", None,
                   self.timeout_s, expect=(204,))

    def batches_pulls(self) -> bool:
        """Whether :meth:`pulls` and :meth:`releases` carry a step's loads in one request each: over an engine
        socket whose pd-connector reads op pulls (its hello names ``pull-batch``). Asks on the calling thread's
        connection (opening it within ``timeout_s``); False over HTTP."""
        return self._engine is not None and self._engine.batches_pulls(self.timeout_s)

    def pulls(self, items: list[tuple[str, list[int], dict[str, Any], int]],
              on_reply: Callable[[int, PdError | None, dict[str, Any] | None], None]) -> None:
        """:meth:`pull` of each (request id, token ids, params, decode rank) in one request over the engine
        socket: ``on_reply(i, None, reply)`` or ``on_reply(i, error, None)`` once for each, as D decides each,
        within ``pull_timeout_s`` for them all (EngineSocket.pulls). Only after :meth:`batches_pulls` said so."""
        if self._engine is None:
            raise RuntimeError("pulls in one request go over the engine socket only")
        bodies = [self._pull_body(r, t, p, k) for r, t, p, k in items]
        self._engine.pulls(bodies, self.pull_timeout_s, on_reply)

    def releases(self, items: list[tuple[str, int]]) -> list[PdError | None]:
        """:meth:`release` of each (request id, decode rank) in one request over the engine socket: for each,
        None once released, else its PdError (404: the pull is gone); PdError when no answer came."""
        if self._engine is None:
            raise RuntimeError("releases in one request go over the engine socket only")
        return self._engine.releases(items, self.timeout_s)

    def use_engine_socket(self, path: str) -> None:
        """From now on :meth:`batch`, :meth:`pull` and :meth:`release` go over the engine socket at ``path``
        (what ``GET /v1/kv-layout`` names ``engine_socket``); every other call stays HTTP. Connects and says hello
        now, within ``timeout_s``: PdError when D's pd-connector does not take the connection, and then the
        client stays as it was."""
        engine = EngineSocket(path, self._token)
        engine.probe(self.timeout_s)
        previous, self._engine = self._engine, engine
        if previous is not None:
            previous.close()

    @property
    def engine_socket(self) -> str | None:
        """The engine socket's path while batch, pull and release go over it, else None (HTTP)."""
        return self._engine.path if self._engine is not None else None

    # ---- both ---------------------------------------------------------------------------------

    def kv_layout(self) -> dict[str, Any]:
        return self._json("GET", "/v1/kv-layout", None, self.timeout_s, expect=(200,))

    def close(self) -> None:
        """Closes every connection any thread opened, HTTP and engine socket."""
        with self._lock:
            conns, self._connections = self._connections, []
        for c in conns:
            c.close()
        if self._engine is not None:
            self._engine.close()

    # ---- plumbing -----------------------------------------------------------------------------

    def _json(self, method: str, path: str, body: Any, timeout_s: float,
              expect: tuple[int, ...]) -> dict[str, Any]:
        raw = self._call(method, path, body, timeout_s, expect)
        try:
            return json.loads(raw)
        except ValueError as e:
            raise PdError(200, "bad-answer", f"{method} {path}: not JSON ({e})") from None

    def _call(self, method: str, path: str, body: Any, timeout_s: float,
              expect: tuple[int, ...]) -> bytearray:
        headers = {"Accept": "application/json, application/octet-stream, application/problem+json"}
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        # A kept-alive connection the server closed fails at once: try once more on a new one.
        for attempt in (0, 1):
            conn, reused = self._connection(timeout_s)
            try:
                conn.request(method, self._prefix + path, body=payload, headers=headers)
                resp = conn.getresponse()
                data = _read_body(resp)
                status = resp.status
                if resp.will_close:
                    self._drop(conn)
                break
            except TimeoutError:
                self._drop(conn)
                raise PdError(0, "timeout", f"{method} {path}: no answer within {timeout_s} s") from None
            except (ConnectionResetError, BrokenPipeError) as e:
                self._drop(conn)
                if reused and attempt == 0:
                    continue
                raise PdError(0, "unreachable", f"{method} {path}: {e}") from None
            except (OSError, http.client.HTTPException) as e:
                self._drop(conn)
                raise PdError(0, "unreachable", f"{method} {path}: {e}") from None
        if status in expect:
            return data
        reason, detail = _problem(data)
        raise PdError(status, reason, f"{method} {path}: {detail}")

    def _connection(self, timeout_s: float) -> tuple[http.client.HTTPConnection, bool]:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.timeout = timeout_s
            if conn.sock is not None:
                conn.sock.settimeout(timeout_s)
            return conn, True
        cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=timeout_s)
        self._local.conn = conn
        with self._lock:
            self._connections.append(conn)
        return conn, False

    def _drop(self, conn: http.client.HTTPConnection) -> None:
        conn.close()
        if getattr(self._local, "conn", None) is conn:
            self._local.conn = None
        with self._lock:
            if conn in self._connections:
                self._connections.remove(conn)


def _read_body(resp: http.client.HTTPResponse) -> bytearray:
    """The whole body, read straight into one writable buffer when its length is known."""
    if resp.length is None:
        return bytearray(resp.read())
    buf = bytearray(resp.length)
    view = memoryview(buf)
    got = 0
    while got < len(buf):
        n = resp.readinto(view[got:])
        if not n:
            raise http.client.IncompleteRead(bytes(buf[:got]), len(buf) - got)
        got += n
    resp.read()  # at the end of the body: marks the response done, so the connection takes the next request
    return buf


def _quote(request_id: str) -> str:
    return urllib.parse.quote(request_id, safe="")


def _problem(data: bytes) -> tuple[str, str]:
    """pd-connector's problem document -> (reason, detail); anything else -> ('http-error', text)."""
    try:
        found = problem_of(json.loads(data))
        if found is not None:
            return found
    except ValueError:
        pass
    return "http-error", data[:300].decode("utf-8", "replace")


ENGINE_CHANNELS = ("auto", "socket", "http")  # kv_connector_extra_config.pd_engine_channel


def choose_engine_channel(client: PdClient, layout: dict[str, Any], channel: str, what: str) -> None:
    """Puts ``client``'s engine-socket calls (``what``) on the socket kv-layout names, unless ``channel`` is http.
    Never HTTP in its stead when the socket is named but cannot be reached: that would hide a broken deployment
    behind slower calls (RuntimeError naming the path and the setting)."""
    setting = f"kv_connector_extra_config.pd_engine_channel={channel}"
    path = layout.get("engine_socket")
    if channel == "http" or (channel == "auto" and not path):
        log.info("pd-connector plugin: %s over HTTP (%s; kv-layout names %s)", what, setting,
                 f"the engine socket {path}" if path else "no engine socket")
        return
    if not path:
        raise RuntimeError(f"{setting}, but pd-connector's kv-layout names no engine socket (pd-connector too "
                           "old, or pd.kv.engine-socket=false): turn it on, or set pd_engine_channel to "
                           "auto or http")
    try:
        client.use_engine_socket(str(path))
    except PdError as e:
        raise RuntimeError(f"the engine socket {path}, named by pd-connector's kv-layout, cannot be reached "
                           f"({setting}): {e}. Is this process on pd-connector's host, with access to the "
                           "socket (mode 0660)? pd_engine_channel=http keeps these calls on HTTP") from e
    log.info("pd-connector plugin: %s over the engine socket %s (%s)", what, path, setting)
