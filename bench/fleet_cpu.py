"""CPU seconds used by the processes of a fleet (every process in the sessions the fleet started), from /proc."""
import os

_TICKS = os.sysconf("SC_CLK_TCK")


def session_cpu_seconds(session_ids) -> float:
    """user + system seconds of every live process whose session is one of `session_ids` (children included)."""
    wanted = set(session_ids)
    total = 0.0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        # after the command: state ppid pgrp session ... utime(12) stime(13) (0-based from the state field)
        if int(fields[3]) in wanted:
            total += (int(fields[11]) + int(fields[12])) / _TICKS
    return total


def fleet_sessions(fleet) -> list[int]:
    return [p.popen.pid for p in fleet.processes]
