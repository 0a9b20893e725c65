"""Acceptance: a point whose task accuracy fails its non-inferiority margin fails `harness run` and also the
nightly's regression check (`harness gate`, and pytest's `--harness-baseline`) — on a real tiny engine
(transformers tiny-llama at fp32, scored against the bf16 reference: the perplexity moves, so a margin of
99.99 % cannot be met on six items)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness import cli

pytest.importorskip("torch")
pytest.importorskip("lm_eval")

SCENARIO = """
name: acc
model: {source: tiny-llama, dtype: fp32}
generation: {max_new_tokens: 2}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}
accuracy: {tasks: [harness_cloze], limit: 6, non_inferiority: {harness_cloze: {perplexity: 0.9999}}}
sweep:
  adapter: [hf]
"""


def test_a_failed_margin_fails_the_regression_check(tmp_path, capsys):
    (tmp_path / "acc.yaml").write_text(SCENARIO.lstrip())
    argv = ["run", str(tmp_path / "acc.yaml"), "--results", str(tmp_path / "r"), "--isolation", "none"]
    assert cli.main([*argv, "--no-progress", "--no-energy"]) == 1  # the margin fails the run ...
    lines = capsys.readouterr().out.rstrip().splitlines()  # ... and the output says so, not just `ok` and `pass`
    margin = "task accuracy below its non-inferiority margin: harness_cloze.perplexity"
    assert any(line.strip().startswith(f"accuracy FAIL: {margin}") for line in lines), lines  # under its row
    assert any(line.startswith(f"FAILED acc::hf-cpu-fp32: {margin}") for line in lines), lines
    assert lines[-1] == "exit 1: 1 point(s) failed"
    assert cli.main(["summary", str(tmp_path / "r")]) == 0
    summary = capsys.readouterr().out
    assert "1 ok point(s) failed a verdict (gate or accuracy margin)" in summary, summary
    assert f"FAILED acc::hf-cpu-fp32: {margin}" in summary
    assert (
        cli.main(["baseline", "save", str(tmp_path / "r"), "--name", "b", "--baselines-dir", str(tmp_path / "b")]) == 0
    )
    capsys.readouterr()
    gate = ["gate", str(tmp_path / "r"), "--baseline", "b", "--baselines-dir", str(tmp_path / "b")]
    assert cli.main([*gate, "--max-regression", "tpot=1000%,ttft=1000%"]) == 1  # ... and the nightly's check
    out = capsys.readouterr().out
    assert "FAIL acc::hf-cpu-fp32: accuracy: non-inferiority margin fails: harness_cloze.perplexity" in out, out


def test_refresh_reference_recomputes_the_accuracy_reference(tmp_path):
    """Each `harness run` is its own process, as a user's are."""
    (tmp_path / "acc.yaml").write_text(
        SCENARIO.replace(", non_inferiority: {harness_cloze: {perplexity: 0.9999}}", "").lstrip()
    )
    argv = [sys.executable, "-m", "harness.cli", "run", str(tmp_path / "acc.yaml"), "--results", str(tmp_path / "r")]
    argv += ["--isolation", "none", "--no-progress", "--no-energy"]

    def run(*extra):
        done = subprocess.run([*argv, *extra], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    run()
    (stored,) = (tmp_path / "r" / "references").glob("accuracy-*.json")
    first = stored.stat().st_mtime_ns
    run()
    assert stored.stat().st_mtime_ns == first  # reused
    run("--refresh-reference")
    assert stored.stat().st_mtime_ns > first  # recomputed (it was reused before the fix)
