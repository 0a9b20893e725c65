"""``python benchmarks/suite_time.py --per-test``, as a contributor runs it, on a test file of known costs
(so this checks the script, not the suite's figures): a test that sleeps is counted as waiting, one that
computes as CPU time in pytest, one that waits for a process that computes as CPU time in its children, and
a few milliseconds of work are counted as such, not rounded to clock ticks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Each cost is CPU time spent to a target (time.process_time), not wall time: the same on a busy machine.
COSTS = """
import subprocess, sys, time

import pytest

BURN = "import time\\nwhile time.process_time() < 0.3: pass"

def test_sleeps():
    time.sleep(0.4)

def test_computes():
    start = time.process_time()
    while time.process_time() - start < 0.3:
        pass

def test_waits_for_a_process_that_computes():
    subprocess.run([sys.executable, "-c", BURN], check=True)

@pytest.mark.parametrize("turn", range(5))
def test_computes_briefly(turn):
    start = time.process_time()
    while time.process_time() - start < 0.003:
        pass
"""


def test_per_test_costs_tell_waiting_from_computing_in_pytest_and_in_its_children(tmp_path):
    (tmp_path / "test_costs.py").write_text(COSTS)
    figures = tmp_path / "reports" / "suite.json"
    command = [
        sys.executable,
        "benchmarks/suite_time.py",
        "--tiers",
        "full",
        "--paths",
        str(tmp_path / "test_costs.py"),
    ]
    done = subprocess.run(
        [*command, "--per-test", "--json", str(figures)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (run,) = json.loads(figures.read_text())["runs"]
    assert run["counts"]["passed"] == 8 and run["per_test"]["tests"] == 8
    lines = (tmp_path / "reports" / "suite-full-tests.jsonl").read_text().splitlines()
    cost = {json.loads(line)["test"].rsplit("::", 1)[1]: json.loads(line) for line in lines}
    briefly = [f"test_computes_briefly[{turn}]" for turn in range(5)]
    assert set(cost) == {"test_sleeps", "test_computes", "test_waits_for_a_process_that_computes", *briefly}
    sleeps, computes, waits = cost["test_sleeps"], cost["test_computes"], cost["test_waits_for_a_process_that_computes"]
    assert sleeps["wall_s"] >= 0.4 and sleeps["own_cpu_s"] < 0.2 and sleeps["children_cpu_s"] < 0.1, sleeps
    assert computes["own_cpu_s"] >= 0.3 and computes["children_cpu_s"] < 0.1, computes
    assert waits["children_cpu_s"] >= 0.3 and waits["own_cpu_s"] < 0.2, waits
    # Counted to the microsecond, not in 10 ms clock ticks (which read 3 ms of work as 0 about 70 % of the time).
    assert all(0.003 <= cost[name]["own_cpu_s"] < 0.1 for name in briefly), [cost[name] for name in briefly]
    (most_waiting, *_) = run["per_test"]["most_waiting_tests"]
    assert most_waiting["name"].endswith("::test_sleeps") and most_waiting["waiting_s"] >= 0.2, most_waiting
    assert "slowest tests:" in done.stdout and "s waiting  " in done.stdout
