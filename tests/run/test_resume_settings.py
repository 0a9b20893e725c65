"""`harness run --resume` and settings added to the scenario schema after a record was written (issue #30:
the canary's ``measurement.canary_tolerance``/``disturbed_reruns``, auto launches' ``target_change`` and
``time_budget_s``): a setting the record lacks counts as its default, so a finished point of the same
configuration is kept, not re-run; one the scenario sets away from its default still re-runs the point.
On a real tiny engine (transformers, tiny-llama)."""

from __future__ import annotations

import json

import pytest

from harness import cli
from tests.tiny_scenario import tiny

pytest.importorskip("torch")


def older(**measurement) -> str:
    return tiny(
        name="older",
        generation={"max_new_tokens": 2},
        measurement={"threads": 1, **measurement},
        sweep={"adapter": ["hf"], "device": ["cpu"]},
    )


ADDED = ("canary_tolerance", "disturbed_reruns", "target_change", "time_budget_s")


def _run(tmp_path, *extra: str) -> int:
    argv = ["run", str(tmp_path / "older.yaml"), "--results", str(tmp_path / "results"), "--isolation", "none"]
    return cli.main([*argv, "--no-progress", "--no-energy", *extra])


def _written_before_the_new_settings(path) -> str:
    """The record on disk as a harness before these settings wrote it; returns its start time."""
    data = json.loads(path.read_text())
    for name in ADDED:
        del data["settings"]["measurement"][name]
    path.write_text(json.dumps(data))
    return data["started_at"]


def test_an_older_record_resumes_when_the_new_settings_are_at_their_defaults(tmp_path):
    (tmp_path / "older.yaml").write_text(older())
    assert _run(tmp_path) == 0
    path = tmp_path / "results" / "older" / "hf-cpu-bf16.json"
    started = _written_before_the_new_settings(path)
    assert _run(tmp_path, "--resume") == 0
    kept = json.loads(path.read_text())
    assert kept["started_at"] == started and "canary_tolerance" not in kept["settings"]["measurement"]

    # the scenario now sets one of them away from its default: not the configuration the record ran
    (tmp_path / "older.yaml").write_text(older(canary_tolerance=0.3))
    assert _run(tmp_path, "--resume") == 0
    rerun = json.loads(path.read_text())
    assert rerun["started_at"] != started and rerun["settings"]["measurement"]["canary_tolerance"] == 0.3


def test_an_older_record_resumes_when_a_new_axis_is_at_its_default(tmp_path):
    """A record written before the ``speculative`` axis existed has no value for it: it counts as ``none``."""
    (tmp_path / "older.yaml").write_text(older())
    assert _run(tmp_path) == 0
    path = tmp_path / "results" / "older" / "hf-cpu-bf16.json"
    data = json.loads(path.read_text())
    del data["point"]["speculative"]
    path.write_text(json.dumps(data))
    assert _run(tmp_path, "--resume") == 0
    assert json.loads(path.read_text())["started_at"] == data["started_at"]
