from __future__ import annotations

import json

import pytest

from harness.records import store
from harness.records.migration import SCHEMA_VERSION
from harness.records.record import Record


def make_record(**overrides) -> Record:
    data = dict(
        scenario="demo",
        point_id="hf-cpu-bf16",
        point={"adapter": "hf", "device": "cpu", "max_seq_len": None},
        status="ok",
        metrics={"ttft_ms": 12.5, "tpot_ms": 3.0},
        units={"ttft_ms": "ms", "tpot_ms": "ms/token"},
    )
    data.update(overrides)
    return Record(**data)


def test_write_is_atomic_and_round_trips(tmp_path):
    record = make_record()
    path = store.write(record, tmp_path)
    assert path == tmp_path / "demo" / "hf-cpu-bf16.json"
    assert [p.name for p in path.parent.iterdir()] == ["hf-cpu-bf16.json"]  # no temp file left behind
    assert store.read(path) == record
    assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION


def test_a_failed_write_leaves_the_previous_record_intact(tmp_path):
    path = store.write(make_record(), tmp_path)
    with pytest.raises(ValueError):
        store.write(make_record(metrics={"ttft_ms": float("nan")}), tmp_path)  # NaN is not JSON
    assert store.read(path).metrics["ttft_ms"] == 12.5
    assert [p.name for p in path.parent.iterdir()] == ["hf-cpu-bf16.json"]


def test_names_cannot_escape_the_results_directory(tmp_path):
    path = store.write(make_record(scenario="../../evil", point_id="../x"), tmp_path / "out")
    assert path.resolve().is_relative_to((tmp_path / "out").resolve())


def test_load_gives_one_row_per_point(tmp_path):
    store.write(make_record(), tmp_path)
    store.write(make_record(point_id="hf-cpu-fp32", status="skipped", reason="nope", metrics={}), tmp_path)
    df = store.load(tmp_path)
    assert len(df) == 2
    ok = df[df.point_id == "hf-cpu-bf16"].iloc[0]
    assert ok.ttft_ms == 12.5 and ok.adapter == "hf" and ok.status == "ok"
    assert df[df.point_id == "hf-cpu-fp32"].iloc[0].reason == "nope"


def test_unknown_schema_versions_are_refused(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({**make_record().to_dict(), "schema_version": 99}))
    with pytest.raises(ValueError, match="schema_version 99"):
        store.read(path)


def test_load_names_a_missing_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        store.load(tmp_path / "nowhere")


def test_load_skips_the_reference_store_inside_a_results_directory(tmp_path):
    store.write(make_record(), tmp_path)
    (tmp_path / "references" / "model").mkdir(parents=True)
    (tmp_path / "references" / "model" / "abc.json").write_text('{"prompts": []}')
    assert store.load(tmp_path).point_id.tolist() == ["hf-cpu-bf16"]


def test_per_file_reads_a_file_once_per_version(tmp_path):
    import os

    from harness.io import per_file

    reads = []
    load = per_file(lambda path: reads.append(path) or path.read_text())
    target = tmp_path / "tokenizer.json"
    target.write_text("one")
    assert load(target) == "one" and load(str(target)) == "one"
    assert len(reads) == 1  # a sweep's second point does not parse it again
    target.write_text("two!")
    os.utime(target, ns=(1, 1))  # a rewritten file is a new version even where the clock is coarse
    assert load(target) == "two!" and len(reads) == 2


def test_harness_results_is_the_record_store_module_itself():
    """The documented ``harness.results.load`` reaches ``harness.records.store`` as one module object, so a
    patch of either reaches both."""
    import importlib

    assert importlib.import_module("harness.results") is store
    assert importlib.import_module("harness.results").load is store.load
