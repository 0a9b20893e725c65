"""A gate whose KL tier had too few teacher-forced positions is NOT JUDGED, never a silent pass (issue #29):
``harness verify``, ``harness run``, the pytest plugin and ``harness gate`` print it with the reason and
the count, exit 0, and exit 4 under ``--fail-on-unknown``; the record, the run table, ``harness summary``,
summary.md, ``harness export`` and ``harness history show`` carry the word. On a real tiny engine
(transformers, tiny-llama): one prompt of 4 tokens gives 4 positions, fewer than ``gate.min_positions`` (8).
A top-k failure on as few positions still fails."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from harness import cli
from harness.records import store

pytest.importorskip("torch")

SCENARIO = """
model: tiny-llama
prompts: ["The river"]
generation: {max_new_tokens: 4}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}
gate: {tokens: 4, prompts: ["The river bank"]}
sweep:
  adapter: [hf]
"""
WHY = "KL tier not judged: 4 teacher-forced positions, fewer than gate.min_positions=8"
CLOSING = "NOT JUDGED: 1 point(s) passed top-k but had too few teacher-forced positions for the KL tier"


def main(*argv) -> tuple[int, str]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = cli.main([str(a) for a in argv])
    return code, printed.getvalue()


@pytest.fixture(scope="module")
def night(tmp_path_factory, tiny_llama):
    """One `harness run` of the few-positions scenario, into a history too; its printed output."""
    root = tmp_path_factory.mktemp("not-judged")
    (root / "scenario.yaml").write_text(SCENARIO.lstrip())
    db = f"sqlite:///{root / 'h.sqlite'}"
    run = ["run", root / "scenario.yaml", "--results", root / "results", "--isolation", "none", "--no-energy"]
    code, printed = main(*run, "--no-progress", "--history", db)
    assert code == 0, printed
    return root, db, run, printed


def test_verify_prints_not_judged_with_the_reason_and_exits_4_only_when_asked(write_scenario, tmp_path, tiny_llama):
    path = write_scenario(SCENARIO)
    verify = ["verify", path, "--results", tmp_path / "results", "--isolation", "none"]
    code, out = main(*verify)
    # Before: "PASS   scenario::hf-cpu-bf16" with the reason only among the line's notes, exit 0.
    assert code == 0, out
    assert "NOT JUDGED scenario::hf-cpu-bf16: top-5 both" in out, out
    assert (
        f"gate NOT JUDGED: {WHY}" in out
        and CLOSING in out
        and "set gate.power to add shipped prompts" in out
        and "--fail-on-unknown exits 4" in out
    )
    code, out = main(*verify, "--fail-on-unknown")
    assert code == 4 and "NOT JUDGED scenario::hf-cpu-bf16" in out, out
    # Enough positions for the tier: judged, and --fail-on-unknown has nothing to fail on.
    path = write_scenario(SCENARIO.replace('bank"]}', 'bank"], min_positions: 4}'))
    code, out = main(*verify[:1], path, *verify[2:], "--fail-on-unknown")
    assert code == 0 and "PASS   scenario::hf-cpu-bf16: top-5 both" in out and "NOT JUDGED" not in out, out


def test_a_top_k_failure_on_too_few_positions_still_fails(write_scenario, tmp_path, tiny_llama):
    from harness.adapters import registry
    from tests.correctness.test_gate import BrokenHF  # a stale KV cache: top-5 fails within these 4 positions

    registry.register_adapter(BrokenHF)
    try:
        path = write_scenario(SCENARIO.replace("adapter: [hf]", "adapter: [hf-broken]"))
        code, out = main("verify", path, "--results", tmp_path / "results", "--isolation", "none", "--fail-on-unknown")
    finally:
        registry.unregister_adapter(BrokenHF.name)
    line = next(line for line in out.splitlines() if "scenario::hf-broken-cpu-bf16" in line)
    assert code == 1 and line.startswith("FAIL   ") and WHY in line, out  # the unjudged tier is a note
    assert "NOT JUDGED" not in out


def test_run_records_it_and_every_reader_shows_the_word(night, capsys):
    root, db, run, printed = night
    (record,) = [r for _, r in store.iter_records(root / "results")]
    assert record.correctness.verdict == "not judged" and record.correctness.reasons == [WHY]
    assert record.correctness.diagnosis is None  # nothing departed: no diagnosis run
    row = next(line for line in printed.splitlines() if line.startswith("scenario::hf-cpu-bf16"))
    assert row.rstrip().endswith("not judged"), printed
    assert f"gate NOT JUDGED: {WHY}" in printed and CLOSING in printed
    code, summary = main("summary", root / "results" / "scenario")
    assert code == 0 and f"not judged, {WHY}" in summary, summary
    assert cli.main(["report", str(root / "results"), "-o", str(root / "report")]) == 0
    assert "not judged" in (root / "report" / "summary.md").read_text()
    assert cli.main(["export", str(root / "results"), "-o", str(root / "rows.jsonl"), "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in (root / "rows.jsonl").read_text().splitlines()]
    assert {row["verdict"] for row in rows if row["kind"] == "gate"} == {"not judged"}
    capsys.readouterr()
    assert cli.main(["history", "show", "scenario::hf-cpu-bf16", "--db", db, "--metric", "tpot"]) == 0
    assert "not judged" in capsys.readouterr().out


def test_run_exits_4_under_fail_on_unknown(night):
    root, _, run, _ = night
    code, printed = main(*run, "--no-progress", "--resume", "--fail-on-unknown")  # the stored record, kept
    assert code == 4 and CLOSING in printed, printed


def test_gate_against_a_baseline_lists_it_and_exits_4_only_when_asked(night):
    root, _, _, _ = night
    baselines = ["--baselines-dir", root / "b"]
    assert main("baseline", "save", root / "results", "--name", "base", *baselines)[0] == 0
    gate = ["gate", root / "results", "--baseline", "base", *baselines]
    code, out = main(*gate)
    assert code == 0, out
    assert f"NOT JUDGED scenario::hf-cpu-bf16: correctness: {WHY}" in out
    assert "not judged: 1 point(s) passed top-k" in out and "regression check vs base: PASS" in out
    code, out = main(*gate, "--fail-on-unknown", "--json", root / "gate.json")
    assert code == 4, out
    saved = json.loads((root / "gate.json").read_text())
    assert saved["exit_code"] == 4 and saved["not_judged"][0]["point_id"] == "hf-cpu-bf16"


def test_the_pytest_plugin_passes_the_item_says_why_and_exits_4_only_when_asked(pytester, tiny_llama):
    path = pytester.path / "scenarios" / "few.yaml"
    path.parent.mkdir()
    path.write_text(SCENARIO.lstrip())
    options = ["scenarios/", "-p", "no:cacheprovider", "--harness-isolation", "none", "--harness-no-energy"]
    result = pytester.runpytest(*options)
    result.assert_outcomes(passed=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*harness correctness gate*", f"NOT JUDGED few::hf-cpu-bf16: {WHY}", f"{CLOSING}*"])
    result = pytester.runpytest(*options, "--harness-fail-on-unknown")
    result.assert_outcomes(passed=1)
    assert result.ret == 4
