"""The regression check: thresholds, noise awareness, lost points and broken agreement."""

from __future__ import annotations

import re

import pytest

from harness.errors import UsageError
from harness.regression.check import check
from harness.regression.settings import RegressionSettings
from harness.regression.thresholds import parse_thresholds
from tests.records import record

DEFAULT = parse_thresholds("tpot=5%,ttft=10%,energy_per_token=10%")
POINTS = ["hf-cpu-bf16-seq128", "hf-cpu-bf16-seq256", "hf-cpu-bf16-seq512"]


def run(seed: int, slow: float = 1.0, **overrides):
    return [
        record(
            pid,
            tpot_ms=40.0 + 5 * i if pid != overrides.get("slow_point") else (40.0 + 5 * i) * slow,
            seed=seed + i,
            **{k: v for k, v in overrides.items() if k != "slow_point"},
        )
        for i, pid in enumerate(POINTS)
    ]


def test_thresholds_parse_aliases_and_metric_columns():
    parsed = {t.name: t for t in parse_thresholds("tpot=5%, ttft=10%, throughput=3%, peak_rss_mb=20%")}
    assert parsed["tpot"].metric == "tpot_ms" and parsed["tpot"].limit == pytest.approx(0.05)
    assert parsed["ttft"].limit == pytest.approx(0.1)
    assert parsed["throughput"].higher_is_better and not parsed["peak_rss_mb"].higher_is_better


@pytest.mark.parametrize(
    "text, message",
    [
        ("tpot=five", "'tpot=five': expected NAME=PERCENT"),
        ("latency=5%", "unknown metric 'latency'"),
        ("", "no thresholds given"),
        ("tpot=5", r"give the limit with %, e.g. tpot=5% \(or tpot=500% for the fraction 5\)"),  # was 500 %
        ("ttft=0.1", r"ttft=0.1%.*ttft=10%"),
    ],
)
def test_bad_thresholds_are_quoted_back(text, message):
    with pytest.raises(UsageError, match=message):
        parse_thresholds(text)


def test_an_unchanged_rerun_passes():
    outcome = check(run(seed=0), run(seed=100), RegressionSettings(DEFAULT))
    assert outcome.passed, outcome.findings
    assert outcome.compared == 3


def test_a_20_percent_ms_per_token_regression_fails_on_that_point_only():
    outcome = check(run(seed=0), run(seed=100, slow=1.2, slow_point="hf-cpu-bf16-seq256"), RegressionSettings(DEFAULT))
    assert [(f.point_id, f.kind) for f in outcome.findings] == [("hf-cpu-bf16-seq256", "regression")]
    assert re.search(r"tpot_ms 4\d\.\d+ -> 5\d\.\d+ \(\+2\d\.\d% worse; limit 5%", outcome.findings[0].message)


def test_a_regression_inside_the_measured_spread_is_not_reported():
    # 8 % slower, beyond the 5 % threshold, but whole rounds scatter by +-30 %: noise, not a regression
    tpot_only = parse_thresholds("tpot=5%")
    noisy_base = [record("p", tpot_ms=50.0, seed=1, jitter=0.3)]
    noisy_new = [record("p", tpot_ms=54.0, seed=1, jitter=0.3)]
    outcome = check(noisy_base, noisy_new, RegressionSettings(tpot_only))
    assert outcome.passed and any("within the measured spread" in n for n in outcome.notes)
    tight = check(
        [record("p", tpot_ms=50.0, seed=1)], [record("p", tpot_ms=54.0, seed=1)], RegressionSettings(tpot_only)
    )
    assert [f.kind for f in tight.findings] == ["regression"]


def test_broken_agreement_fails_even_when_faster():
    new = run(seed=100)
    new[0] = record(POINTS[0], tpot_ms=20.0, seed=7, verdict="fail")
    outcome = check(run(seed=0), new, RegressionSettings(DEFAULT))
    assert [(f.point_id, f.kind) for f in outcome.findings] == [(POINTS[0], "correctness")]
    assert "top-5 agreement fails: reference token 17" in outcome.findings[0].message


def test_missing_failed_and_now_skipped_points_fail():
    new = run(seed=100)
    new[1] = record(POINTS[1], status="failed")
    new[2] = record(POINTS[2], status="skipped")
    outcome = check(run(seed=0) + [record("hf-cpu-bf16-seq1024", seed=9)], new, RegressionSettings(DEFAULT))
    kinds = {f.point_id: f.kind for f in outcome.findings}
    assert kinds == {POINTS[1]: "failed", POINTS[2]: "skipped", "hf-cpu-bf16-seq1024": "missing"}
    assert "no record now" in str(next(f for f in outcome.findings if f.kind == "missing"))


