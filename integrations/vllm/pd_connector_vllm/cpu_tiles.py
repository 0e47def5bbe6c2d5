"""AMX tile registers for vLLM's CPU attention, asked of Linux once per process.

Linux lets a process use the AMX tile registers only after it asks (``arch_prctl(ARCH_REQ_XCOMP_PERM,
XFEATURE_XTILEDATA)``); an AMX instruction before that kills the process with SIGILL. vLLM 0.32's CPU attention
runs AMX instructions on bf16 caches wherever the CPU has AMX, without asking; oneDNN asks the first time one of
its bf16 matmuls takes its AMX path, which a prefill of many tokens does. So a worker whose first forward is a
one-token step over KV it did not compute (a decoder's first step after a KV load, with any KV connector) dies in
that step, and the instance with it. The plugin's worker asks at start-up; a host without AMX says no, harmlessly.
"""
from __future__ import annotations

import ctypes
import logging
import platform

log = logging.getLogger("vllm.pd_connector")

_SYS_ARCH_PRCTL = 158  # x86-64
_ARCH_GET_XCOMP_PERM = 0x1022
_ARCH_REQ_XCOMP_PERM = 0x1023
_XFEATURE_XTILEDATA = 18
_LIBC = ctypes.CDLL(None, use_errno=True)


def request_amx_tiles() -> bool:
    """Asks Linux for the AMX tile registers for this process; True when granted (or already), False where the
    CPU, the kernel or the platform has none to give. Never raises: a host without AMX needs nothing."""
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        return False
    if _LIBC.syscall(_SYS_ARCH_PRCTL, _ARCH_REQ_XCOMP_PERM, _XFEATURE_XTILEDATA) != 0:
        log.debug("no AMX tile registers for this process (errno %d)", ctypes.get_errno())
        return False
    return amx_tiles_permitted()


def amx_tiles_permitted() -> bool:
    """Whether this process may use the AMX tile registers (Linux on x86-64; False elsewhere)."""
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        return False
    mask = ctypes.c_uint64(0)
    if _LIBC.syscall(_SYS_ARCH_PRCTL, _ARCH_GET_XCOMP_PERM, ctypes.byref(mask)) != 0:
        return False
    return bool(mask.value & (1 << _XFEATURE_XTILEDATA))
