"""The canary's calibration is taken once per machine and reused by later runs (issue #41), through
``harness run`` (in process, fake engine) with the canary's child-process readings injected: a second run
reuses it after the best of three readings agrees (its record says so, and when it was taken); another machine's, a stale,
a corrupt or an edited file is not reused; ``--recalibrate`` forces a fresh one. No wall-clock figure."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from harness.cli.app import main
from harness.measure import calibration_store, canary, machine_state
from harness.measure.calibration_store import path as stored_path
from harness.records import store
from tests.tiny_scenario import tiny


class Machine:
    """The canary's readings: ``calibration`` for each calibration (several readings), ``check`` for the
    run-start check's (``CHECK_READINGS`` of them; default: ``reading`` each), ``reading`` for a single one
    (every launch edge); counts the calibrations, the checks and the single readings."""

    def __init__(self, calibration: float = 0.1, reading: float = 0.1, check: tuple[float, ...] = ()):
        self.calibration, self.reading, self.calibrated, self.singles, self.checks = calibration, reading, 0, 0, 0
        self.check = check or (reading,) * calibration_store.CHECK_READINGS
        self.started = False

    def __call__(self, count: int) -> list[float]:
        first, self.started = not self.started, True
        if count == calibration_store.CHECK_READINGS:
            self.checks += 1
            return list(self.check)
        if count == 1:
            self.singles += 1
            return [self.check[0] if first else self.reading]  # a run's first reading is its check's first
        self.calibrated += 1
        return [self.calibration] * count


@pytest.fixture
def harness_run(tmp_path, monkeypatch, capsys, fake_adapters):
    """``harness run`` of a one-launch tiny scenario on ``machine``: (exit code, the record's calibration,
    stderr)."""
    monkeypatch.setattr(machine_state, "noisy", lambda state: None)
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(tiny(measurement={"launches": 1}))

    def run(machine: Machine, *extra: str):
        monkeypatch.setattr(canary, "_in_child", machine)
        results = tmp_path / "results"
        argv = ["run", str(scenario), "--results", str(results), "--isolation", "none", "--no-progress"]
        code = main([*argv, "--no-energy", *extra])
        (record,) = [r for _, r in store.iter_records([results])]
        return code, record.environment["canary"], capsys.readouterr().err

    return run


def canary_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("canary:")]


def rewrite(where, edit) -> None:
    """Change the stored file through ``edit`` (on its JSON), keeping its digest valid: a file another
    machine (or an older run) wrote, not an edited one."""
    stored = calibration_store.Stored.model_validate_json(where.read_text())
    data = stored.model_dump()
    edit(data)
    key = calibration_store.MachineKey(**data["key"])
    calibration = stored.calibration.model_validate(data["calibration"])
    data["digest"] = calibration_store.Stored.digest_of(key, calibration)
    where.write_text(json.dumps(data))


def test_a_second_run_reuses_the_stored_calibration_and_says_when_it_was_taken(harness_run, calibration_file):
    machine = Machine()
    code, first, err = harness_run(machine)
    assert code == 0 and machine.calibrated == 1 and not canary_lines(err), err
    assert first["reused"] is False and first["taken_at"] and calibration_file.exists()
    singles = machine.singles
    code, second, err = harness_run(machine)
    assert code == 0 and machine.calibrated == 1, err  # not taken again
    assert machine.checks == 1 and machine.singles == singles + 2  # the run-start check, the launch's two edges
    assert second["reused"] is True and second["taken_at"] == first["taken_at"] and second["check_s"] == 0.1
    assert second["seconds"] == first["seconds"] and not canary_lines(err), err


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda d: d["key"].update(cpu_model="Another CPU"), id="another-cpu-model"),
        pytest.param(lambda d: d["key"].update(cores=d["key"]["cores"] + 64), id="another-core-count"),
        pytest.param(lambda d: d["key"].update(canary_code="0" * 16), id="another-canary"),
        pytest.param(
            lambda d: d["calibration"].update(
                taken_at=(datetime.now(timezone.utc) - timedelta(hours=25)).isoformat(timespec="seconds")
            ),
            id="too-old",
        ),
    ],
)
def test_a_calibration_of_another_machine_or_too_old_is_not_reused(harness_run, calibration_file, edit):
    machine = Machine()
    harness_run(machine)
    rewrite(calibration_file, edit)
    code, again, err = harness_run(machine)
    assert code == 0 and machine.calibrated == 2 and again["reused"] is False, err
    assert calibration_store.load(calibration_file)[0] is not None  # replaced by this machine's


@pytest.mark.parametrize(
    "damage, why",
    [
        pytest.param(lambda text: text[: len(text) // 2], "not a calibration file", id="truncated"),
        pytest.param(lambda text: "\x00\xff garbage", "not a calibration file", id="garbage"),
        pytest.param(lambda text: b"\xff\xfe not UTF-8", "not a calibration file", id="binary"),
        pytest.param(lambda text: text.replace('"seconds": 0.1', '"seconds": 0.05'), "edited", id="edited"),
        pytest.param(lambda text: text.replace('"seconds": 0.1', '"seconds": "fast"'), "not a", id="wrong-type"),
    ],
)
def test_a_corrupt_or_edited_file_is_ignored_with_one_line_naming_it(harness_run, calibration_file, damage, why):
    machine = Machine()
    harness_run(machine)
    damaged = damage(calibration_file.read_text())
    calibration_file.write_bytes(damaged if isinstance(damaged, bytes) else damaged.encode())
    code, again, err = harness_run(machine)
    assert code == 0 and "Traceback" not in err, err
    (line,) = canary_lines(err)
    assert line.startswith(f"canary: ignored the stored calibration {calibration_file}: {why}"), line
    assert line.endswith("calibrating afresh") and machine.calibrated == 2 and again["reused"] is False
    code, third, err = harness_run(machine)  # the fresh one was stored in its place
    assert third["reused"] is True and not canary_lines(err), err


def test_a_check_that_disagrees_recalibrates_and_says_so_in_one_line(harness_run):
    harness_run(Machine(calibration=0.1, reading=0.1))
    slower = Machine(calibration=0.2, reading=0.2)  # a reading twice the stored calibration
    code, again, err = harness_run(slower)
    (line,) = canary_lines(err)
    assert line.startswith("canary: the best of 3 readings at the run's start took 0.2000 s"), line
    assert "2.00x the stored calibration's 0.1000 s" in line and line.endswith("calibrated afresh"), line
    assert slower.calibrated == 1 and again["reused"] is False and again["seconds"] == 0.2
    code, third, err = harness_run(slower)  # the new calibration is the stored one now
    assert third["reused"] is True and third["seconds"] == 0.2 and slower.calibrated == 1


def test_one_or_two_slow_readings_among_three_keep_the_stored_calibration(harness_run):
    harness_run(Machine(calibration=0.1, reading=0.1))
    for check in [(0.3, 0.1, 0.1), (0.3, 0.1, 0.25)]:  # a busy neighbour slowed one or two of them down
        machine = Machine(calibration=0.1, reading=0.1, check=check)
        code, again, err = harness_run(machine)
        assert machine.checks == 1 and machine.calibrated == 0 and not canary_lines(err), err
        assert again["reused"] is True and again["check_s"] == 0.1  # the best of the three


def test_recalibrate_forces_a_fresh_calibration(harness_run):
    machine = Machine()
    harness_run(machine)
    code, again, err = harness_run(machine, "--recalibrate")
    assert code == 0 and machine.calibrated == 2 and again["reused"] is False and not canary_lines(err), err


def test_a_disturbed_calibration_is_never_stored(harness_run, calibration_file):
    readings = iter([[0.1, 0.1, 0.5, 0.1, 0.3]] * canary.CALIBRATION_ATTEMPTS)  # a busy machine throughout

    def busy(count: int) -> list[float]:
        return [0.1] if count == 1 else next(readings)

    code, calibration, err = harness_run(busy)
    assert calibration["disturbed"] and not calibration_file.exists(), err


def test_the_calibration_is_kept_in_the_cache_dir_one_file_per_machine(tmp_path):
    where = stored_path(tmp_path)
    assert where.parent == tmp_path / "canary" and calibration_store.machine_key().digest() in where.name
