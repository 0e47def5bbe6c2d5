"""Schemathesis hooks for scripts/fuzz-api.sh (loaded through SCHEMATHESIS_HOOKS).

- before_call: keeps every request on loopback. A pull's kv_transfer_params may name a peer
  (remote_host); the service would contact it, so the fuzzer's remote_host is always 127.0.0.1.
  It also records what the service holds (GET /v1/status) just before the call.
- no_server_error: not_a_server_error, except the documented capacity answer: a 503 no-free-blocks or
  queue-full with Retry-After (the fuzzer's reservations hold blocks until they time out, so the pool
  does fill up; that answer is the service working as documented, not a fault).
- errors_are_problems: every 4xx and 5xx is a problem document (application/problem+json) with a
  reason and a detail sentence (the document lists no error answers, so schemathesis's own content
  type and schema checks do not look at them).
- no_state_change_on_4xx: a 4xx answer must leave nothing held that was not held before the call
  (blocks, slots, leases, pulls; compared with the snapshot taken just before the call, one worker).
- nothing_held_after_run: after the run, once the short leases, reservations and retention of the
  fuzz configuration have expired, /v1/status shows nothing held.
"""
import json
import os
import time
import urllib.request

import schemathesis

BASE = os.environ["PD_FUZZ_BASE"]  # http://127.0.0.1:<port>
SETTLE_SECONDS = float(os.environ.get("PD_FUZZ_SETTLE_SECONDS", "20"))
HELD = {"producer": ("blocks_in_use", "slots_in_use", "leases_live"), "consumer": ("blocks_in_use", "pulls_live")}
_before = {}
_compared = set()  # 4xx answers compared with the snapshot before them (a set: shrinking replays cases)


def held():
    with urllib.request.urlopen(BASE + "/v1/status", timeout=10) as r:
        status = json.load(r)
    return {f"{side}.{key}": status.get(side, {}).get(key, 0) for side, keys in HELD.items() for key in keys}


def _loopback(body):
    if isinstance(body, dict):
        params = body.get("kv_transfer_params")
        if isinstance(params, dict) and "remote_host" in params:
            params["remote_host"] = "127.0.0.1"


@schemathesis.hook
def before_call(context, case, kwargs):
    _loopback(case.body)
    _before["held"] = held()


CAPACITY = {"no-free-blocks", "queue-full"}


@schemathesis.check
def no_server_error(ctx, response, case):
    """No 5xx, apart from a 503 out-of-capacity problem with Retry-After."""
    if response.status_code < 500:
        return None
    if response.status_code == 503 and "retry-after" in response.headers:  # lowercased names
        try:
            reason = json.loads(response.content).get("reason")
        except (ValueError, AttributeError):
            reason = None
        if reason in CAPACITY:
            return None
    raise AssertionError(f"server error {response.status_code}: {response.content[:500]!r}")


@schemathesis.check
def errors_are_problems(ctx, response, case):
    """An error answer is problem JSON with a reason token and a detail sentence."""
    if response.status_code < 400:
        return None
    content_type = ",".join(response.headers.get("content-type", []))
    if "application/problem+json" not in content_type:
        raise AssertionError(f"{response.status_code} answer is not a problem document: content type "
                             f"{content_type or 'none'}, body {response.content[:200]!r}")
    try:
        problem = json.loads(response.content)
    except ValueError:
        raise AssertionError(f"{response.status_code} problem is not JSON: {response.content[:200]!r}") from None
    if not isinstance(problem, dict) or not problem.get("reason") or not problem.get("detail"):
        raise AssertionError(f"{response.status_code} problem without reason or detail: {response.content[:300]!r}")
    if problem["detail"].startswith("HTTP "):
        raise AssertionError(f"{response.status_code} problem whose detail says nothing: {problem['detail']!r}")
    return None


@schemathesis.check
def no_state_change_on_4xx(ctx, response, case):
    """A 4xx answer changes nothing: no more blocks, slots, leases or pulls held than before the call."""
    if not 400 <= response.status_code < 500 or "held" not in _before:
        return None
    before, after = _before["held"], held()
    _compared.add((case.operation.label, response.status_code, response.request.url, response.request.body))
    grew = {k: (before[k], after[k]) for k in after if after[k] > before.get(k, 0)}
    if grew:
        raise AssertionError(f"{response.status_code} answer but /v1/status grew (before, after): {grew}")
    return None


@schemathesis.check
class nothing_held_after_run:
    """After the run and the fuzz configuration's short lease, reservation and retention, nothing is held."""

    def after_response(self, ctx, response, case):
        return None

    def after_run(self, ctx):
        deadline = time.monotonic() + SETTLE_SECONDS
        now = held()
        while any(now.values()) and time.monotonic() < deadline:
            time.sleep(0.5)
            now = held()
        left = {k: v for k, v in now.items() if v}
        if not _compared:
            raise AssertionError("no 4xx answer was compared with /v1/status: the before_call hook did not run")
        print(f"fuzz-api: {len(_compared)} distinct 4xx answers left /v1/status unchanged")
        if left:
            raise AssertionError(f"{SETTLE_SECONDS:.0f} s after the run /v1/status still holds {left}")
