"""Report plots (matplotlib, Agg). Each builder returns ``None`` when the data lacks its axes."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Optional

import pandas as pd

from harness.records import metrics
from harness.records.columns import TIME_SPLIT, TIMED
from harness.report import tables

MAX_SERIES = 16  # beyond this a legend is unreadable: the series with the most points are kept
VERDICT_COLOURS = {"pass": "#2e7d32", "drift": "#ef6c00", "fail": "#c62828", "not judged": "#6a1b9a"}
NO_VERDICT_COLOUR = "#9e9e9e"
TIMED_COLOUR = "#2e7d32"  # the measured part of the time split stands out; the rest in muted tones
INTERVAL_NOTE = " Error bars: the 95 % confidence interval over launches, where two or more launches measured a point."


@dataclass
class Plot:
    slug: str  # file name stem
    title: str
    figure: object  # matplotlib Figure
    caption: str = ""


def pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def sweeps_over(df: pd.DataFrame, column: str) -> pd.DataFrame:
    """Rows of the scenarios that sweep ``column`` (two or more values): a plot over an axis shows only those."""
    if column not in df or df.empty:
        return df.iloc[0:0]
    counts = df.dropna(subset=[column]).groupby("scenario")[column].nunique()
    return df[df["scenario"].isin(counts[counts >= 2].index)]


def _has_axis(df: pd.DataFrame, column: str, metric: str) -> bool:
    if column not in df or metric not in df:
        return False
    usable = df.dropna(subset=[column, metric])
    return usable[column].nunique() >= 2


def _series(df: pd.DataFrame, x: str) -> tuple[list[tuple[str, pd.DataFrame]], str]:
    data = df.assign(_series=tables.labels(df, exclude=(x,)))
    groups = sorted(data.groupby("_series"), key=lambda item: -len(item[1]))
    note = ""
    if len(groups) > MAX_SERIES:
        note = f" Showing the {MAX_SERIES} series with the most points of {len(groups)}."
        groups = groups[:MAX_SERIES]
    return sorted(groups, key=lambda item: item[0]), note


def _interval_bars(ax, group: pd.DataFrame, x: str, y: str, colour) -> bool:
    """Error bars from the points' 95 % intervals over launches, where one point stands at an x (a median
    over several points has no such interval)."""
    low, high = f"{y}_ci_low", f"{y}_ci_high"
    if low not in group or high not in group:
        return False
    single = group[group.groupby(x)[y].transform("size") == 1].dropna(subset=[low, high])
    if single.empty:
        return False
    below = (single[y] - single[low]).clip(lower=0)
    above = (single[high] - single[y]).clip(lower=0)
    ax.errorbar(single[x], single[y], yerr=[below, above], fmt="none", ecolor=colour, capsize=3, linewidth=1)
    return True


def _lines(ax, df: pd.DataFrame, x: str, y: str, log_x: bool = False) -> str:
    groups, note = _series(df.dropna(subset=[x, y]), x)
    bars = False
    for label, group in groups:
        series = group.groupby(x)[y].median().sort_index()
        (line,) = ax.plot(series.index, series.values, marker="o", label=label)
        bars = _interval_bars(ax, group, x, y, line.get_color()) or bars
    if bars:
        note += INTERVAL_NOTE
    if log_x:
        ax.set_xscale("log", base=2)
        ticks = sorted(df[x].dropna().unique())
        ax.set_xticks(ticks, [str(int(t)) if float(t).is_integer() else str(t) for t in ticks])
        ax.minorticks_off()
    ax.set_xlabel(x)
    ax.grid(alpha=0.3)
    if groups:
        ax.legend(fontsize=7, loc="upper left")  # "best" placement is slow on many points
    return note


def tpot_vs_max_seq_len(df: pd.DataFrame) -> Optional[Plot]:
    df = sweeps_over(df, "max_seq_len")
    if not _has_axis(df, "max_seq_len", "tpot_ms"):
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    note = _lines(ax, df, "max_seq_len", "tpot_ms", log_x=True)
    ax.set_ylabel(metrics.label("tpot_ms"))
    ax.set_title("ms/token vs max sequence length")
    return Plot(
        "tpot_vs_max_seq_len",
        "ms/token vs max_seq_len",
        fig,
        "Median decode latency per device and engine as the static context grows (NITRO Fig. 6)." + note,
    )


def tpot_by_quantization(df: pd.DataFrame) -> Optional[Plot]:
    df = sweeps_over(df, "quantization")
    if not _has_axis(df, "quantization", "tpot_ms"):
        return None
    plt = pyplot()
    data = df.dropna(subset=["tpot_ms"])
    groups, note = _series(data, "quantization")
    levels = sorted(data["quantization"].astype(str).unique(), key=lambda q: (q != "none", q))
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(levels) * max(1, len(groups)) ** 0.5), 4))
    width = 0.8 / max(1, len(groups))
    for g, (label, group) in enumerate(groups):
        for i, level in enumerate(levels):
            rows = group[group["quantization"].astype(str) == level]
            if rows.empty:
                continue
            verdict = (
                rows["gate_verdict"].dropna().iloc[0]
                if "gate_verdict" in rows and rows["gate_verdict"].notna().any()
                else None
            )
            ax.bar(
                i - 0.4 + width * (g + 0.5),
                rows["tpot_ms"].median(),
                width,
                color=VERDICT_COLOURS.get(verdict, NO_VERDICT_COLOUR),
                edgecolor="black",
                hatch="//" if verdict == "fail" else None,
            )
            ax.annotate(
                verdict or "no gate",
                (i - 0.4 + width * (g + 0.5), rows["tpot_ms"].median()),
                ha="center",
                va="bottom",
                fontsize=6,
                rotation=90,
            )
        ax.plot([], [], " ", label=f"{g + 1}: {label}")
    ax.set_xticks(range(len(levels)), levels, rotation=20)
    ax.set_ylabel(metrics.label("tpot_ms"))
    ax.set_title("ms/token per quantization level (colour: gate verdict)")
    ax.legend(fontsize=7, title="bars left to right", title_fontsize=7, loc="upper right")
    return Plot(
        "tpot_by_quantization",
        "ms/token per quantization level",
        fig,
        "Bars are coloured by the top-k gate verdict: green pass, orange drift, red (hatched) fail, "
        "purple not judged (too few positions for the KL tier), grey no gate (NITRO Fig. 7)." + note,
    )


def panels(
    df: pd.DataFrame,
    x: str,
    columns: list[str],
    slug: str,
    title: str,
    caption: str,
    log_x: bool = False,
    labels: Optional[dict[str, str]] = None,
) -> Optional[Plot]:
    """One panel per column against ``x``; y labels from the metric catalogue unless ``labels`` names them
    (columns that are not metrics, such as the gate's)."""
    df = sweeps_over(df, x)
    if not any(_has_axis(df, x, column) for column in columns):
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, len(columns), figsize=(5.5 * len(columns), 4))
    notes = ""
    for ax, metric in zip(axes, columns):
        ylabel = (labels or {}).get(metric) or metrics.label(metric)
        if _has_axis(df, x, metric):
            notes = _lines(ax, df, x, metric, log_x=log_x) or notes
        else:
            ax.text(0.5, 0.5, f"{metric} not measured", ha="center", va="center", transform=ax.transAxes)
            ax.set_xlabel(x)
        ax.set_ylabel(ylabel)
    fig.suptitle(title)
    fig.tight_layout()
    return Plot(slug, title, fig, caption + notes)


