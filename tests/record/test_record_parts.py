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
from harness.records.correctness import Correctness
from harness.records.migration import SCHEMA_VERSION
from harness.records.record import Record
from tests.records import record

V1 = Path(__file__).parents[1] / "data" / "records_v1"


def test_version_1_records_load_with_details_split_into_named_parts():
    loaded = {r.point_id: r for _, r in store.iter_records(V1)}
    ok, failed = loaded["openvino-npu-int8_sym"], loaded["fake-segfault-cpu-bf16"]
    assert ok.schema_version == failed.schema_version == SCHEMA_VERSION == 2
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


def test_a_migrated_record_writes_and_reads_back_as_version_2(tmp_path):
    ((_, old),) = [pair for pair in store.iter_records(V1) if pair[1].status == "ok"]
    path = store.write(old, tmp_path)
    data = json.loads(path.read_text())
    assert data["schema_version"] == 2 and "details" not in data
    assert data["unavailable"]["energy_gpu_j"] and data["routing"]["counts"]
    assert store.read(path) == old


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("metrics", {"ttft_ms": "fast"}, "metrics.ttft_ms: expected a number, got 'fast'"),
        ("status", 3, "status: expected a valid string, got 3"),
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
        report_to_benchmark(Benchmark, sample, scenario=type("S", (), {"known_failures": []}))
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
    assert saved["schema_version"] == 2
    assert json.loads((tmp_path / "baselines" / "v1" / "baseline.json").read_text())["points"] == 2
