"""kv_transfer_params and request ids as pd-connector and vLLM exchange them."""

from __future__ import annotations

import hashlib
import re
from typing import Any

# pd-connector's request ids: 1-256 characters, no ':' ',' control characters or surrogates, not "HB"
# (they travel inside NIXL notifications).
_PD_ID = re.compile(r"(?!HB\Z)[^:,\x00-\x1f\x7f-\x9f\ud800-\udfff]{1,256}\Z")

# The fields without which a decoder cannot pull (pd-connector's params always carry them).
_PULL_FIELDS = ("remote_engine_id", "remote_request_id", "remote_host", "remote_port", "remote_num_tokens")


def pd_request_id(vllm_request_id: str) -> str:
    """vLLM's request id if pd-connector accepts it as it is, else a stable digest of it."""
    if _PD_ID.match(vllm_request_id) and vllm_request_id.strip():
        return vllm_request_id
    return "vllm-" + hashlib.sha256(vllm_request_id.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def wants_remote_decode(params: dict[str, Any] | None) -> bool:
    """P side: the router asks this instance to prefill for a remote decoder."""
    return bool(params) and params.get("do_remote_decode") is True


def wants_remote_prefill(params: dict[str, Any] | None) -> bool:
    """D side: the router forwards P's params; the KV is to be pulled, not computed."""
    return bool(params) and params.get("do_remote_prefill") is True and all(f in params for f in _PULL_FIELDS)


def params_for_pull(params: dict[str, Any]) -> dict[str, Any]:
    """P's params exactly as they came, minus the keys vLLM's scheduler adds for its own use."""
    return {k: v for k, v in params.items() if not k.startswith("_")}
