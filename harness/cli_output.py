"""What the command line prints about records: the run table and the verify verdict lines.

Labels and units come from the metric catalogue; figures a point lacks print as ``-``.
"""

from __future__ import annotations

from harness import metrics


def verdict_line(name: str, gate) -> str:
    """One line per point for ``harness verify``. The top-1 gate (engines that expose only their chosen
    token) has no KL tier, so its line has no KL figures."""
    if gate is None or gate.verdict is None:
        return f"{'NOGATE':<6} {name}: {gate.skipped if gate else 'the scenario has no gate'}"
    parts = [f"top-{gate.k} {gate.mode}"]
    if gate.top1_match_rate is not None:
        parts.append(f"top-1 match {gate.top1_match_rate:.0%}")
    if gate.kl_mean is not None:
        ratio = f"{gate.kl_ratio:.1f}x" if gate.kl_ratio is not None else "-"
        floor = f"{gate.noise_floor:.3g}" if gate.noise_floor is not None else "-"
        parts.append(f"mean KL {gate.kl_mean:.3g} ({ratio} noise floor {floor})")
    else:
        parts.append("no KL tier")
    parts.append(f"first divergence {gate.free_divergence_index}")
    return f"{gate.verdict.upper():<6} {name}: {', '.join(parts)}"


def _fmt(value, digits=1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


# The run table's metrics: (name, column width, decimals); headers are the catalogue's labels and units.
RUN_TABLE = (("ttft_ms", 12, 1), ("tpot_ms", 10, 1), ("ms_per_token_p90", 12, 1), ("decode_tokens_per_s", 11, 1),
             ("peak_rss_mb", 8, 0))


def run_table(records) -> None:
    """The table ``harness run`` prints: one line per point, its headline figures and verdict."""
    labels = " ".join(f"{metrics.get(name).label:>{width}}" for name, width, _ in RUN_TABLE)
    units = " ".join(f"{metrics.get(name).unit:>{width}}" for name, width, _ in RUN_TABLE)
    print(f"{'point':<40} {'status':<8} {labels} {'gate':>6}")
    print(f"{'':<40} {'':<8} {units}")
    print("-" * (len(labels) + 57))
    for r in records:
        name = f"{r.scenario}::{r.point_id}"
        figures = " ".join(f"{_fmt(r.metrics.get(metric), digits):>{width}}" for metric, width, digits in RUN_TABLE)
        print(f"{name:<40} {r.status:<8} {figures} {r.verdict or '-':>6}")
        if r.status != "ok":
            print(f"    {r.reason}")
        elif r.correctness and r.correctness.skipped:
            print(f"    gate not run: {r.correctness.skipped}")
        elif r.correctness and r.correctness.report:
            print("    " + r.correctness.report.replace("\n", "\n    "))


def gate_report(outcome, baseline_name: str) -> list[str]:
    """Lines explaining a regression-gate outcome, point by point."""
    lines = [str(finding) for finding in outcome.findings]
    lines += [f"note {note}" for note in outcome.notes]
    verdict = "PASS" if outcome.passed else f"FAIL ({len(outcome.findings)} problem(s))"
    lines.append(f"regression gate vs {baseline_name}: {verdict}; {outcome.compared} point(s) compared")
    return lines
