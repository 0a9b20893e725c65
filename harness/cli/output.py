"""What the command line prints about records: the run table, the run's time split and the verify verdict lines.

Labels and units come from the metric catalogue; figures a point lacks print as ``-``.
"""

from __future__ import annotations

from harness.records import metric_names
from harness.records.columns import TIME_SPLIT, TIMED, has_interval, ok_launches, warnings
from harness.report.readable import lopsided, number


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
    test = gate.test
    if test is not None:
        parts.append(
            f"paired KL {test.rise:.1f}x floor (>= {test.rise_low:.2g}x, {test.margin:.2g}x the {test.line:g}x line, "
            f"{test.positions} positions; detects {test.detectable:.1f}x at 80 % power)"
        )
    phases = gate.phases
    if phases is not None and phases.prefill.kl_ratio is not None:  # its positions: gate.prefill_positions x prompts
        pooled = ", pooled" if phases.prefill.pooled else ""
        parts.append(
            f"prefill phase {phases.prefill.kl_ratio:.1f}x its floor ({phases.prefill.positions} positions{pooled})"
        )
    if phases is not None and phases.decode.kl_ratio is not None:
        parts.append(f"decode phase {phases.decode.kl_ratio:.1f}x its floor")
    if gate.tie_margin is not None:  # every top-k check's (harness.correctness.ties); its near ties in the notes
        where = (  # older records: no margin at the prefill positions
            "not at prefill positions"
            if gate.prefill_tie_line is None
            else f"at prefill positions where the position's KL <= {gate.prefill_tie_line:.3g} nats"
        )
        parts.append(f"top-{gate.k} tie margin {gate.tie_margin:g} nats ({where})")
    parts += gate.notes
    if gate.power is not None:
        parts.append(
            f"power: {gate.power.prompts} prompts ({gate.power.positions} positions) detect "
            f"{_fmt(gate.power.detectable)}x (target {gate.power.target:g}x)"
            + (f": {gate.power.why}" if gate.power.why else "")
        )
    path = gate.path
    if path is not None:
        how = ", ".join(
            filter(
                None,
                [
                    f"{path.cache} cache" if path.cache else None,
                    f"prefill chunks of {path.prefill_chunk}" if path.prefill_chunk else None,
                    "+".join(path.checks),
                ],
            )
        )
        parts.append(f"gated on {path.device} ({how})")
    same = gate.same_weights
    if same is not None and same.verdict is not None:
        parts.append(f"own weights {same.verdict}" + (f" ({same.kl_ratio:.1f}x)" if same.kl_ratio is not None else ""))
    audit = same.dequantized if same is not None else None
    if audit is not None and audit.verdict is not None:
        parts.append(
            f"dequantized artefact {audit.verdict} ({audit.ratio:.1f}x)" if audit.ratio else "dequantized artefact fail"
        )
        if audit.bias is not None:  # the sign test: its own ratio, against a line of 1
            parts[-1] += f", bias {audit.bias.verdict} ({audit.bias.kind} {audit.bias.ratio:.1f}x line)"
    parts.append(f"first divergence {gate.free_divergence_index}")
    if gate.text_path is not None:
        parts.append(f"text path: {gate.text_path.summary()}")
    for label, check in (("token classes", gate.classes), ("beams", gate.beams), ("stopping", gate.stopping)):
        if check is not None and check.skipped is None:
            parts.append(f"{label} {check.summary()}")
    line = f"{gate.verdict.upper():<6} {name}: {', '.join(parts)}"
    model = same.dequantized_model if same is not None else None
    if model is not None:  # its own line: the kernel question, apart from the quantization one
        line += "\n       same weights (dequantized, transformers): " + (
            f"not run: {model.skipped}"
            if model.verdict is None
            else f"KL {_fmt(model.kl_ratio)}x floor ({model.verdict})"
        )
    return line


def not_judged_line(records) -> str | None:
    """The closing line of a run with points whose gate is NOT JUDGED, or None."""
    count = sum(r.not_judged for r in records)
    if not count:
        return None
    return (
        f"NOT JUDGED: {count} point(s) passed top-k but had too few teacher-forced positions for the KL tier "
        "(raise gate.tokens or gate.prompts, set gate.power to add shipped prompts, or lower gate.min_positions); "
        "--fail-on-unknown exits 4 on them"
    )


def not_judged_lines(records) -> list[str]:
    """A line per point whose gate is NOT JUDGED, with why, then the closing line (none when there is none)."""
    points = [
        f"NOT JUDGED {r.scenario}::{r.point_id}: {'; '.join(r.correctness.reasons)}"
        for r in records
        if r.not_judged and r.correctness is not None
    ]
    return [*points, *filter(None, [not_judged_line(records)])]


