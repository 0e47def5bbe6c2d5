"""The plugin's timing lines (``pd_log_timings``) as a reader parses them: one per P request on the scheduler
thread, one per P copy, one per D load. They live beside the code that writes the lines, so the benches that
read a vLLM log and the tests that check the lines hold one format.
"""

from __future__ import annotations

import re

SCHED_LINE = re.compile(r"P request \S+: (params handed out, commit queued|no params), sched ([0-9.]+) ms")
# the same line's split by hook: its share of the grant, the allocation, the plan, the finish
SCHED_HOOKS = ("share", "alloc", "plan", "finish")
SCHED_SPLIT = re.compile(r"sched [0-9.]+ ms \(share ([0-9.]+), alloc ([0-9.]+), plan ([0-9.]+), finish ([0-9.]+)\)")
SAVE_LINE = re.compile(r"P saved \S+: .*, copy ([0-9.]+) ms")
# how long wait_for_save held the engine step for the step's copies: the copy itself when it runs in the step,
# what was left of it when it runs beside the forward (pd_save_overlap)
SAVE_WAIT = re.compile(r"P saved \S+: .*, the step waited ([0-9.]+) ms for its ([0-9]+) copies")
# the release is a time when the load waited for it, "after the load" when the blocks' epochs vouched for the copy
LOAD_LINE = re.compile(r"D loaded \S+: .*?; pull ([0-9.]+) ms \(pd-connector's own ([0-9.-]+) ms[^)]*\), "
                       r"copy ([0-9.]+) ms, release (?:([0-9.]+) ms|after the load)")


def load_times(match: re.Match) -> tuple[float, float, float, float]:
    """A LOAD_LINE match as (pull, pd-connector's own pull_ms, copy, release) in ms; a release after the load
    took none of the load's time: 0."""
    pull, pd_pull, copy, release = match.groups()
    return float(pull), float(pd_pull), float(copy), float(release) if release is not None else 0.0
