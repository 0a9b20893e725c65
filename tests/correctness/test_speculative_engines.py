"""Clean speculative points on llama.cpp (llama-cpp-python's prompt lookup and a draft model) and OpenVINO
GenAI (its prompt-lookup and draft pipelines) pass greedy equality with each engine's own plain greedy run,
through ``harness run`` on a tiny model (issue #42)."""

from __future__ import annotations

import pytest

from harness import cli
from harness.records import store

SCENARIO = """
model: {source: tiny-llama, dtype: fp32}
generation: {max_new_tokens: 8}
measurement: {warmup_rounds: 0, min_rounds: 2, threads: 2}
gate: {tokens: 24, prompts: 2, length: short}
sweep:
  adapter: [ADAPTER]
  device: [DEVICE]
  speculative: [{prompt_lookup: {ngram: 2, tokens: 4}}, {draft: target, quantization: int8_sym, tokens: 3}]
"""


@pytest.mark.parametrize(("adapter", "device"), [("llamacpp", "cpu"), ("openvino", "CPU")])
def test_clean_speculative_points_pass_greedy_equality(write_scenario, tmp_path, tiny_llama, adapter, device):
    path = write_scenario(SCENARIO.replace("ADAPTER", adapter).replace("DEVICE", device))
    code = cli.main(["run", str(path), "--results", str(tmp_path), "--no-progress", "--isolation", "none"])
    records = list(store.iter_records(tmp_path / "scenario"))
    assert len(records) == 2
    for _, record in records:
        gate = record.correctness.speculative if record.correctness else None
        assert record.status == "ok", (record.point_id, record.reason)
        assert gate is not None and gate.verdict == "pass", (record.point_id, gate and gate.reasons)
        assert all(p.position is None or p.tie_gap is not None for p in gate.prompts)
        assert record.metrics["spec_speedup"] is not None and record.metrics["spec_plain_tpot_ms"] is not None
    assert code in (0, 1)  # 1 only where the usual gate judged the engine's plain path itself
