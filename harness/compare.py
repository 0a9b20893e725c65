"""Side-by-side ratios of two runs, point by point (in the manner of llama.cpp's compare script)."""

from __future__ import annotations

from typing import Iterable

from harness.regression import index
from harness.results import Record


def _ratio(numerator, denominator):
    return None if numerator is None or denominator in (None, 0) else numerator / denominator


def comparison(baseline: Iterable[Record], new: Iterable[Record]):
    """A DataFrame, one row per point in either run: the figures of both and their ratios.

    ``speedup`` is baseline ms/token over new (above 1 is faster), ``ttft_speedup`` likewise, and
    ``energy_ratio`` is new energy per token over baseline (below 1 uses less).
    """
    import pandas as pd

    base, now = index(baseline, "baseline"), index(new, "new records")
    rows = []
    for point in sorted(base.keys() | now.keys()):
        before, after = base.get(point), now.get(point)
        b = before.metrics if before else {}
        a = after.metrics if after else {}
        rows.append({
            "scenario": point[0],
            "point_id": point[1],
            "status_base": before.status if before else "missing",
            "status_new": after.status if after else "missing",
            "tpot_ms_base": b.get("tpot_ms"),
            "tpot_ms_new": a.get("tpot_ms"),
            "speedup": _ratio(b.get("tpot_ms"), a.get("tpot_ms")),
            "ttft_ms_base": b.get("ttft_ms"),
            "ttft_ms_new": a.get("ttft_ms"),
            "ttft_speedup": _ratio(b.get("ttft_ms"), a.get("ttft_ms")),
            "energy_per_token_mj_base": b.get("energy_per_token_mj"),
            "energy_per_token_mj_new": a.get("energy_per_token_mj"),
            "energy_ratio": _ratio(a.get("energy_per_token_mj"), b.get("energy_per_token_mj")),
            "gate_base": (before.correctness.get("verdict") if before else None),
            "gate_new": (after.correctness.get("verdict") if after else None),
            "top1_match_base": (before.correctness.get("top1_match_rate") if before else None),
            "top1_match_new": (after.correctness.get("top1_match_rate") if after else None),
        })
    return pd.DataFrame(rows)


def format_table(table) -> str:
    """Plain-text rendering for the terminal: the columns a reader scans first."""
    if table.empty:
        return "no points in either run"
    shown = table[["scenario", "point_id", "status_base", "status_new", "tpot_ms_base", "tpot_ms_new", "speedup",
                   "ttft_speedup", "energy_ratio", "gate_base", "gate_new"]].copy()
    shown = shown.astype(object).where(shown.notna(), "-")
    return shown.to_string(index=False, na_rep="-", float_format=lambda v: f"{v:.3g}")
