"""KL by position: each gated point's mean KL per position bucket against the bucket's noise floor, as a
table (``gate_positions.csv``) and a plot, so a fault that starts at position N shows where
(``harness.correctness.positions``). Only points whose gate has position buckets appear."""

from __future__ import annotations

from typing import Optional

import pandas as pd

from harness.records.record import Record
from harness.report import render
from harness.report.plots import Plot, pyplot
from harness.report.sections.base import Context, Page, SectionOutput, table_markdown

NAME = "gate_positions"
TEMPLATE = "sections/positions.html.j2"
MAX_LINES = 10  # points per plot beyond which colours stop telling them apart
LINES = {"drift": (5.0, "#ef6c00"), "fail": (100.0, "#c62828")}


def _bucketed(records: list[Record]) -> list[Record]:
    return [r for r in records if r.status == "ok" and r.correctness is not None and r.correctness.buckets]


def table(records: list[Record]) -> pd.DataFrame:
    rows = [
        {
            "scenario": record.scenario,
            "point_id": record.point_id,
            "gate_length": record.correctness.length,
            "positions": f"{b.start}-{b.end}",
            "n": b.positions,
            "kl_mean": b.kl_mean,
            "noise_floor": b.noise_floor,
            "kl_ratio": b.kl_ratio,
            "verdict": b.verdict or "not judged",
        }
        for record in _bucketed(records)
        for b in record.correctness.buckets  # type: ignore[union-attr]
    ]
    return pd.DataFrame(rows)


def plot(records: list[Record]) -> Optional[Plot]:
    """KL / floor per bucket, one line per point, log scale, the drift and fail lines drawn."""
    shown = _bucketed(records)[:MAX_LINES]
    if not shown or all(len(r.correctness.buckets) < 2 for r in shown):  # type: ignore[union-attr, arg-type]
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(10, 4))
    edges = sorted({(b.start, b.end) for r in shown for b in r.correctness.buckets})  # type: ignore[union-attr]
    x = {edge: index for index, edge in enumerate(edges)}
    several = len({r.scenario for r in shown}) > 1
    for record in shown:
        buckets = record.correctness.buckets  # type: ignore[union-attr]
        label = f"{record.scenario}::{record.point_id}" if several else record.point_id
        ax.plot(
            [x[(b.start, b.end)] for b in buckets],
            [max(b.kl_ratio, 1e-2) for b in buckets],
            marker="o",
            linewidth=1.2,
            label=label,
        )
    for name, (level, colour) in LINES.items():
        ax.axhline(level, color=colour, linestyle=":", linewidth=1)
        ax.annotate(f"{name} ({level:g}x)", (0.0, level), xycoords=("axes fraction", "data"), fontsize=7, color=colour)
    ax.set_xticks(range(len(edges)), [f"{start}-{end}" for start, end in edges])
    ax.set_yscale("log")
    ax.set_xlabel("position in the sequence (bucket)")
    ax.set_ylabel("mean KL / the bucket's noise floor")
    ax.set_title("Correctness gate: KL by position")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    return Plot(
        "gate_positions",
        "Gate: KL by position bucket",
        fig,
        "Mean KL(reference || engine) of the teacher-forced positions in each bucket of the sequence, as a "
        "multiple of that bucket's noise floor (HF bf16 vs fp32 on the same positions). Long prompts "
        "(gate.length) reach past the sliding window, so a fault that starts at position N rises from "
        "N's bucket on; a bucket is judged (drift above 5x, fail above 100x) from 16 positions.",
    )


def build(ctx: Context) -> SectionOutput:
    found = table(ctx.records)
    if found.empty:
        return SectionOutput()
    drawn = plot(ctx.records)
    return SectionOutput(
        tables={NAME: found},
        shown={NAME: render.html_table(found, f"{NAME}.csv")},
        plots=[drawn] if drawn is not None else [],
    )


def markdown(page: Page) -> str:
    return table_markdown("Correctness by position", page.tables.get(NAME), readable=True)