def _fmt(value, digits=1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


# The run table's metrics: (name, decimals); headers are the catalogue's labels and units.
RUN_TABLE = (("ttft_ms", 1), ("tpot_ms", 1), ("ms_per_token_p90", 1), ("decode_tokens_per_s", 1), ("peak_rss_mb", 0))


def figure(record, name: str, digits: int = 1) -> str:
    """A metric as the run table shows it: ``value ± half-width`` of its 95 % interval over launches when
    two or more launches measured it, the plain value otherwise, ``-`` when missing."""
    value = record.metrics.get(name)
    interval = record.samples.intervals.get(name)
    if not has_interval(interval):
        return _fmt(value, digits)
    if value is None:
        value = interval.estimate
    if lopsided(value, interval.low, interval.high):  # both ends: a ± would read below zero or hide the skew
        return f"{_fmt(value, digits)} [{number(interval.low)}, {number(interval.high)}]"
    return f"{_fmt(value, digits)} ± {_fmt((interval.high - interval.low) / 2, max(digits, 1) + 1)}"


def _aligned(rows: list[list[str]], left: int) -> list[str]:
    """Rows of cells padded to their column's width: the first ``left`` columns left-aligned, the rest right."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) if i < left else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
        for row in rows
    ]


def run_table_lines(records) -> list[str]:
    """One line per point: its headline figures (± the 95 % interval over launches where there are two or
    more), how many launches measured it and the gate's verdict; then why it failed, the gate's report or
    the launches' warnings (drift, a noisy machine)."""
    rows = [
        ["point", "status", *(metric_names.get(name).label for name, _ in RUN_TABLE), "launches", "gate"],
        ["", "", *(metric_names.get(name).unit for name, _ in RUN_TABLE), "", ""],
    ]
    notes: list[list[str]] = []
    seen = detectable_lines(records)
    for r in records:
        launches = ok_launches(r)
        rows.append(
            [
                f"{r.scenario}::{r.point_id}",
                r.status,
                *(figure(r, name, digits) for name, digits in RUN_TABLE),
                "-" if launches is None else str(launches),
                r.verdict or "-",
            ]
        )
        below = []
        if r.status != "ok":
            below.append(str(r.reason))
        elif r.correctness and r.correctness.skipped:
            below.append(f"gate not run: {r.correctness.skipped}")
        elif r.correctness and r.correctness.report:
            below.append(r.correctness.report.replace("\n", "\n    "))
        if r.status == "ok" and r.accuracy is not None and r.accuracy.verdict == "fail":  # the gate column says pass
            below.append(
                "accuracy FAIL: task accuracy below its non-inferiority margin: "
                + "; ".join(r.accuracy.failed_margins())
            )
        if r.known_failure is not None:
            below.append(
                f"known failure: {r.known_failure.reason}" + (" (now passes)" if r.known_failure_fixed else "")
            )
        below += [f"warning: {text}" for text in warnings(r)]
        below += seen.get((r.scenario, r.point_id), [])
        notes.append(below)
    header, units, *body = _aligned(rows, left=2)
    lines = [header, units, "-" * len(header)]
    for line, below in zip(body, notes):
        lines += [line, *(f"    {text}" for text in below)]
    if any(has_interval(i) for r in records for i in r.samples.intervals.values()):
        lines.append(
            "±: half-width of the 95 % confidence interval over launches ([low, high]: its ends, where it is lopsided)"
        )
    return lines


def detectable_lines(records, thresholds=None, fdr: float | None = None) -> dict[tuple[str, str], list[str]]:
    """Per point with two or more launches: the smallest worsening ``harness gate`` (default thresholds and
    FDR, a baseline measured alike) would call different in 80 % of nights, with the noise it rests on. Named
    for what it assumes: a baseline with this run's noise and launch count; ``harness gate`` prints its own
    figure from both sides' pooled noise and their actual launches ("detectable change with both sides'
    noise"), so the two differ when the baseline is noisier or has other launch counts."""
    from harness.regression import launch_power
    from harness.regression.thresholds import DEFAULT_FDR, DEFAULT_THRESHOLDS, parse_thresholds

    thresholds = thresholds or parse_thresholds(DEFAULT_THRESHOLDS)
    fdr = DEFAULT_FDR if fdr is None else fdr
    ok = [r for r in records if r.status == "ok"]
    tests = sum(len(launch_power.testable(r, thresholds)) for r in ok)
    level = launch_power.alpha(fdr, tests)
    out = {}
    for r in ok:
        found = launch_power.detectable(r, thresholds, level)
        if found:
            launches = found[0].launches
            out[(r.scenario, r.point_id)] = [
                f"detectable change if the baseline has this run's noise (80 % power, {launches} vs {launches} "
                f"launches, FDR {fdr:g} over {tests} test(s)): {', '.join(d.describe() for d in found)}"
            ]
    return out


def run_table(records) -> None:
    """The table ``harness run`` prints (``run_table_lines``)."""
    print("\n".join(run_table_lines(records)))


def time_split_table(records) -> str:
    """Where a sweep's time went: each part of the records' time splits summed over the records, in
    seconds and as a share of the total, the timed (measured inference) part marked. Records without a
    time split are left out, and counted in a note."""
    split = [r.time_split for r in records if r.time_split is not None]
    missing = len(records) - len(split)
    note = f"{missing} of {len(records)} point(s) have no time split (nothing recorded it): left out"
    if not split:
        return f"time split: {note}"
    seconds = {field: sum(getattr(s, field) for s in split) for field, _ in TIME_SPLIT}
    total = sum(seconds.values())

    def share(value: float) -> str:  # fixed decimals: a column of tiny parts stays readable
        return f"{100 * value / total:.1f} %" if total > 0 else "-"

    rows = [["", "part", "seconds", "share"]]
    rows += [
        ["*" if field == TIMED else "", label, f"{seconds[field]:.2f}", share(seconds[field])]
        for field, label in TIME_SPLIT
    ]
    rows.append(["", "total", f"{total:.2f}", share(total)])
    body = _aligned(rows, left=2)
    timed_label = dict(TIME_SPLIT)[TIMED]
    lines = [
        f"where the time went ({len(split)} point(s), summed over their launches):",
        *body[:-1],
        "-" * len(body[0]),
        body[-1],
        f"* {timed_label}: {share(seconds[TIMED])} of {total:.2f} s",
    ]
    if missing:
        lines.append(f"note: {note}")
    return "\n".join(lines)
