"""A point run in a worker records what the same point run in ``harness run``'s own process records: verdicts,
reasons, phases, per-prompt figures, beams, stops and outputs. The gate's tests (``tests/correctness/``) judge
their faults with ``--isolation none``, where a run costs no worker start; this test is what keeps the worker
path (the default) answerable for every part of the record they read: a part the worker lost, or filled
otherwise, fails here naming its path in the record."""

from __future__ import annotations

from typing import Any

import pytest

from harness import cli
from harness.records import store
from tests import faults
from tests.conftest import registered
from tests.tiny_scenario import tiny


class PrefillFault(faults.PrefillQueryOffset):
    name = "hf-parity-prefillfault"


class BeamFault(faults.BeamCacheNotReordered):
    name = "hf-parity-beamfault"


# A prefill-only fault (fails by its phase) and a beam-only fault (fails the beam check): between them the
# record's phases, per-prompt KL, token classes, stopping check and beam check all have something to say.
SCENARIO = tiny(
    prompts=None,  # the default prompt set
    measurement={"threads": 2},
    gate={"tokens": 16, "prompts": 2, "length": "short"},
    sweep={"adapter": ["hf-parity-prefillfault"]},
    include=[{"adapter": "hf-parity-beamfault", "beam_width": 4}],
)

# What the run itself decides, not how long it took or where it ran.
COMPARED = ("status", "reason", "point", "prompt_lengths", "outputs", "correctness", "accuracy", "unavailable")
TIMES = {"obtained_s"}  # the reference store's read (or compute) time


@pytest.fixture
def faulty(tiny_llama):
    yield from registered([PrefillFault, BeamFault])


def _records(write_scenario, tmp_path, reference_dir, isolation: str) -> dict[str, dict]:
    path = write_scenario(SCENARIO)
    results = tmp_path / isolation
    argv = ["run", str(path), "--results", str(results), "--reference-dir", str(reference_dir), "--no-progress"]
    assert cli.main([*argv, "--isolation", isolation]) == 1  # both faults fail their points
    return {record.point_id: record.to_dict() for _, record in store.iter_records(results)}


def _differences(ours: Any, theirs: Any, where: str) -> list[str]:
    if isinstance(ours, dict) and isinstance(theirs, dict):
        keys = sorted((set(ours) | set(theirs)) - TIMES)
        return [
            d
            for key in keys
            for d in _differences(ours.get(key, "<absent>"), theirs.get(key, "<absent>"), f"{where}.{key}")
        ]
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        return [d for i, pair in enumerate(zip(ours, theirs)) for d in _differences(*pair, f"{where}[{i}]")]
    return [] if ours == theirs else [f"{where}: {str(ours)[:120]} (in process) vs {str(theirs)[:120]} (worker)"]


def test_a_worker_records_what_the_runs_own_process_records(write_scenario, tmp_path, faulty, reference_dir, capsys):
    in_process = _records(write_scenario, tmp_path, reference_dir, "none")
    in_worker = _records(write_scenario, tmp_path, reference_dir, "worker")
    assert sorted(in_process) == sorted(in_worker) and len(in_process) == 2
    prefill, beam = (in_worker[p]["correctness"] for p in sorted(in_worker))
    assert {prefill["verdict"], beam["verdict"]} == {"fail"}  # the faults were judged, not skipped
    differences = [
        difference
        for point, record in in_process.items()
        for part in COMPARED
        for difference in _differences(record.get(part), in_worker[point].get(part), f"{point}.{part}")
    ]
    assert not differences, "\n".join(differences)
