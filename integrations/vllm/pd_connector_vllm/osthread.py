"""The OS-level name of the plugin's own threads, so that `top -H`, `ps -L` and the benches' per-thread CPU tell
them from vLLM's (Python gives a thread's name to the OS only from 3.14)."""
from __future__ import annotations

import ctypes
import logging

log = logging.getLogger(__name__)

_PR_SET_NAME = 15
_LINUX_NAME_MAX = 15  # bytes, without the terminating NUL
_LIBC = ctypes.CDLL(None)  # the process's own symbols (libc's prctl among them): no library search, no subprocess


def name_current_thread(name: str) -> bool:
    """Names the calling thread `name` (cut to Linux's 15 bytes); False where the OS call is unavailable. A name
    is for people and tools only: nothing depends on it, so failing to set it never fails the caller."""
    try:
        return _LIBC.prctl(_PR_SET_NAME, name.encode()[:_LINUX_NAME_MAX], 0, 0, 0) == 0
    except (OSError, AttributeError) as e:
        log.debug("could not name thread %s: %s", name, e)
        return False
