"""Plots over a sweep axis: latency against max_seq_len, prompt length, beam width and chunk size (one line per
series), and ms/token per quantization level coloured by the gate's verdict. Each shows only the scenarios that
sweep its axis and returns ``None`` when none does."""

from __future__ import annotations

from typing import Optional

import pandas as pd

from harness.records import metric_names
from harness.report import tables
from harness.report.plots.base import MAX_SERIES, Plot, pyplot

VERDICT_COLOURS = {"pass": "#2e7d32", "drift": "#ef6c00", "fail": "#c62828", "not judged": "#6a1b9a"}
NO_VERDICT_COLOUR = "#9e9e9e"
INTERVAL_NOTE = " Error bars: the 95 % confidence interval over launches, where two or more launches measured a point."


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
    ax.set_ylabel(metric_names.label("tpot_ms"))
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
    ax.set_ylabel(metric_names.label("tpot_ms"))
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
        ylabel = (labels or {}).get(metric) or metric_names.label(metric)
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
