"""Side-by-side ratios of two runs, point by point (in the manner of llama.cpp's compare script)."""

from __future__ import annotations

from typing import Iterable, Optional

from harness.records import metric_names
from harness.records.columns import has_interval, ok_launches
from harness.records.record import Record
from harness.regression.check import index
from harness.report.readable import plus_minus


def _ratio(numerator, denominator):
    return None if numerator is None or denominator in (None, 0) else numerator / denominator


def improvement(metric: str, before: Optional[float], after: Optional[float]) -> Optional[float]:
    """Above 1 is better, whatever the metric's direction in the catalogue."""
    return _ratio(after, before) if metric_names.get(metric).higher_is_better else _ratio(before, after)


# (ratio column, metric, ratio of the two runs)
RATIOS = (
    ("speedup", "tpot_ms", improvement),
    ("ttft_speedup", "ttft_ms", improvement),
    ("energy_ratio", "energy_per_token_mj", lambda metric, before, after: _ratio(after, before)),
)


def _interval(record: Optional[Record], metric: str) -> tuple[Optional[float], Optional[float]]:
    """The 95 % interval over launches of ``metric`` in ``record``: (low, high), (None, None) without one."""
    interval = record.samples.intervals.get(metric) if record else None
    return (interval.low, interval.high) if has_interval(interval) else (None, None)


def comparison(baseline: Iterable[Record], new: Iterable[Record], accept: frozenset[str] = frozenset()):
    """A DataFrame, one row per point in either run: the figures of both with their 95 % intervals over
    launches (``<metric>_ci_low_base`` ...) and launch counts, and their ratios.

    ``speedup`` is baseline ms/token over new (above 1 is faster), ``ttft_speedup`` likewise, and
    ``energy_ratio`` is new energy per token over baseline (below 1 uses less). ``incomparable`` names the
    fingerprint fields (``harness.records.fingerprint``) in which the two records differ, less ``accept``.
    """
    import pandas as pd

    from harness.records.fingerprint import differences

    base, now = index(baseline, "baseline"), index(new, "new records")
    rows = []
    for point in sorted(base.keys() | now.keys()):
        before, after = base.get(point), now.get(point)
        b = before.metrics if before else {}
        a = after.metrics if after else {}
        row = {
            "scenario": point[0],
            "point_id": point[1],
            "status_base": before.status if before else "missing",
            "status_new": after.status if after else "missing",
            "launches_base": ok_launches(before) if before else None,
            "launches_new": ok_launches(after) if after else None,
        }
        for column, metric, ratio in RATIOS:
            row[f"{metric}_base"], row[f"{metric}_new"] = b.get(metric), a.get(metric)
            row[f"{metric}_ci_low_base"], row[f"{metric}_ci_high_base"] = _interval(before, metric)
            row[f"{metric}_ci_low_new"], row[f"{metric}_ci_high_new"] = _interval(after, metric)
            row[column] = ratio(metric, b.get(metric), a.get(metric))
        row.update(
            {
                "gate_base": before.verdict if before else None,
                "gate_new": after.verdict if after else None,
                "top1_match_base": before.correctness.top1_match_rate if before and before.correctness else None,
                "top1_match_new": after.correctness.top1_match_rate if after and after.correctness else None,
            }
        )
        differ = differences(before, after, accept) if before and after else []
        row["incomparable"] = "; ".join(map(str, differ)) or None
        rows.append(row)
    return pd.DataFrame(rows)


def _with_interval(table, metric: str, side: str):
    """``value ± half-width`` text of one side's figure (the plain value without an interval)."""
    import pandas as pd

    def bare(v):
        return None if pd.isna(v) else v

    return [
        plus_minus(bare(v), bare(lo), bare(hi))
        for v, lo, hi in zip(
            table[f"{metric}_{side}"], table[f"{metric}_ci_low_{side}"], table[f"{metric}_ci_high_{side}"]
        )
    ]


def format_table(table) -> str:
    """Plain-text rendering for the terminal: the columns a reader scans first, ms/token of both runs
    ± the half-width of their 95 % intervals over launches, and how many launches measured each."""
    import pandas as pd

    if table.empty:
        return "no points in either run"
    shown = table[
        [
            "scenario",
            "point_id",
            "status_base",
            "status_new",
            "tpot_ms_base",
            "tpot_ms_new",
            "launches_base",
            "launches_new",
            "speedup",
            "ttft_speedup",
            "energy_ratio",
            "gate_base",
            "gate_new",
        ]
    ].copy()
    for side in ("base", "new"):
        shown[f"tpot_ms_{side}"] = _with_interval(table, "tpot_ms", side)
        shown[f"launches_{side}"] = [("-" if pd.isna(v) else str(int(v))) for v in table[f"launches_{side}"]]
    shown = shown.astype(object).where(shown.notna(), "-")
    text = shown.to_string(index=False, na_rep="-", float_format=lambda v: f"{v:.3g}")
    if table.filter(like="_ci_low_").notna().any().any():
        text += "\n±: half-width of the 95 % confidence interval over launches"
    return text
