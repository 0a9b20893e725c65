"""Typed record parts: version-1 files migrate, wrong types are named, one flattening, atomic writes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness import io
from harness.cli.app import main
from harness.records import store
from harness.records.columns import flatten
from harness.records.correctness import Correctness, Divergence, PromptResult
from harness.records.engine import EngineInfo
from harness.records.fingerprint import fingerprint
from harness.records.gate_diagnosis import Diagnosis
from harness.records.migration import SCHEMA_VERSION
from harness.records.record import Record
from tests.records import record

V1 = Path(__file__).parents[1] / "data" / "records_v1"
V2 = Path(__file__).parents[1] / "data" / "records_v2"
# Written by the harness before the gate's prompts and diagnosis were typed parts: a failing gate with dict
# prompts and a diagnosis that stored ``departs_at_layer``, and one whose diagnosis could not run.
V2_GATE = Path(__file__).parents[1] / "data" / "records_v2_gate"


def test_version_1_records_load_with_details_split_into_named_parts():
    loaded = {r.point_id: r for _, r in store.iter_records(V1)}
    ok, failed = loaded["openvino-npu-int8_sym"], loaded["fake-segfault-cpu-bf16"]
    assert ok.schema_version == failed.schema_version == SCHEMA_VERSION == 3
    assert ok.outputs["0"] == "The river runs" and ok.prompt_lengths == [4, 6]
    assert ok.routing.imbalance == [3.0, 2.0] and ok.routing.counts[0] == [3, 1, 0, 0]
    assert ok.unavailable["energy_gpu_j"] == "no GPU visible to Zeus (NVML / AMDSMI)"
    assert ok.unavailable["energy_j"].startswith("Zeus cannot see Intel or AMD NPUs")
    assert ok.unavailable["cpu_cycles"].startswith("perf is not installed")
    assert ok.unavailable["device_memory_peak_mb"].startswith("npu:")
    assert ok.unavailable["roofline_fraction"] == "the adapter reports no weight size"
    assert ok.correctness.mode == "forced-top1" and ok.correctness.kl_mean is None and ok.verdict == "pass"
    assert ok.correctness.reference.tokens == 8 and ok.accuracy.skipped.startswith("lm-eval is not installed")
    assert ok.model.name == "tiny-llama" and ok.samples.rounds[0].gaps_s == [0.005, 0.0051, 0.0049]
    assert failed.failure.exit_code == -11 and failed.failure.signal == "SIGSEGV"
    assert failed.correctness is None and failed.accuracy is None and failed.model.name is None
    assert set(store.load(V1).point_id) == set(loaded)


def test_a_migrated_record_writes_and_reads_back_as_the_current_version(tmp_path):
    ((_, old),) = [pair for pair in store.iter_records(V1) if pair[1].status == "ok"]
    path = store.write(old, tmp_path)
    data = json.loads(path.read_text())
    assert data["schema_version"] == 3 and "details" not in data and "adapter" not in data
    assert data["unavailable"]["energy_gpu_j"] and data["routing"]["counts"]
    assert store.read(path) == old


def test_records_with_untyped_gate_prompts_and_diagnosis_load_typed_and_write_back_without_the_derived_layer(
    tmp_path,
):
    loaded = {r.point_id: r for _, r in store.iter_records(V2_GATE)}
    gate, blind = loaded["hf-cpu-bf16"].correctness, loaded["hf-cpu-fp32"].correctness
    (prompt,) = gate.prompts
    assert isinstance(prompt, PromptResult) and prompt.free_divergence == prompt.forced_first_violation == 1
    assert prompt.position_kl == pytest.approx([0, 2.502, 0], abs=1e-3) and prompt.position_top1 == [1, 0, 1]
    assert prompt.failures[0] == Divergence(
        prompt=0,
        position=1,
        reference_token=2,
        device_token=5,
        reference_topk=[(2, -0.4519), (1, -1.4519)],
        device_topk=[(5, -0.4519), (4, -1.4519)],
        ok=False,
        why="device token 5 not in reference top-2",
    )
    found = gate.diagnosis
    assert isinstance(found, Diagnosis) and found.departs_at == "decoder layer 1"
    assert [c.name for c in found.components] == ["embedding", "decoder layer 0", "decoder layer 1"]
    assert found.input_ids.agree is True and (found.phase, found.prompt, found.position) == ("prefill", 0, 1)
    assert blind.diagnosis.not_run == "opaque exposes no hidden states" and blind.diagnosis.departs_at is None
    assert "no tokenizer of its own" in blind.diagnosis.input_ids.not_compared

    path = store.write(loaded["hf-cpu-bf16"], tmp_path)
    data = json.loads(path.read_text())
    assert "departs_at_layer" not in data["correctness"]["diagnosis"]
    assert data["correctness"]["prompts"][0]["failures"][0]["reference_topk"] == [[2, -0.4519], [1, -1.4519]]
    assert store.read(path) == loaded["hf-cpu-bf16"]


def test_the_readers_of_gate_prompts_take_records_written_before_they_were_typed(tmp_path, capsys):
    out = tmp_path / "rows.jsonl"
    assert main(["export", str(V2_GATE), "--format", "jsonl", "-o", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    gate_rows = [row for row in rows if row["kind"] == "gate"]
    assert [(row["point"], row["position"], row["top1_match"]) for row in gate_rows] == [
        ("hf-cpu-bf16", 0, 1),
        ("hf-cpu-bf16", 1, 0),
        ("hf-cpu-bf16", 2, 1),
        ("hf-cpu-fp32", 0, 1),
        ("hf-cpu-fp32", 1, 0),
        ("hf-cpu-fp32", 2, 1),
    ]
    assert gate_rows[1]["kl"] == pytest.approx(2.502, abs=1e-3) and {row["verdict"] for row in gate_rows} == {"fail"}
    assert main(["report", str(V2_GATE), "-o", str(tmp_path / "report")]) == 0
    assert (tmp_path / "report" / "plots" / "gate_kl.png").exists()  # the per-position KL plot reads the prompts


def test_version_2_records_load_with_a_typed_engine_part_and_one_spelling_of_threads(tmp_path):
    loaded = {r.point_id: r for _, r in store.iter_records(V2)}
    llama, hf = loaded["llamacpp-cpu-q4_k_m"], loaded["hf-cpu-bf16"]  # the old id renamed by its GGUF's file type
    assert llama.schema_version == hf.schema_version == 3
    assert (llama.engine.name, llama.engine.version, llama.engine.device) == ("llama.cpp", "0.3.36", "cpu")
    assert llama.engine.threads == 2 and llama.engine.precision == "q4_k_m"  # n_threads in version 2
    assert llama.engine.extra["file_type"] == "MOSTLY_Q4_K_M" and llama.engine.extra["n_ctx"] == 4096
    assert not {"engine", "engine_version", "n_threads", "threads", "precision"} & set(llama.engine.extra)
    assert hf.engine.threads == 2 and hf.engine.dtype == "bf16" and hf.engine.device_name == "AMD EPYC"
    assert hf.engine.extra == {
        "torch_version": "2.13.0",
        "weights_dtype": "torch.bfloat16",
        "attn_implementation": "sdpa",
        "kv_cache": "dynamic",
    }
    assert fingerprint(llama)["threads"] == fingerprint(hf)["threads"] == "2"
    assert flatten(llama)["engine"] == "llama.cpp" and flatten(llama)["precision"] == "q4_k_m"
    data = json.loads(store.write(llama, tmp_path).read_text())
    assert "adapter" not in data and data["engine"]["threads"] == 2
    assert store.read(store.record_path(tmp_path, llama)) == llama


def test_a_plain_dict_description_is_read_as_an_older_records_adapter_part():
    engine = EngineInfo.from_description({"engine": "x", "engine_version": 1, "n_threads": 4, "blocks": 8})
    assert (engine.name, engine.version, engine.threads, engine.extra) == ("x", "1", 4, {"blocks": 8})
    with pytest.raises(TypeError, match="expected an EngineInfo"):
        EngineInfo.from_description(["x"])


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("metrics", {"ttft_ms": "fast"}, "metrics.ttft_ms: expected a number, got 'fast'"),
        ("status", 3, "status: expected 'ok', 'skipped', 'failed', 'timeout' or 'incomplete', got 3"),
        ("samples", {"rounds": [{"ttft_s": 1}]}, "samples.rounds.0.prompt_index: field required"),
        ("correctness", {"verdict": "pass", "k": "five"}, "correctness.k: expected a valid integer"),
        ("routing", {"counts": "lots", "imbalance": []}, "routing.counts: expected a valid list"),
    ],
)
def test_wrong_types_are_refused_naming_the_file_and_field(tmp_path, field, value, message):
    path = store.write(record("p"), tmp_path)
    path.write_text(json.dumps({**json.loads(path.read_text()), field: value}))
    with pytest.raises(ValueError) as caught:
        store.read(path)
    assert f"{path}: {message}" in str(caught.value)


def test_the_command_line_reports_a_malformed_record_in_one_line(tmp_path, capsys):
    path = store.write(record("p"), tmp_path / "results")
    path.write_text(json.dumps({**json.loads(path.read_text()), "metrics": {"tpot_ms": [1]}}))
    assert main(["report", str(tmp_path / "results"), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ERROR {path}: metrics.tpot_ms: expected a number") and "Traceback" not in err


def test_unknown_parts_are_refused_not_dropped():
    with pytest.raises(ValueError, match="details: extra inputs are not permitted"):
        Record.from_dict({**record("p").to_dict(), "details": {"outputs": {}}})


def test_pandas_and_pytest_benchmark_get_the_same_columns(tmp_path):
    from harness.pytest_plugin.items import report_to_benchmark

    class Benchmark:  # the parts of pytest-benchmark's fixture the plugin touches
        disabled, extra_info = True, {}

    sample = record("p", verdict="fail")
    sample.correctness.report = "reference token 17 not in device top-5"
    with pytest.raises(BaseException, match="reference token 17"):  # a failed gate fails the test
        report_to_benchmark(Benchmark, sample)
    carried = Benchmark.extra_info.pop("harness_record")
    assert Benchmark.extra_info == flatten(sample) == {k: v for k, v in store.row(sample).items() if k != "path"}
    assert Record.from_dict(carried).samples.rounds_ms["tpot_ms"]


def test_a_record_without_a_gate_has_no_correctness_part():
    plain = record("p", verdict=None)
    assert plain.correctness is None and plain.verdict is None
    assert flatten(plain)["gate_verdict"] is None
    assert Correctness(kl_mean=None, mode="forced-top1").kl_ratio is None


def test_atomic_writes_use_unique_temporary_names_and_clean_up(tmp_path, monkeypatch):
    target = tmp_path / "deep" / "x.json"
    io.write_json_atomic(target, {"a": 1})
    assert json.loads(target.read_text()) == {"a": 1}
    with pytest.raises(ValueError):
        io.write_json_atomic(target, {"a": float("nan")})  # strict JSON
    assert json.loads(target.read_text()) == {"a": 1} and [p.name for p in target.parent.iterdir()] == ["x.json"]
    names = []
    real_replace = io.os.replace
    monkeypatch.setattr(io.os, "replace", lambda src, dst: (names.append(Path(src).name), real_replace(src, dst)))
    io.write_json_atomic(target, {"a": 2})
    io.write_json_atomic(target, {"a": 3})
    assert len(set(names)) == 2 and all(n.startswith(".x.json.") for n in names)


def test_baselines_and_merges_read_version_1_records(tmp_path):
    shutil.copytree(V1, tmp_path / "old")
    assert (
        main(
            ["baseline", "save", str(tmp_path / "old"), "--name", "v1", "--baselines-dir", str(tmp_path / "baselines")]
        )
        == 0
    )
    saved = json.loads(next((tmp_path / "baselines" / "v1" / "demo").glob("openvino*.json")).read_text())
    assert saved["schema_version"] == 3
    assert json.loads((tmp_path / "baselines" / "v1" / "baseline.json").read_text())["points"] == 2
