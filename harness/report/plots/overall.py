"""Plots over every point, whatever the sweep: the latency-energy Pareto front, the per-token percentile spread
and where the time went."""

from __future__ import annotations

import itertools
from typing import Optional

import pandas as pd

from harness.records import metric_names
from harness.records.columns import TIME_SPLIT, TIMED
from harness.report import tables
from harness.report.plots.base import Plot, pyplot

TIMED_COLOUR = "#2e7d32"  # the measured part of the time split stands out; the rest in muted tones


def latency_energy_pareto(df: pd.DataFrame) -> Optional[Plot]:
    if "energy_per_token_mj" not in df or "tpot_ms" not in df:
        return None
    data = df.dropna(subset=["tpot_ms", "energy_per_token_mj"])
    if len(data) < 2:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    ax.scatter(data["tpot_ms"], data["energy_per_token_mj"], color="#90a4ae", label="points")
    front = tables.pareto_front(data, "tpot_ms", "energy_per_token_mj")
    ax.plot(front["tpot_ms"], front["energy_per_token_mj"], color="#c62828", marker="o", label="Pareto front")
    for _, point in front.iterrows():
        ax.annotate(point["point_id"], (point["tpot_ms"], point["energy_per_token_mj"]), fontsize=6)
    ax.set_xlabel(metric_names.label("tpot_ms"))
    ax.set_ylabel(metric_names.label("energy_per_token_mj"))
    ax.set_title("Latency-energy trade-off")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper right")
    return Plot(
        "latency_energy_pareto",
        "Latency-energy Pareto front",
        fig,
        "Points no other point beats on both ms/token and energy per token (NPUMoE Fig. 13).",
    )


def percentile_spread(df: pd.DataFrame, limit: int = 40) -> Optional[Plot]:
    table = tables.spread(df)
    if table.empty:
        return None
    shown = table.head(limit).iloc[::-1]
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 0.28 * len(shown) + 1.4))
    y = range(len(shown))
    ax.hlines(list(y), shown["ms_per_token_p50"], shown["ms_per_token_p99"], color="#607d8b")
    ax.scatter(shown["ms_per_token_p50"], list(y), marker="o", color="#1565c0", label="p50", zorder=3)
    ax.scatter(shown["ms_per_token_p90"], list(y), marker="|", s=120, color="#ef6c00", label="p90", zorder=3)
    ax.scatter(shown["ms_per_token_p99"], list(y), marker="x", color="#c62828", label="p99", zorder=3)
    ax.set_yticks(list(y), [f"{s}::{p}" for s, p in zip(shown["scenario"], shown["point_id"])], fontsize=6)
    ax.set_xlabel(metric_names.get("ms_per_token_p50").unit)
    ax.set_title("Per-token latency spread (noisiest first)")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    more = f" The {limit} noisiest of {len(table)} points." if len(table) > limit else ""
    return Plot(
        "percentile_spread",
        "Per-point percentile spread",
        fig,
        "Each line runs from the median to the 99th percentile of inter-token gaps; a long line is a "
        "noisy figure." + more,
    )


def time_split(df: pd.DataFrame) -> Optional[Plot]:
    """Per scenario, one stacked horizontal bar: the seconds each part of the time split took (summed over
    the scenario's points and launches), the timed share written at its end."""
    table = tables.time_split(df)
    if table.empty:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(table) + 1.8))
    muted = itertools.cycle([c for i, c in enumerate(plt.get_cmap("Pastel1").colors) if i != 2])  # green: timed
    y = list(range(len(table)))[::-1]  # the first scenario on top
    left = pd.Series(0.0, index=table.index)
    for field, label in TIME_SPLIT:
        colour = TIMED_COLOUR if field == TIMED else next(muted)
        ax.barh(
            y,
            table[field],
            left=left,
            color=colour,
            edgecolor="white",
            label=label,
            hatch="//" if field == TIMED else None,
        )
        left = left + table[field]
    for row, total, share in zip(y, table["total_s"], table["timed_share"]):
        ax.annotate(f" timed {share:.0%}" if pd.notna(share) else " -", (total, row), va="center", fontsize=7)
    ax.set_yticks(y, [f"{s} ({n} points)" for s, n in zip(table["scenario"], table["points"])], fontsize=7)
    ax.set_xlabel("seconds (summed over points and launches)")
    ax.set_xlim(0, float(table["total_s"].max()) * 1.15 or 1)
    ax.set_title("Where the time went")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    missing = tables.time_split_missing(df)
    note = f" {missing} point(s) without a time split are left out." if missing else ""
    return Plot(
        "time_split",
        "Where the time went",
        fig,
        "Process start, imports, conversion, load, warm-up, the timed rounds (the measured inference, "
        "green), the gate and task accuracy, per scenario." + note,
    )
