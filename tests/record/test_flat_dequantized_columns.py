"""The flat rows carry the dequantized-model comparison (#29): ``gate_dequantized_model_verdict`` and
``gate_dequantized_model_kl_ratio`` beside the same-weights columns, from a real tiny quantized run
(llama.cpp Q8_0 of tiny-llama) through ``harness verify --results`` and ``harness report`` (points.csv)."""

from __future__ import annotations

from importlib.util import find_spec

import pytest

from harness.cli import main
from harness.records.store import iter_records
from tests.correctness.test_dequantized_model import SCENARIO

pytestmark = pytest.mark.skipif(find_spec("llama_cpp") is None, reason="the llamacpp extra is not installed")


def test_points_csv_carries_the_dequantized_model_verdict_and_ratio(write_scenario, tmp_path):
    import pandas as pd

    path = write_scenario(SCENARIO.replace("ADAPTERS", "llamacpp").replace("QUANT", "int8_sym"))
    results = tmp_path / "results"
    assert main(["verify", str(path), "--results", str(results), "--isolation", "none"]) == 0
    ((_, record),) = iter_records(results)
    model = record.correctness.same_weights.dequantized_model
    assert model.verdict == "pass" and model.kl_ratio is not None, model
    assert main(["report", str(results), "-o", str(tmp_path / "report")]) == 0
    row = pd.read_csv(tmp_path / "report" / "points.csv").set_index("point_id").loc[record.point_id]
    assert row["gate_dequantized_model_verdict"] == "pass"
    assert row["gate_dequantized_model_kl_ratio"] == pytest.approx(model.kl_ratio)
    assert row["gate_same_weights_verdict"] == record.correctness.same_weights.verdict  # its neighbours
