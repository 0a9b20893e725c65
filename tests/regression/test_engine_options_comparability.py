"""Unit: the adapter options an engine ran with are part of what makes two records comparable — a
baseline taken with OpenVINO's latency hint does not judge a run with the throughput hint — through
`harness baseline save` and `harness gate` on records written to disk."""

from __future__ import annotations

from harness import cli
from harness.errors import EXIT_INCOMPARABLE
from harness.records import store
from harness.records.fingerprint import differences
from tests.records import record


def with_options(options: dict, seed: int = 0):
    made = record(seed=seed)
    return made.model_copy(update={"engine": made.engine.model_copy(update={"options": options})})


def test_records_that_differ_only_in_engine_options_name_that_field():
    found = differences(with_options({"PERFORMANCE_HINT": "LATENCY"}), with_options({"PERFORMANCE_HINT": "THROUGHPUT"}))
    assert [str(d) for d in found] == [
        'engine_options: {"PERFORMANCE_HINT": "LATENCY"} -> {"PERFORMANCE_HINT": "THROUGHPUT"}'
    ]


def test_equal_options_do_not_differ_and_a_record_from_before_options_were_recorded_states_none():
    assert differences(with_options({}), with_options({"a": 1})) == []  # migrated from schema 2: not stated
    assert differences(with_options({"a": 1, "b": 2}), with_options({"b": 2, "a": 1}, seed=1)) == []


def test_gate_calls_a_run_with_other_engine_options_incomparable(tmp_path, capsys):
    store.write(with_options({"PERFORMANCE_HINT": "LATENCY"}), tmp_path / "before")
    store.write(with_options({"PERFORMANCE_HINT": "THROUGHPUT"}, seed=1), tmp_path / "after")
    baselines = ["--baselines-dir", str(tmp_path / "b")]
    assert cli.main(["baseline", "save", str(tmp_path / "before"), "--name", "one", *baselines]) == 0
    capsys.readouterr()
    code = cli.main(["gate", str(tmp_path / "after"), "--baseline", "one", *baselines])
    out = capsys.readouterr().out
    assert code == EXIT_INCOMPARABLE and "engine_options:" in out and "--accept-difference engine_options" in out, out
    assert (
        cli.main(
            ["gate", str(tmp_path / "after"), "--baseline", "one", *baselines, "--accept-difference", "engine_options"]
        )
        != EXIT_INCOMPARABLE
    )
