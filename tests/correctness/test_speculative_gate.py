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
  adapter: [hf, hf-accepts-extra, hf-keeps-kv, hf-offbyone]
  speculative: [{prompt_lookup: {ngram: 2, tokens: 4}}]
include:
  - {adapter: hf, speculative: none}
  - {adapter: hf, speculative: {draft: tiny-qwen2, tokens: 3}}
"""


@pytest.fixture
def faulty(tiny_llama):
    yield from registered(faults_speculative.FAULTS)


def test_clean_speculation_passes_greedy_equality_and_each_fault_fails_its_point(
    write_scenario, tmp_path, capsys, faulty
):
    path = write_scenario(SCENARIO)
    assert cli.main(["run", str(path), "--results", str(tmp_path), "--no-progress"]) == 1
    records = {record.point_id: record for _, record in store.iter_records(tmp_path / "scenario")}
    for clean in ("hf-cpu-fp32-spec-lookup2x4", "hf-cpu-fp32-spec-draft3-tiny-qwen2"):
        record = records[clean]
        gate = record.correctness.speculative
        assert record.status == "ok" and record.verdict == "pass", (record.reason, record.correctness.reasons)
        assert gate.verdict == "pass" and not gate.reasons and not gate.ties
        assert len(gate.prompts) == 2 and all(p.position is None and p.tokens == 24 for p in gate.prompts)
        assert sum(p.drafted for p in gate.prompts) > 0, "nothing drafted: the check would show nothing"
        for metric in ("spec_acceptance_rate", "spec_tokens_per_forward", "spec_speedup", "spec_plain_tpot_ms"):
            assert record.metrics[metric] is not None, metric
    assert records["hf-cpu-fp32-spec-none"].correctness.speculative is None
    for fault in faults_speculative.FAULTS:
        record = records[f"{fault.name}-cpu-fp32-spec-lookup2x4"]
        gate = record.correctness.speculative
        assert record.verdict == "fail", (fault.name, record.status, record.reason)
        assert gate.verdict == "fail" and "speculative and plain greedy differ first at position" in gate.reasons[0]
        assert any(p.position is not None for p in gate.prompts)
    out = capsys.readouterr().out
    assert "differ first at position" in out or "fail" in out


def test_the_acceptance_figures_reach_the_export(write_scenario, tmp_path, tiny_llama):
    timing_only = SCENARIO.replace("hf, hf-accepts-extra, hf-keeps-kv, hf-offbyone", "hf")
    path = write_scenario(timing_only.replace("gate: {tokens: 24, prompts: 2, length: short}\n", ""))
    assert cli.main(["run", str(path), "--results", str(tmp_path), "--no-progress"]) == 0
    out = tmp_path / "export.jsonl"
    assert cli.main(["export", str(tmp_path / "scenario"), "--format", "jsonl", "-o", str(out)]) == 0
    rows = {row["point_id"]: row for row in map(json.loads, out.read_text().splitlines())}
    row = rows["hf-cpu-fp32-spec-lookup2x4"]
    assert 0 <= row["spec_acceptance_rate"] <= 1 and row["spec_speedup"] > 0
    assert row["speculative"] == "prompt_lookup:ngram=2:tokens=4"
