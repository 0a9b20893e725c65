"""Hostile files through the harness command (a subprocess, so a hang is a timeout, not a stuck suite):
records and scenarios that are FIFOs, devices, huge, deeply nested or `null` end in one line and exit 2,
at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from harness.io import MAX_JSON_BYTES
from tests.records import record

# A hostile file is refused at once: a minute is a hang. A run that times a real engine (torch's import, the
# model's load, the canary) takes longer on a loaded CI machine, and is given the time a run needs there.
RUN_TIMEOUT_S = 300


def harness(*args, cwd=None, timeout: float = 60) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "harness.cli", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=cwd)


def one_line_exit_2(done: subprocess.CompletedProcess, *needles: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and all(n in errors[0] for n in needles), done.stderr


@pytest.fixture
def results(tmp_path):
    out = tmp_path / "results"
    from harness.records import store

    store.write(record("p", tpot_ms=20.0), out)
    return out


def test_a_record_that_is_a_symlink_to_dev_zero_is_refused_not_read(results, tmp_path):
    (results / "demo" / "zero.json").symlink_to("/dev/zero")
    for command in (["report", results, "-o", tmp_path / "r"], ["export", results, "-o", tmp_path / "x.jsonl"]):
        one_line_exit_2(harness(*command), "zero.json", "not a regular file")


def test_a_record_larger_than_the_cap_is_refused_before_reading(results, tmp_path):
    huge = results / "demo" / "huge.json"
    with open(huge, "wb") as handle:  # sparse: the size is what is checked, no memory is used
        handle.truncate(MAX_JSON_BYTES + 1)
    one_line_exit_2(harness("report", results, "-o", tmp_path / "r"), "huge.json", "larger than")


@pytest.mark.parametrize("content", ["null", "[]", "3"])
def test_a_record_file_holding_no_object_is_named_not_skipped(results, tmp_path, content):
    (results / "demo" / "broken.json").write_text(content)
    one_line_exit_2(harness("report", results, "-o", tmp_path / "r"), "broken.json", "not a harness result record")


def test_a_deeply_nested_record_is_one_line(results, tmp_path):
    (results / "demo" / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    one_line_exit_2(harness("report", results, "-o", tmp_path / "r"), "deep.json")


def test_a_scenario_that_is_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "scenario.yaml"
    os.mkfifo(fifo)
    for command in ("check", "run"):
        done = harness(command, fifo, cwd=tmp_path)  # before the fix: blocked in open() until the timeout
        assert done.returncode == 2 and "not a regular file" in done.stderr and "Traceback" not in done.stderr, (
            done.stderr
        )


def test_a_baseline_gate_over_a_dev_zero_record_is_refused(results, tmp_path):
    (results / "demo" / "zero.json").symlink_to("/dev/zero")
    done = harness("gate", results, "--baseline", results, "--baselines-dir", tmp_path / "b")
    one_line_exit_2(done, "zero.json", "not a regular file")


def test_records_still_read_through_a_symlink_to_a_regular_file(results, tmp_path):
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps(json.loads((results / "demo" / "p.json").read_text()) | {"point_id": "q"}))
    (results / "demo" / "q.json").symlink_to(target)
    done = harness("summary", results)
    assert done.returncode == 0, done.stderr


def test_a_second_run_into_a_busy_results_directory_is_refused_with_the_holders_pid(tmp_path):
    scenario = tmp_path / "slow.yaml"
    scenario.write_text(
        "model: tiny-llama\nprompts: ['The river']\ngeneration: {max_new_tokens: 2}\n"
        "measurement: {warmup_rounds: 0, min_rounds: 1, min_time_s: 60}\nsweep: {adapter: [hf]}\n"
    )
    command = [sys.executable, "-m", "harness.cli", "run", str(scenario), "--results", str(tmp_path / "r")]
    first = subprocess.Popen([*command, "--isolation", "none", "--no-progress", "--no-energy"])
    try:
        lock = tmp_path / "r" / ".harness-run.lock"
        for _ in range(600):  # the first run holds the directory once it starts its sweep
            if lock.exists() and lock.read_text().strip() == str(first.pid):
                break
            time.sleep(0.1)
        second = harness("run", scenario, "--results", tmp_path / "r", "--isolation", "none", "--no-progress")
        one_line_exit_2(second, f"another harness run (PID {first.pid}) is writing there")
    finally:
        first.terminate()
        first.wait(timeout=60)


def test_resume_never_overwrites_a_record_of_a_newer_schema(tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "name: s\nmodel: tiny-llama\nprompts: ['The river']\ngeneration: {max_new_tokens: 2}\n"
        "measurement: {warmup_rounds: 0, min_rounds: 1}\nsweep: {adapter: [hf]}\n"
    )
    newer = tmp_path / "r" / "s" / "hf-cpu-bf16.json"
    newer.parent.mkdir(parents=True)
    newer.write_text(json.dumps({"schema_version": 99, "point_id": "hf-cpu-bf16", "scenario": "s"}))
    done = harness("run", scenario, "--results", tmp_path / "r", "--resume", "--isolation", "none", "--no-progress")
    one_line_exit_2(done, "hf-cpu-bf16.json", "schema version 99", "not overwritten")
    assert json.loads(newer.read_text())["schema_version"] == 99


def test_a_record_that_cannot_be_written_mid_sweep_is_one_line_with_the_resume_command(tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "name: s\nmodel: tiny-llama\nprompts: ['The river']\ngeneration: {max_new_tokens: 2}\n"
        "measurement: {warmup_rounds: 0, min_rounds: 1}\nsweep: {adapter: [hf], max_seq_len: [32, 64]}\n"
    )
    (tmp_path / "r" / "s" / "hf-cpu-bf16-seq64.json").mkdir(parents=True)  # a directory where a record goes
    argv = ["run", scenario, "--results", tmp_path / "r", "--isolation", "none", "--no-progress", "--no-energy"]
    done = harness(*argv, timeout=RUN_TIMEOUT_S)  # its first point runs
    one_line_exit_2(done, "hf-cpu-bf16-seq64.json: Is a directory", "1 of 2 point(s) have records", "--resume")
    assert "s::hf-cpu-bf16-seq32  ok" in done.stdout  # the summary of what was recorded still prints
    assert json.loads((tmp_path / "r" / "s" / "hf-cpu-bf16-seq32.json").read_text())["status"] == "ok"
    assert not list((tmp_path / "r").rglob("*.tmp"))  # no temporary file left behind
