"""Speculative points through ``harness run`` (issue #42): a clean speculative point passes greedy equality
with its own plain path, and each fault of the verify loop (tests/faults_speculative.py) fails its point with
the first differing position; the acceptance figures and the speed-up are in the record and the export."""

from __future__ import annotations

import json

import pytest

from harness import cli
from harness.records import store
from tests import faults_speculative
from tests.conftest import registered

SCENARIO = """
model: {source: tiny-llama, dtype: fp32}
generation: {max_new_tokens: 8}
measurement: {warmup_rounds: 0, min_rounds: 2, threads: 2}
gate: {tokens: 24, prompts: 2, length: short}
sweep:
  adapter: [hf]
  speculative: [none, {prompt_lookup: {ngram: 2, tokens: 4}}, {draft: target, tokens: 3}]
include:  # each fault where it shows: a wrong acceptance and a missing rollback need rejections (prompt
  # lookup on a random tiny model), misplaced candidates need accepted ones (the target as its own draft)
  - {adapter: hf, speculative: {draft: tiny-qwen2, tokens: 3}}
  - {adapter: hf-accepts-extra, speculative: {prompt_lookup: {ngram: 2, tokens: 4}}}
  - {adapter: hf-keeps-kv, speculative: {prompt_lookup: {ngram: 2, tokens: 4}}}
  - {adapter: hf-offbyone, speculative: {draft: target, tokens: 3}}
"""
FAULTY = {
    "hf-accepts-extra-cpu-fp32-spec-lookup2x4",
    "hf-keeps-kv-cpu-fp32-spec-lookup2x4",
    "hf-offbyone-cpu-fp32-spec-draft3-target",
}


@pytest.fixture
def faulty(tiny_llama):
    yield from registered(faults_speculative.FAULTS)


def test_clean_speculation_passes_greedy_equality_and_each_fault_fails_its_point(
    write_scenario, tmp_path, capsys, faulty
):
    path = write_scenario(SCENARIO)
    assert cli.main(["run", str(path), "--results", str(tmp_path), "--no-progress", "--isolation", "none"]) == 1
    records = {record.point_id: record for _, record in store.iter_records(tmp_path / "scenario")}
    clean_points = (
        "hf-cpu-fp32-spec-lookup2x4",
        "hf-cpu-fp32-spec-draft3-target",
        "hf-cpu-fp32-spec-draft3-tiny-qwen2",
    )
    for clean in clean_points:
        record = records[clean]
        gate = record.correctness.speculative
        assert record.status == "ok" and record.verdict == "pass", (record.reason, record.correctness.reasons)
        assert gate.verdict == "pass" and not gate.reasons and not gate.ties
        assert len(gate.prompts) == 2 and all(p.position is None and p.tokens == 24 for p in gate.prompts)
        assert sum(p.drafted for p in gate.prompts) > 0, "nothing drafted: the check would show nothing"
        for metric in ("spec_acceptance_rate", "spec_tokens_per_forward", "spec_speedup", "spec_plain_tpot_ms"):
            assert record.metrics[metric] is not None, metric
    assert records["hf-cpu-fp32-spec-none"].correctness.speculative is None
    assert {point for point in records if not point.startswith("hf-cpu")} == FAULTY
    for point in FAULTY:
        record = records[point]
        gate = record.correctness.speculative
        assert record.verdict == "fail", (point, record.status, record.reason)
        assert gate.verdict == "fail" and "speculative and plain greedy differ first at position" in gate.reasons[0]
        assert any(p.position is not None for p in gate.prompts)
    own = records["hf-cpu-fp32-spec-draft3-target"]  # the target as its own draft: nearly every candidate is right
    assert own.metrics["spec_acceptance_rate"] > 0.5 and own.metrics["spec_tokens_per_forward"] > 1.5
    gaps = list(own.samples.rounds[0].gaps_s)
    assert gaps.count(0.0) >= len(gaps) // 2, gaps  # the bursts stay in the per-token timeline
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("scenario::hf-offbyone")]
    assert rows and rows[0].split()[-1] == "fail"


def test_the_acceptance_figures_reach_the_export(write_scenario, tmp_path, tiny_llama):
    timing_only = SCENARIO[: SCENARIO.index("include:")].replace("gate: {tokens: 24, prompts: 2, length: short}\n", "")
    path = write_scenario(timing_only)
    assert cli.main(["run", str(path), "--results", str(tmp_path), "--no-progress", "--isolation", "none"]) == 0
    out = tmp_path / "export.jsonl"
    assert cli.main(["export", str(tmp_path / "scenario"), "--format", "jsonl", "-o", str(out)]) == 0
    rows = [row for row in map(json.loads, out.read_text().splitlines()) if row["kind"] == "speculative"]
    by_point = {row["point"]: row for row in rows}
    assert set(by_point) == {"hf-cpu-fp32-spec-lookup2x4", "hf-cpu-fp32-spec-draft3-target"}  # not the none point
    row = by_point["hf-cpu-fp32-spec-draft3-target"]
    assert row["acceptance_rate"] > 0.5 and row["tokens_per_forward"] > 1.5 and row["speedup"] > 0
    assert row["speculative"] == "draft:tokens=3:quantization=none:source=target" and row["verdict"] is None
