"""Acceptance: a launch timed while other processes keep every core busy says so — in the record on disk and
in the run table `harness run` prints. The busy machine is real: busy loops beside the run (no timing
ratio is asserted)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from harness import cli
from harness.records import store
from tests.tiny_scenario import tiny

pytest.importorskip("torch")

SCENARIO = tiny(
    generation={"max_new_tokens": 8},
    measurement={"warmup_rounds": 1, "min_rounds": 3, "min_time_s": 1.5, "threads": 1},
    sweep={"adapter": ["hf"], "device": ["cpu"]},
)


@pytest.fixture
def busy_cores():
    spin = "import time\nend = time.time() + 120\nwhile time.time() < end: pass"
    loops = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(2 * (os.cpu_count() or 1))]
    time.sleep(0.5)
    assert all(loop.poll() is None for loop in loops), "the busy loops did not start"  # else the test proves nothing
    yield
    for loop in loops:
        loop.kill()
        loop.wait()


def test_a_launch_on_a_busy_machine_is_marked_noisy(tmp_path, capsys, busy_cores):
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(SCENARIO.lstrip())
    argv = [
        "run",
        str(scenario),
        "--results",
        str(tmp_path / "results"),
        "--no-progress",
    ]  # workers: the loops are not theirs
    assert cli.main([*argv, "--no-energy"]) == 0
    (record,) = [r for _, r in store.iter_records([tmp_path / "results"])]
    noisy = record.samples.launches[0].machine.get("noisy")
    assert noisy and "other processes used" in noisy, record.samples.launches[0].machine
    assert "noisy machine: other processes used" in capsys.readouterr().out
