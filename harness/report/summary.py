"""The terminal summary of a run (``harness summary RESULTS``): per engine and device, is it right, how
fast, at what energy. Pure: records in, text out; labels and units from ``harness.records.metrics``."""

from __future__ import annotations

from typing import Iterable, Optional

from harness.records import metric_names
from harness.records.columns import has_interval, ok_launches, precision_columns, warnings
from harness.records.gate_verdicts import NOT_JUDGED
from harness.records.record import Record
from harness.records.verdict import account
from harness.report.readable import number, plus_minus, times_floor

ENERGY_REASONS = ("energy_per_token_mj", "energy_j", "energy_cpu_package_j")  # the first one that says why


def verdict(record: Record) -> str:
    """``pass, KL 1.2x floor`` / ``fail, KL 300x floor, diverges at token 3`` / ``not judged, KL tier not
    judged: 4 teacher-forced positions, fewer than gate.min_positions=8`` / ``no gate``."""
    gate = record.correctness
    if gate is None:
        return "no gate"
    if gate.skipped:
        return f"not checked: {gate.skipped}"
    parts = [gate.verdict or "-"]
    if gate.verdict == NOT_JUDGED:  # the reason and the count, not a KL figure nothing judged
        parts += gate.reasons
    elif gate.kl_ratio is not None:
        parts.append(f"KL {times_floor(gate.kl_ratio)} floor")
    elif gate.top1_match_rate is not None:
        parts.append(f"top-1 only, {gate.top1_match_rate:.0%} match")
    if gate.free_divergence_index is not None:
        parts.append(f"free-running diverges at token {gate.free_divergence_index}")
    return ", ".join(parts)


def _over_launches(record: Record, name: str) -> Optional[str]:
    """``value ± half-width unit (95 % CI, n launches)`` when two or more launches measured ``name``."""
    interval = record.samples.intervals.get(name)
    value = record.metrics.get(name)
    if not has_interval(interval):
        return None
    value = interval.estimate if value is None else value
    return (
        f"{plus_minus(value, interval.low, interval.high)} {metric_names.get(name).unit} "
        f"(95 % CI, {ok_launches(record)} launches)"
    )


def speed(record: Record) -> tuple[str, str]:
    """(TTFT, ms/token with its spread). Over two or more launches: each ± the half-width of its 95 %
    interval over launches; from one launch: ms/token median ± standard deviation of the inter-token gaps."""
    m = record.metrics
    ttft = f"{number(m.get('ttft_ms'))} {metric_names.get('ttft_ms').unit}" if m.get("ttft_ms") is not None else "-"
    ttft = _over_launches(record, "ttft_ms") or ttft
    launched = _over_launches(record, "tpot_ms")
    if launched:
        return ttft, launched
    if m.get("tpot_ms") is None:
        return ttft, "-"
    spread = m.get("ms_per_token_stddev")
    tpot = number(m["tpot_ms"]) + (f" ± {number(spread, 2)}" if spread is not None else "")
    return ttft, f"{tpot} {metric_names.get('tpot_ms').unit}"


def energy(record: Record) -> str:
    value = record.metrics.get("energy_per_token_mj")
    if value is not None:
        return f"{number(value)} {metric_names.get('energy_per_token_mj').unit}"
    for name in ENERGY_REASONS:
        if record.unavailable.get(name):
            return f"not measured: {record.unavailable[name]}"
    why = next((v for k, v in record.unavailable.items() if k.startswith("energy")), None)
    return f"not measured: {why}" if why else "not measured"


def _engine(record: Record) -> str:
    engine = record.engine.name
    return f"{record.point.get('adapter', '?')} ({engine})" if engine else str(record.point.get("adapter", "?"))


def _device(record: Record) -> str:
    device = str(record.point.get("device", "?"))
    return f"{device} (emulated)" if record.engine.emulated and "emulated" not in device else device


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def summarize(records: Iterable[Record], report: Optional[str] = None) -> str:
    """The answer per engine and device, in the order they ran; speed-up relative to the first ok row."""
    records = sorted(records, key=lambda r: (r.started_at is None, r.started_at or ""))  # the order they ran
    if not records:
        return "no records"
    ok = [r for r in records if r.status == "ok"]
    first_tpot = next((r.metrics.get("tpot_ms") for r in ok if r.metrics.get("tpot_ms")), None)
    head = [
        "engine",
        "device",
        "precision",
        "is it right (gate)",
        metric_names.get("ttft_ms").label,
        metric_names.get("tpot_ms").label,
        "speed-up",
        metric_names.get("energy_per_token_mj").label,
    ]
    rows = [head]
    for record in ok:
        ttft, tpot = speed(record)
        own = record.metrics.get("tpot_ms")
        speedup = f"{number(first_tpot / own)}x" if first_tpot and own else "-"
        precision = precision_columns(record)["precision"] or "-"  # two quantization levels of one engine differ
        rows.append([_engine(record), _device(record), precision, verdict(record), ttft, tpot, speedup, energy(record)])
    scenarios = sorted({r.scenario for r in records})
    outcome = account(records)
    lines = [f"{', '.join(scenarios)}: {outcome.count_line()}", ""]
    if ok:
        lines += _table(rows)
        lines.append("")
        lines.append(
            f"{metric_names.get('tpot_ms').label}: median over rounds ± the standard deviation of the "
            "inter-token gaps (with a 95 % CI over independent launches: ± its half-width, or [low, high] "
            "where it is lopsided); precision: what the engine ran at; speed-up: "
            "the first row's ms/token over each row's; KL: the gate's mean "
            "KL(reference || engine) as a multiple of the HF noise floor (drift above 5x by default)."
        )
    for record in records:
        if record.status == "skipped":  # failed and unfinished points: the verdict's lines below
            lines.append(f"{record.status.upper()} {record.scenario}::{record.point_id}: {record.reason}")
        lines += [f"WARNING {record.scenario}::{record.point_id}: {text}" for text in warnings(record)]
    lines += outcome.lines()[1:]  # the first is the count line, at the top
    if any(r.engine.emulated for r in ok):
        lines.append("emulated devices run the device's code path on the CPU: their timings are not the device's.")
    if report:
        lines += ["", f"report: {report}"]
    return "\n".join(lines)
