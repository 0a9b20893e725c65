"""The machine-speed canary's readings come from one child process per process that takes them (issue #41):
the run's calibration check and every launch edge of a sweep are served by one ``python -m
harness.measure.canary_child``, where each reading used to start (and pay for) a fresh Python with numpy.
A child that died is replaced at the next reading, and the edges' own wall time is in the record's time
split (``canary_s``). No wall-clock figure is asserted."""

from __future__ import annotations

import subprocess

import pytest

from harness.cli.app import main
from harness.measure import canary, canary_child, machine_state
from harness.records import store
from tests.tiny_scenario import tiny


@pytest.fixture
def fresh_child():
    canary_child.stop()  # this test's own child, counted from its start
    yield
    canary_child.stop()


def test_one_child_serves_every_reading_and_a_dead_one_is_replaced(fresh_child):
    first = canary.time_readings(2)
    pid = canary_child._child.process.pid
    assert len(first) == 2 and all(value > 0 for value in first)
    assert canary.time_workload() > 0 and canary_child._child.process.pid == pid  # the same child
    canary_child._child.process.kill()
    canary_child._child.process.wait()
    assert canary.time_workload() > 0 and canary_child._child.process.pid != pid  # started again


def test_a_run_starts_one_canary_process_for_its_check_and_every_edge(
    tmp_path, monkeypatch, fresh_child, fake_adapters
):
    """``harness run`` of a point's two launches in this process: the calibration (or its check) and the four
    edges are five requests to one child; before, each was a process of its own."""
    started: list[list[str]] = []
    real = subprocess.Popen

    def counted(args, *rest, **kwargs):
        if any("harness.measure.canary" in str(arg) for arg in args):
            started.append(list(args))
        return real(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", counted)
    monkeypatch.setattr(machine_state, "noisy", lambda state: None)
    path = tmp_path / "scenario.yaml"
    path.write_text(tiny(measurement={"launches": 2}))
    results = tmp_path / "results"
    argv = ["run", str(path), "--results", str(results), "--isolation", "none", "--no-progress", "--no-energy"]
    assert main(argv) == 0
    (record,) = [record for _, record in store.iter_records([results])]
    assert len(record.samples.launches) == 2 and all(e.canary is not None for e in record.samples.launches)
    assert len(started) == 1, started
    assert record.time_split.canary_s > 0  # the edges' wall, no longer inside "other"