def latency_vs_prompt_len(df: pd.DataFrame) -> Optional[Plot]:
    return panels(
        df,
        "prompt_len",
        ["ttft_ms", "tpot_ms"],
        "latency_vs_prompt_len",
        "First- and next-token latency vs prompt length",
        "Intel GPU paper Fig. 7 axes.",
        log_x=True,
    )


def latency_vs_beam_width(df: pd.DataFrame) -> Optional[Plot]:
    return panels(
        df,
        "beam_width",
        ["ttft_ms", "tpot_ms"],
        "latency_vs_beam_width",
        "First- and next-token latency vs beam width",
        "Intel GPU paper Fig. 8 axes.",
    )


def chunk_size(df: pd.DataFrame) -> Optional[Plot]:
    return panels(
        df,
        "moe_chunk_size",
        ["ttft_ms", "energy_per_token_mj", "cpu_utilization"],
        "chunk_size",
        "TTFT, energy per token and CPU use vs prefill chunk size",
        "NPUMoE Figs. 14-16 axes.",
        log_x=True,
    )


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
    ax.set_xlabel(metrics.label("tpot_ms"))
    ax.set_ylabel(metrics.label("energy_per_token_mj"))
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
    ax.set_xlabel(metrics.get("ms_per_token_p50").unit)
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


BUILDERS: list[Callable[[pd.DataFrame], Optional[Plot]]] = [
    tpot_vs_max_seq_len,
    tpot_by_quantization,
    latency_vs_prompt_len,
    latency_vs_beam_width,
    chunk_size,
    latency_energy_pareto,
    percentile_spread,
]


def build_all(df: pd.DataFrame) -> list[Plot]:
    """The plots of the ok points, then the time split (of every point: failed ones spent time too)."""
    ok = tables.ok_points(df)
    return [plot for plot in [*(builder(ok) for builder in BUILDERS), time_split(df)] if plot is not None]
