"""What the regression check (``harness gate``, and the pytest plugin's end-of-session check) prints and
writes from its result (``harness.regression.entry.RegressionResult``): its lines point by point and its JSON
(``--json``; pytest ``--harness-regression-json``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.regression.entry import RegressionResult


def regression_report(result: RegressionResult, fail_on_unknown_flag: str = "--fail-on-unknown") -> list[str]:
    """Lines explaining a regression-check result, point by point (the flag named as the front-end spells it)."""
    from harness.regression import verdicts

    outcome, baseline_name = result.outcome, result.baseline
    lines = [str(finding) for finding in [*outcome.findings, *outcome.incomparable, *outcome.not_judged]]
    lines += [str(finding) for finding in [*outcome.known, *outcome.fixed]]
    lines += [str(change) for change in outcome.verdict_changes]
    lines += [verdicts.line(test) for test in outcome.tests]
    lines += [f"note {note}" for note in outcome.notes]
    if outcome.findings:
        verdict = f"FAIL ({len(outcome.findings)} problem(s))"
    elif outcome.incomparable:
        verdict = f"INCOMPARABLE ({len(outcome.incomparable)} point(s) with another fingerprint; neither pass nor fail)"
    else:
        verdict = "PASS"
    unknown = len(outcome.unknown)
    if unknown:
        lines.append(
            f"inconclusive: {unknown} of {len(outcome.tests)} launch-level comparison(s) neither different nor "
            f"the same (UNKNOWN lines: the launches that would decide them); {fail_on_unknown_flag} exits 4 on them"
        )
    if outcome.not_judged:
        lines.append(
            f"not judged: {len(outcome.not_judged)} point(s) passed top-k with too few teacher-forced positions "
            f"for the KL tier (NOT JUDGED lines); {fail_on_unknown_flag} exits 4 on them"
        )
    counts = {word: sum(t.verdict == word for t in outcome.tests) for word in (verdicts.DIFFERENT, verdicts.SAME)}
    tally = (
        f"; {counts[verdicts.DIFFERENT]} different, {counts[verdicts.SAME]} same, {unknown} unknown"
        if outcome.tests
        else ""
    )
    known = "".join(
        f"; {len(found)} {what}"
        for found, what in (
            (outcome.known, "known failure(s) still failing"),
            (outcome.fixed, "known failure(s) fixed"),
        )
        if found
    )
    lines.append(f"regression check vs {baseline_name}: {verdict}; {outcome.compared} point(s) compared{tally}{known}")
    return lines


def regression_json(result: RegressionResult) -> dict:
    """``harness gate --json``: the result as data — the overall verdict and exit status, every problem,
    every launch-level test with its three-outcome verdict, interval and detectable change, and the notes."""
    import math
    from dataclasses import asdict

    def finite(value):
        return None if isinstance(value, float) and not math.isfinite(value) else value

    def test_row(test) -> dict:
        row = {k: finite(v) for k, v in asdict(test).items() if k not in ("base_values", "new_values")}
        return {**row, "base_values": list(test.base_values), "new_values": list(test.new_values)}

    outcome = result.outcome
    verdict = "fail" if outcome.findings else "incomparable" if outcome.incomparable else "pass"
    return {
        "baseline": result.baseline,
        "verdict": verdict,
        "exit_code": result.exit_code,
        "compared": outcome.compared,
        "fdr": outcome.fdr,
        "launch_test": result.settings.launch_test,
        "findings": [
            {"scenario": f.scenario, "point_id": f.point_id, "kind": f.kind, "metric": f.metric, "message": f.message}
            for f in [*outcome.findings, *outcome.incomparable]
        ],
        "tests": [test_row(test) for test in outcome.tests],
        "verdict_changes": [asdict(change) for change in outcome.verdict_changes],
        "inconclusive": len(outcome.unknown),
        "not_judged": [
            {"scenario": f.scenario, "point_id": f.point_id, "message": f.message} for f in outcome.not_judged
        ],
        "known_failures": [
            {"scenario": f.scenario, "point_id": f.point_id, "message": f.message} for f in outcome.known
        ],
        "fixed": [{"scenario": f.scenario, "point_id": f.point_id, "message": f.message} for f in outcome.fixed],
        "notes": list(outcome.notes),
    }


def save_regression_json(path, result: RegressionResult) -> None:
    """Write ``regression_json`` atomically: ``harness gate --json`` and pytest's ``--harness-regression-json``."""
    from harness.io import write_json_atomic

    write_json_atomic(path, regression_json(result))
