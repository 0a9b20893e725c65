"""Where the suite's time goes, test by test (``python benchmarks/suite_time.py --per-test``).

A pytest plugin (``-p benchmarks.per_test_cost``, writing to the file ``$HARNESS_PER_TEST_COST`` names) that
appends one JSON line per test: its wall time, the CPU time of pytest's own process meanwhile (engines run in
process count here, their threads included) and that of the processes it started and waited for (workers,
``harness`` commands, pytest runs). What is left of the wall time is waiting: a time limit running out, a
sleep, a poll. A process that outlives its test is counted where it is reaped (the canary's child of pytest's
own process lives for the whole run). ``summary`` reads the lines back for ``suite_time.py``.
"""

from __future__ import annotations

import json
import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ENV = "HARNESS_PER_TEST_COST"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    before, began = _cpu_seconds(), time.perf_counter()
    yield
    after, wall = _cpu_seconds(), time.perf_counter() - began
    own, children = after[0] - before[0], after[1] - before[1]
    line = {"test": item.nodeid, "wall_s": round(wall, 3), "own_cpu_s": round(own, 3)}
    line["children_cpu_s"] = round(children, 3)
    with open(os.environ[ENV], "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def _cpu_seconds() -> tuple[float, float]:
    """CPU time (user + system) of this process and of its reaped children. ``getrusage`` counts to the
    microsecond; ``os.times`` counts clock ticks (10 ms), which reads 0.3 s of work as 0.29 and a short test's as 0."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@dataclass(frozen=True)
class Cost:
    """One test's line, or a file's sum of them."""

    name: str
    wall_s: float
    own_cpu_s: float
    children_cpu_s: float

    @property
    def waiting_s(self) -> float:
        """Wall time with neither pytest nor a reaped child on a CPU (never below zero: two busy cores)."""
        return max(0.0, self.wall_s - self.own_cpu_s - self.children_cpu_s)

    def row(self) -> str:
        return (
            f"{self.wall_s:7.1f} s wall {self.own_cpu_s:7.1f} s in pytest {self.children_cpu_s:7.1f} s in children "
            f"{self.waiting_s:6.1f} s waiting  {self.name}"
        )


def read(path: Path) -> list[Cost]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [Cost(line["test"], line["wall_s"], line["own_cpu_s"], line["children_cpu_s"]) for line in lines]


def by_file(costs: list[Cost]) -> list[Cost]:
    files: dict[str, list[float]] = {}
    for cost in costs:
        sums = files.setdefault(cost.name.split("::", 1)[0], [0.0, 0.0, 0.0])
        sums[0] += cost.wall_s
        sums[1] += cost.own_cpu_s
        sums[2] += cost.children_cpu_s
    return [Cost(name, *sums) for name, sums in files.items()]


def summary(costs: list[Cost], top: int = 15) -> dict:
    """Totals and the costliest tests and files, by wall time and by waiting."""

    def listed(items: list[Cost], key) -> list[dict]:
        ranked = sorted(items, key=key, reverse=True)[:top]
        return [{**cost.__dict__, "waiting_s": round(cost.waiting_s, 3)} for cost in ranked]

    files = by_file(costs)
    return {
        "tests": len(costs),
        "wall_s": round(sum(c.wall_s for c in costs), 1),
        "own_cpu_s": round(sum(c.own_cpu_s for c in costs), 1),
        "children_cpu_s": round(sum(c.children_cpu_s for c in costs), 1),
        "waiting_s": round(sum(c.waiting_s for c in costs), 1),
        "slowest_tests": listed(costs, lambda c: c.wall_s),
        "most_waiting_tests": listed(costs, lambda c: c.waiting_s),
        "slowest_files": listed(files, lambda c: c.wall_s),
    }
