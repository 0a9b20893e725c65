"""Acceptance: a baseline from another configuration is incomparable, not a pass or a fail — through
`harness run`, `harness baseline save`, `harness gate` and `harness compare` on a real tiny engine
(transformers, tiny-llama); the fingerprint that differs here is the engine's thread count."""

from __future__ import annotations

import pytest

from harness import cli
from harness.errors import EXIT_INCOMPARABLE
from tests.tiny_scenario import tiny

pytest.importorskip("torch")


def scenario_text(threads: int) -> str:
    return tiny(
        name="fp", measurement={"min_rounds": 2, "threads": threads}, sweep={"adapter": ["hf"], "device": ["cpu"]}
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("fp")
    for threads in (1, 2):
        (root / f"t{threads}.yaml").write_text(scenario_text(threads))
        argv = ["run", str(root / f"t{threads}.yaml"), "--results", str(root / f"t{threads}")]
        assert cli.main([*argv, "--isolation", "none", "--no-progress", "--no-energy"]) == 0
    assert cli.main(["baseline", "save", str(root / "t1"), "--name", "one", "--baselines-dir", str(root / "b")]) == 0
    return root


def gate(root, source, *extra):
    loose = ["--max-regression", "tpot=1000%,ttft=1000%"]  # timings here only exercise the path
    return cli.main(
        ["gate", str(root / source), "--baseline", "one", "--baselines-dir", str(root / "b"), *loose, *extra]
    )


def test_gate_calls_another_thread_count_incomparable_and_names_the_field(runs, capsys):
    capsys.readouterr()
    assert gate(runs, "t2") == EXIT_INCOMPARABLE
    out = capsys.readouterr().out
    assert "INCOMPARABLE fp::hf-cpu-bf16: threads: '1' -> '2'" in out and "--accept-difference threads" in out, out
    assert "neither pass nor fail" in out


def test_gate_compares_when_the_difference_is_accepted(runs, capsys):
    capsys.readouterr()
    code = gate(runs, "t2", "--accept-difference", "threads")  # judged on its figures: pass or fail, not 3
    out = capsys.readouterr().out
    assert code in (0, 1) and "INCOMPARABLE" not in out and "1 point(s) compared" in out, out


def test_gate_on_the_same_configuration_is_comparable(runs, capsys):
    assert gate(runs, "t1") == 0


def test_compare_says_incomparable_with_its_own_exit_status(runs, capsys):
    argv = ["compare", "one", str(runs / "t2"), "--baselines-dir", str(runs / "b")]
    assert cli.main(argv) == EXIT_INCOMPARABLE
    assert "INCOMPARABLE fp::hf-cpu-bf16: threads" in capsys.readouterr().err
    assert cli.main([*argv, "--accept-difference", "threads"]) == 0


def test_an_unknown_accepted_field_is_a_usage_error(runs, capsys):
    assert gate(runs, "t2", "--accept-difference", "colour") == 2
    assert "unknown field(s) colour" in capsys.readouterr().err
