"""A canary calibration taken while the machine was busy is detected and said. Before, a busy start made a
calibration every launch then beat, and each launch read "0.06x its calibration" with no word that the
calibration itself was the disturbed reading. Through ``harness run`` (in process, fake engine), with the
canary's child-process readings injected: no wall-clock figure is asserted."""

from __future__ import annotations

import pytest

from harness.cli.app import main
from harness.measure import canary, machine_state
from harness.records import store
from tests.tiny_scenario import tiny


class Machine:
    """The canary's readings, per call of ``canary._in_child``: ``calibrations`` in turn for calibrations
    (several readings), ``launch`` for every launch edge (one reading)."""

    def __init__(self, calibrations: list[list[float]], launch: float):
        self.calibrations, self.launch, self.calibrated = list(calibrations), launch, 0

    def __call__(self, count: int) -> list[float]:
        if count == 1:
            return [self.launch]
        self.calibrated += 1
        return self.calibrations.pop(0) if len(self.calibrations) > 1 else self.calibrations[0]


def run(tmp_path, monkeypatch, machine: Machine, capsys):
    monkeypatch.setattr(canary, "_in_child", machine)
    monkeypatch.setattr(machine_state, "noisy", lambda state: None)  # this test's machine is the injected one
    path = tmp_path / "scenario.yaml"
    path.write_text(tiny(measurement={"launches": 2, "canary_tolerance": 0.15}))
    results = tmp_path / "results"
    code = main(["run", str(path), "--results", str(results), "--isolation", "none", "--no-progress", "--no-energy"])
    (record,) = [r for _, r in store.iter_records([results])]
    return code, record, capsys.readouterr().err


def test_a_calibration_every_launch_beats_is_taken_again_and_said(tmp_path, monkeypatch, capsys, fake_adapters):
    busy_start = Machine([[1.0] * 5, [0.06] * 5], launch=0.06)  # steady readings: only the launches show it
    code, record, err = run(tmp_path, monkeypatch, busy_start, capsys)
    assert code == 0
    lines = [line for line in err.splitlines() if line.startswith("canary:")]
    assert len(lines) == 1 and "the calibration was disturbed" in lines[0], err
    assert "calibrated again: 1.0000 s -> 0.0600 s" in lines[0]
    first, second = record.samples.launches
    assert first.excluded and "the calibration was disturbed, not this launch" in first.excluded  # marked
    assert second.excluded is None and second.canary.ratio == pytest.approx(1.0)  # against the new calibration
    assert busy_start.calibrated == 2


def test_a_calibration_whose_readings_spread_is_taken_again(tmp_path, monkeypatch, capsys, fake_adapters):
    machine = Machine([[0.1, 0.1, 0.5, 0.1, 0.3], [0.1] * 5], launch=0.1)
    code, record, err = run(tmp_path, monkeypatch, machine, capsys)
    assert code == 0 and machine.calibrated == 2
    assert "canary: the calibration's readings spread more than 25%" in err and "calibrated 2 times" in err, err
    assert "still disturbed" not in err
    assert record.environment["canary"]["attempts"] == 2 and record.environment["canary"]["disturbed"] is None
    assert all(launch.excluded is None for launch in record.samples.launches)


def test_a_calibration_that_stays_disturbed_is_said_and_recorded(tmp_path, monkeypatch, capsys, fake_adapters):
    machine = Machine([[0.1, 0.1, 0.5, 0.1, 0.3]], launch=0.1)
    code, record, err = run(tmp_path, monkeypatch, machine, capsys)
    assert machine.calibrated == canary.CALIBRATION_ATTEMPTS
    assert "still disturbed: its readings spread 400%" in err, err
    assert "the machine was busy while the run calibrated" in record.environment["canary"]["disturbed"]


def test_a_quiet_calibration_is_taken_once_and_says_nothing(tmp_path, monkeypatch, capsys, fake_adapters):
    machine = Machine([[0.1, 0.104, 0.1, 0.102, 0.1]], launch=0.1)
    code, record, err = run(tmp_path, monkeypatch, machine, capsys)
    assert code == 0 and machine.calibrated == 1 and "canary:" not in err
    assert record.environment["canary"]["attempts"] == 1 and record.environment["canary"]["disturbed"] is None
