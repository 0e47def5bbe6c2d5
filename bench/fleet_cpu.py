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


def thread_cpu_seconds(session_ids) -> dict[str, float]:
    """user + system seconds per thread kind of every live process whose session is one of `session_ids`, keyed
    `process/thread` by their OS names (`main` for a process's first thread), e.g. `VLLM::EngineCor/pd-control`,
    `java/consumer-plugin`. Threads of one kind in one process kind are summed."""
    wanted = set(session_ids)
    totals: dict[str, float] = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                head, fields = f.read().rsplit(")", 1)
            if int(fields.split()[3]) not in wanted:
                continue
            process = head.split("(", 1)[1]
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue  # gone meanwhile
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    thead, tfields = f.read().rsplit(")", 1)
            except OSError:
                continue
            kind = "main" if tid == pid else thead.split("(", 1)[1]
            values = tfields.split()
            key = f"{process}/{kind}"
            totals[key] = totals.get(key, 0.0) + (int(values[11]) + int(values[12])) / _TICKS
    return totals


def thread_cpu_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """CPU seconds per thread kind between two `thread_cpu_seconds` readings (threads that ended meanwhile are
    lost, so a kind's figure is a floor)."""
    return {k: after[k] - before.get(k, 0.0) for k in after if after[k] - before.get(k, 0.0) > 0}
