"""Acceptance: a pytest run's `--benchmark-json` file is a full input to `harness export` and `harness report`
— driven through pytest and the harness command on a real tiny engine (transformers, tiny-llama)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness import cli
from tests.tiny_scenario import tiny

pytest.importorskip("torch")


def scenario_text(*adapters: str) -> str:
    return tiny(
        measurement={"min_rounds": 2, "threads": 1},
        gate={"k": 5, "tokens": 4, "prompts": ["The river bank"]},
        sweep={"adapter": list(adapters or ["hf"]), "device": ["cpu"]},
    )


@pytest.fixture(scope="module")
def benchmark_json(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench")
    (root / "scenario.yaml").write_text(scenario_text())
    argv = [sys.executable, "-m", "pytest", "scenario.yaml", "--benchmark-json", "out.json", "-p", "no:cacheprovider"]
    argv += ["--harness-isolation", "none", "--harness-no-energy", "--harness-reference-dir", "refs", "-q"]
    done = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return root / "out.json"


def test_export_of_a_benchmark_json_has_the_tokens_and_the_gate_positions(benchmark_json, tmp_path):
    out = tmp_path / "rows.jsonl"
    assert cli.main(["export", str(benchmark_json), "-o", str(out), "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    kinds = {row["kind"] for row in rows}
    assert kinds == {"token", "gate", "class", "flips"}, kinds  # the gate's token classes and flip rate too
    assert sum(row["kind"] == "token" for row in rows) == 2 * 4  # two rounds of four tokens


def test_report_of_a_benchmark_json_draws_the_per_token_and_kl_plots(benchmark_json, tmp_path):
    assert cli.main(["report", str(benchmark_json), "-o", str(tmp_path / "report")]) == 0
    plots = {p.name for p in (tmp_path / "report" / "plots").rglob("*.png")}
    assert any("token" in name for name in plots) and any("kl" in name for name in plots), plots


def test_an_export_with_nothing_to_write_fails(tmp_path, capsys):
    empty = {"machine_info": {}, "benchmarks": []}
    (tmp_path / "empty.json").write_text(json.dumps(empty))
    assert cli.main(["export", str(tmp_path / "empty.json"), "-o", str(tmp_path / "x.jsonl"), "--format", "jsonl"]) == 1
    assert "hold no timed rounds" in capsys.readouterr().err


def test_a_known_failure_keeps_its_timings_and_record_in_the_benchmark_json(pytester, tiny_llama):
    """An xfail point (a gate failure listed under known_failures) ran and was timed: pytest-benchmark's JSON
    keeps its entry, so reports and the regression check see it."""
    from harness.adapters import registry
    from tests.correctness.test_gate import BrokenHF

    pytester.makefile(
        ".yaml",
        scenario=scenario_text("hf", "hf-broken")
        + "known_failures:\n  - match: {adapter: hf-broken}\n    reason: stale KV cache, bug 1\n",
    )
    registry.register_adapter(BrokenHF)
    try:
        result = pytester.runpytest(
            "scenario.yaml", "--benchmark-json", "out.json", "--harness-isolation", "none", "--harness-no-energy"
        )
    finally:
        registry.unregister_adapter("hf-broken")
    result.assert_outcomes(passed=1, xfailed=1)
    names = {b["name"]: b for b in json.loads((pytester.path / "out.json").read_text())["benchmarks"]}
    broken = names["hf-broken-cpu-bf16"]
    assert broken["stats"]["rounds"] > 0 and broken["extra_info"]["gate_verdict"] == "fail"
    assert broken["extra_info"]["harness_record"]["correctness"]["verdict"] == "fail"
