"""The one exception of every call to pd-connector, whichever channel carried it (``client``: HTTP,
``engine_socket``: D's engine socket), and the reading of pd-connector's problem documents they share."""

from __future__ import annotations

from typing import Any


class PdError(Exception):
    """A call to pd-connector that did not succeed.

    ``status`` is the HTTP status (0 when no answer came: refused, reset, timed out) and ``reason``
    pd-connector's reason token (``lease_mismatch``, ``no-free-blocks``, ...) or a local one
    (``unreachable``, ``timeout``, ``bad-answer``, ``frame-too-large``).
    """

    def __init__(self, status: int, reason: str, detail: str):
        super().__init__(f"pd-connector {status or 'no answer'} {reason}: {detail}")
        self.status = status
        self.reason = reason
        self.detail = detail


def problem_of(doc: Any) -> tuple[str, str] | None:
    """(reason, detail) of pd-connector's problem document; None when ``doc`` is not one."""
    if isinstance(doc, dict) and isinstance(doc.get("reason"), str):
        return doc["reason"], str(doc.get("detail", ""))
    return None
