"""CPU seconds used by the processes of a fleet (every process in the sessions the fleet started), from /proc."""
import os

_TICKS = os.sysconf("SC_CLK_TCK")

# pd-connector step loops' thread names (the OS keeps 15 characters of them)
STEP_LOOPS = ("producer-", "consumer-")


def _stat(path: str) -> tuple[str, list[str]] | None:
    """A /proc stat file as (the command name, the fields after it), or None if the process or thread is gone.
    After the name: state ppid pgrp session ... utime(11) stime(12), counting from the state field."""
    try:
        with open(path) as f:
            head, rest = f.read().rsplit(")", 1)
    except OSError:
        return None
    return head.split("(", 1)[1], rest.split()


def _cpu_seconds(fields: list[str]) -> float:
    return (int(fields[11]) + int(fields[12])) / _TICKS


def session_cpu_seconds(session_ids) -> float:
    """user + system seconds of every live process whose session is one of `session_ids` (children included)."""
    wanted = set(session_ids)
    total = 0.0
    for pid in os.listdir("/proc"):
        stat = _stat(f"/proc/{pid}/stat") if pid.isdigit() else None
        if stat is not None and int(stat[1][3]) in wanted:
            total += _cpu_seconds(stat[1])
    return total


def fleet_sessions(fleet) -> list[int]:
    return [p.popen.pid for p in fleet.processes]


def _threads(pid) -> list[tuple[int, str, int, float]]:
    """Each live thread of process `pid` in order of creation, as (its id, its OS name, its place from 1 among the
    process's threads of that name, its user + system seconds). Raises OSError if the process is gone."""
    seen: dict[str, int] = {}
    threads = []
    for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
        thread = _stat(f"/proc/{pid}/task/{tid}/stat")
        if thread is not None:
            seen[thread[0]] = seen.get(thread[0], 0) + 1
            threads.append((int(tid), thread[0], seen[thread[0]], _cpu_seconds(thread[1])))
    return threads


def thread_cpu_seconds(session_ids) -> dict[str, float]:
    """user + system seconds per thread kind of every live process whose session is one of `session_ids`, keyed
    `process/thread` by their OS names (`main` for a process's first thread), e.g. `VLLM::EngineCor/pd-control`,
    `java/consumer-plugin`. Threads of one kind in one process kind are summed, but for pd-connector's step loops:
    NIXL's progress thread inherits the name of the loop that made the agent, so in each process the second thread
    of a loop's name is that loop's progress thread, keyed `name#2`."""
    wanted = set(session_ids)
    totals: dict[str, float] = {}
    for pid in os.listdir("/proc"):
        stat = _stat(f"/proc/{pid}/stat") if pid.isdigit() else None
        if stat is None or int(stat[1][3]) not in wanted:
            continue
        try:
            threads = _threads(pid)
        except OSError:
            continue  # gone meanwhile
        for tid, name, place, cpu in threads:
            if tid == int(pid):
                name = "main"
            elif name.startswith(STEP_LOOPS) and place > 1:
                name = f"{name}#{place}"
            key = f"{stat[0]}/{name}"
            totals[key] = totals.get(key, 0.0) + cpu
    return totals


def process_thread_cpu_seconds(pid: int, pools: tuple[str, ...] = ()) -> dict[str, float]:
    """user + system seconds of each thread of one process, keyed by its OS name. Threads that share a name are told
    apart by their order of creation (`name`, `name#2`, ...: NIXL's progress thread inherits the name of the JVM
    thread that made the agent), except those whose name starts with one of `pools` (thread pools whose members come
    and go), which are summed."""
    totals: dict[str, float] = {}
    for _, name, place, cpu in _threads(pid):
        if name.startswith(pools):
            totals[name] = totals.get(name, 0.0) + cpu
        else:
            totals[name if place == 1 else f"{name}#{place}"] = cpu
    return totals


def thread_cpu_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """CPU seconds per thread kind between two `thread_cpu_seconds` readings (threads that ended meanwhile are
    lost, so a kind's figure is a floor)."""
    return {k: after[k] - before.get(k, 0.0) for k in after if after[k] - before.get(k, 0.0) > 0}