def test_a_point_that_also_failed_in_the_baseline_is_a_note_not_a_finding():
    base = [record("p", status="failed")]
    outcome = check(base, [record("p", status="failed")], RegressionSettings(DEFAULT))
    assert outcome.passed and outcome.notes == ["demo::p: still failed, as in the baseline"]


def test_higher_is_better_metrics_regress_when_they_fall():
    slower = check(
        [record("p", tpot_ms=50.0, seed=1)],
        [record("p", tpot_ms=60.0, seed=2)],
        RegressionSettings(parse_thresholds("decode_tokens_per_s=5%")),
    )
    assert [f.kind for f in slower.findings] == ["regression"]
    faster = check(
        [record("p", tpot_ms=60.0, seed=1)],
        [record("p", tpot_ms=50.0, seed=2)],
        RegressionSettings(parse_thresholds("decode_tokens_per_s=5%")),
    )
    assert faster.passed


def test_energy_regressions_without_spread_use_the_threshold_and_say_so():
    outcome = check(
        [record("p", energy_per_token_mj=10.0, seed=1)],
        [record("p", energy_per_token_mj=12.0, seed=1)],
        RegressionSettings(DEFAULT),
    )
    assert [f.kind for f in outcome.findings] == ["regression"]
    assert any("one value per run" in note for note in outcome.notes)


def test_scope_limits_which_baseline_points_must_be_present():
    outcome = check(run(seed=0), run(seed=100)[:1], RegressionSettings(DEFAULT), scope={("demo", POINTS[0])})
    assert outcome.passed


def test_duplicate_points_are_refused_with_a_hint():
    with pytest.raises(UsageError, match="appears twice.*harness merge"):
        check(run(seed=0), run(seed=1) + run(seed=2), RegressionSettings(DEFAULT))


def test_the_regression_check_names_no_gate_in_its_code():
    """ "gate" names the correctness gate; the code of the regression check (behind the `harness gate`
    command), its options and output and the pytest plugin's end-of-session check say "regression", so a
    reader never mistakes one for the other."""
    import ast
    from pathlib import Path

    import harness.cli.regression_options
    import harness.cli.regression_output
    import harness.pytest_plugin.session
    import harness.regression

    def identifiers(path: Path):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                yield node.name
            elif isinstance(node, ast.Name):
                yield node.id
            elif isinstance(node, ast.Attribute):
                yield node.attr
            elif isinstance(node, ast.alias):
                yield node.asname or node.name
            elif isinstance(node, ast.arg):
                yield node.arg

    files = [
        *Path(harness.regression.__file__).parent.glob("*.py"),
        Path(harness.cli.regression_options.__file__),
        Path(harness.cli.regression_output.__file__),
        Path(harness.pytest_plugin.session.__file__),
    ]
    named = {f"{p.name}: {name}" for p in files for name in identifiers(p) if "gate" in name.lower()}
    assert not named


def test_both_front_ends_parse_their_options_into_the_same_settings():
    """One parser (``regression_settings``) turns `harness gate`'s options and the pytest plugin's (the same
    definitions with the ``harness-`` prefix) into one ``RegressionSettings``; a bad value names the
    option as that front end spells it."""
    import argparse

    from harness.cli.regression_options import add_baseline_options, add_regression_options, regression_settings

    def parse(prefix, *argv):
        parser = argparse.ArgumentParser()
        add_regression_options(parser.add_argument, prefix=prefix, required=False)
        add_baseline_options(parser.add_argument, prefix=prefix)
        return regression_settings(
            parser.parse_args([f"--{prefix}{arg}" if i % 2 == 0 else arg for i, arg in enumerate(argv)]), prefix
        )

    given = ("baseline", "n", "max-regression", "tpot=3%", "fdr", "0.1", "accept-difference", "engine")
    gate, plugin = parse("", *given), parse("harness-", *given)
    assert gate == plugin
    assert [(t.metric, t.limit) for t in gate.thresholds] == [("tpot_ms", 0.03)]
    assert (gate.fdr, gate.accept, gate.launch_test, gate.baseline) == (0.1, frozenset({"engine"}), "mann-whitney", "n")
    with pytest.raises(UsageError, match="--harness-fdr: expected a false discovery rate"):
        parse("harness-", "fdr", "2")
