"""Acceptance (issue #30): point ids say the precision that ran, on the OpenVINO and transformers engines too.
An OpenVINO point at quantization none computes in its plugin's inference precision whatever ``model.dtype``
says (the export ignores it, and no hint is set): f32 on a CPU without bf16, bf16 on one with AVX512-bf16
or AMX. So the point is ``openvino-CPU-f32`` or ``openvino-CPU-bf16``, its record and the report's columns
say so, and a baseline saved under the old id (``model.dtype``'s) still matches it in `harness gate`. A
transformers point runs the dtype its id names. Real `harness run`s of tiny-llama."""

from __future__ import annotations

import json
import platform
from pathlib import Path

import pytest

from harness import cli
from harness.records import store
from harness.records.precision import from_openvino_type
from tests.machine import cpu_has_bf16

SCENARIO = """
name: honest
model: tiny-llama
prompts: ["The river"]
generation: {max_new_tokens: 3}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}  # 2: OpenVINO 2026.4.1 dies compiling bf16 at 1 thread on AMX CPUs (compile_probe)
sweep:
  adapter: [ADAPTER]
  device: [DEVICE]
"""


def _run(tmp_path: Path, adapter: str, device: str, dtype: str = "bf16"):
    text = (
        SCENARIO.replace("ADAPTER", adapter)
        .replace("DEVICE", device)
        .replace("tiny-llama", f"{{source: tiny-llama, dtype: {dtype}}}")
    )
    (tmp_path / "honest.yaml").write_text(text.lstrip())
    argv = ["run", str(tmp_path / "honest.yaml"), "--results", str(tmp_path / "results"), "--isolation", "none"]
    assert cli.main([*argv, "--no-progress", "--no-energy"]) == 0
    ((path, record),) = list(store.iter_records([tmp_path / "results"]))
    assert record.status == "ok", record.reason
    return path, record


def test_the_openvino_cpu_point_is_named_by_the_plugins_inference_precision(tmp_path, tiny_llama, capsys):
    pytest.importorskip("openvino_genai", reason="the openvino extra is not installed: pip install 'harness[openvino]'")
    if platform.machine() not in ("x86_64", "AMD64") or not Path("/proc/cpuinfo").exists():
        pytest.skip("the expected precision is derived from x86 CPU flags in /proc/cpuinfo")
    # Derived from the CPU's flags, apart from the plugin whose choice the id reports.
    ran = "bf16" if cpu_has_bf16() else "f32"
    # model.dtype is the other precision, so the id before ids named the plugin's precision differs from
    # today's on every CPU (bf16 on one without bf16, fp32 on one with it) and the rename below is exercised.
    dtype = "fp32" if ran == "bf16" else "bf16"
    path, record = _run(tmp_path, "openvino", "CPU", dtype)
    assert record.point_id == f"openvino-CPU-{ran}" and path.stem == record.point_id
    assert f"honest::openvino-CPU-{ran}" in capsys.readouterr().out  # the run table
    assert record.engine.precision == ran
    assert from_openvino_type(record.engine.extra["precision_hints"]["INFERENCE_PRECISION_HINT"]) == ran
    (row,) = store.load(tmp_path / "results").to_dict("records")  # the columns of the report, CSV and pandas
    assert row["precision"] == ran and row["quantization"] == "none", row

    # A baseline saved before ids named the plugin's precision: its record's id named model.dtype.
    before = f"openvino-CPU-{dtype}"
    assert before != record.point_id
    old = record.to_dict() | {"point_id": before, "schema_version": 2}
    engine = old.pop("engine")  # version 2's flat adapter part, without the precision
    old["adapter"] = {"engine": engine["name"], "engine_version": engine["version"], **engine["extra"]}
    (tmp_path / "old" / "honest").mkdir(parents=True)
    (tmp_path / "old" / "honest" / f"{before}.json").write_text(json.dumps(old, default=str))
    saved = ["baseline", "save", str(tmp_path / "old"), "--name", "before", "--baselines-dir", str(tmp_path / "b")]
    assert cli.main(saved) == 0
    capsys.readouterr()
    gate = ["gate", str(tmp_path / "results"), "--baseline", "before", "--baselines-dir", str(tmp_path / "b")]
    assert cli.main([*gate, "--max-regression", "tpot=1000%,ttft=100000%"]) == 0
    out = capsys.readouterr().out
    assert "missing" not in out and "no record now" not in out, out


@pytest.mark.parametrize("dtype, torch_dtype", [("bf16", "torch.bfloat16"), ("fp32", "torch.float32")])
def test_a_transformers_point_runs_the_dtype_its_id_names(tmp_path, tiny_llama, dtype, torch_dtype):
    pytest.importorskip("torch")
    _, record = _run(tmp_path, "hf", "cpu", dtype)
    assert record.point_id == f"hf-cpu-{dtype}"
    assert record.engine.extra["weights_dtype"] == torch_dtype  # read from the loaded model, not the setting
