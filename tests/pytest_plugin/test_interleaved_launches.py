"""Acceptance: under pytest, launches interleave across the selected points as under `harness run` (launch
k of every point before launch k+1 of any), read from the records' launch start times — a pytest run on a
real tiny engine (transformers, tiny-llama)."""

from __future__ import annotations

import pytest

from harness.records import store
from tests.tiny_scenario import tiny

pytest.importorskip("torch")

SCENARIO = tiny(
    generation={"max_new_tokens": 3},
    measurement={"threads": 1, "launches": 2},
    sweep={"adapter": ["hf"], "max_seq_len": [32, 64]},
)


def test_pytest_interleaves_launches_across_points(pytester, tiny_llama):
    pytester.makefile(".yaml", scenario=SCENARIO)
    result = pytester.runpytest(
        "scenario.yaml", "--harness-results", "results", "--harness-isolation", "none", "--harness-no-energy"
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["harness: timing 2 point(s), launches interleaved across them"])
    records = {r.point_id: r for _, r in store.iter_records([pytester.path / "results"])}
    first, second = records["hf-cpu-bf16-seq32"], records["hf-cpu-bf16-seq64"]
    assert len(first.samples.launches) == len(second.samples.launches) == 2
    # the second point's first launch ran before the first point's second launch
    assert second.samples.launches[0].started_at < first.samples.launches[1].started_at
