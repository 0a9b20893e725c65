"""A point of several launches interrupted at any phase never reads as finished (issue 38): SIGTERM before its
first launch ends leaves no record; during a later launch, or after its last launch but before its record
is written, leaves a record marked ``incomplete``. The interrupt line counts what is on disk; ``report`` and
``gate`` refuse the partial record in one line naming it (exit 2); ``run --resume`` runs the point again and
completes it. Through ``harness run`` as a subprocess, on the fake engine; deadlines are upper bounds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.records import store
from tests import records as synthetic
from tests.lifecycle_fakes import SIGTERM_AT_LAUNCH, SIGTERM_BEFORE_WRITE, STATE_ENV
from tests.tiny_scenario import tiny

ROOT = Path(__file__).resolve().parents[2]
LAUNCH = "import sys; from tests.lifecycle_fakes import cli; sys.exit(cli(sys.argv[1:]))"
LAUNCHES = 3
POINT = "fake-sigterm-at-cpu-bf16"
SCENARIO = tiny(measurement={"launches": LAUNCHES}, sweep={"adapter": ["fake-sigterm-at"]})
INCOMPLETE = "(1 more recorded as incomplete)"

# phase: (environment, isolation, launches on disk after the signal: None = no record, the interrupt line's tail)
PHASES = {
    "during-the-first-launch": ({SIGTERM_AT_LAUNCH: "1"}, "none", None, ""),
    "during-a-later-launch": ({SIGTERM_AT_LAUNCH: "2"}, "none", 1, f" {INCOMPLETE}"),
    "during-a-later-launch-isolated": ({SIGTERM_AT_LAUNCH: "3"}, "point", 2, f" {INCOMPLETE}"),
    "after-the-last-launch-before-its-write": ({SIGTERM_BEFORE_WRITE: str(LAUNCHES)}, "none", 2, f" {INCOMPLETE}"),
}


def _harness(tmp_path: Path, *argv, env: dict | None = None) -> subprocess.CompletedProcess:
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    environ = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        **{STATE_ENV: str(state)},
        **(env or {}),
    )
    command = [sys.executable, "-c", LAUNCH, *map(str, argv)]
    return subprocess.run(command, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=300)


def _one_error_naming(done: subprocess.CompletedProcess, *needles: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and all(n in errors[0] for n in needles), done.stderr


@pytest.mark.parametrize("phase", list(PHASES))
def test_an_interrupted_multi_launch_point_never_reads_as_finished_and_resume_completes_it(
    phase, tmp_path, write_scenario, tiny_llama
):
    env, isolation, on_disk, tail = PHASES[phase]
    scenario = write_scenario(SCENARIO)
    out = tmp_path / "results"
    run = ["run", scenario, "--results", out, "--isolation", isolation, "--no-progress", "--no-energy"]

    interrupted = _harness(tmp_path, *run, env=env)
    assert interrupted.returncode == 128 + signal.SIGTERM, interrupted.stderr
    assert interrupted.stderr.strip().splitlines()[-1] == (
        f"interrupted by SIGTERM after 0 of 1 points{tail}; records in {out}/; resume with --resume"
    )
    files = list(out.glob("*/*.json"))
    if on_disk is None:
        assert not files  # the point's first launch never ended: nothing of it is stored
    else:
        (path,) = files
        stored = json.loads(path.read_text())
        assert stored["status"] == "incomplete" and len(stored["samples"]["launches"]) == on_disk
        needles = (str(path), "status: incomplete", "--resume")
        _one_error_naming(_harness(tmp_path, "report", out, "-o", tmp_path / "report"), *needles)
        baseline = tmp_path / "baseline"
        store.write(synthetic.record(POINT, scenario="scenario"), baseline)
        _one_error_naming(_harness(tmp_path, "gate", out, "--baseline", baseline), *needles)

    resumed = _harness(tmp_path, *run, "--resume")  # no signal this time
    assert resumed.returncode == 0, resumed.stderr
    (record,) = [r for _, r in store.iter_records(out)]
    assert record.status == "ok" and len(record.samples.launches) == LAUNCHES
