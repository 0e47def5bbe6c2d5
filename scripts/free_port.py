#!/usr/bin/env python3
"""A port for a process a test or a CI script starts, chosen below the kernel's ephemeral range (as the Java
tests' testing/FreePort does). A port from that range (what binding port 0 hands out) can be taken between the
check and the process's own bind by any outgoing connection or NIXL/ZMQ listener on the host; below the range only
an explicit bind can take it.

    python3 scripts/free_port.py          # prints one port
    from free_port import free_port       # (with scripts/ on sys.path)
"""
import random
import socket

TRIES = 200
# Every port this process handed out: a child may not have bound its port yet when the next is picked (vLLM binds
# its NIXL side channel minutes after it starts), so a free-looking port can already be promised to someone.
_handed_out: set[int] = set()


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except OSError:
        return 32768  # Linux's default
    if low < 2048:
        raise RuntimeError(f"unexpected ephemeral port range starting at {low}")
    return low


def free_port() -> int:
    """A port nothing listens on now and this process never handed out before, in [low / 2, low) where low starts
    the ephemeral range."""
    low = _ephemeral_low()
    for _ in range(TRIES):
        port = random.randrange(low // 2, low)
        if port in _handed_out:
            continue  # promised to a process that may not listen yet: draw again
        with socket.socket() as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue  # someone listens there: draw again
            _handed_out.add(port)
            return port
    raise RuntimeError(f"no free port in [{low // 2}, {low}) after {TRIES} tries")


if __name__ == "__main__":
    print(free_port())
