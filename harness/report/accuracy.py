"""The report's accuracy section: each point's lm-eval scores beside the HF reference's, the delta, and
where both sides kept per-item outcomes, the delta's paired test (p-value; for 0/1 outcomes beside it the flip
rate, the share of items whose outcome changed), 95 % interval and non-inferiority verdict
(``harness.accuracy.paired``)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Optional

import pandas as pd

from harness.report import plots

LOWER_IS_BETTER = {"perplexity", "word_perplexity", "byte_perplexity", "bits_per_byte"}


def accuracy_table(pairs: Iterable[tuple[Optional[Path], object]]) -> pd.DataFrame:
    """One row per (point, task, metric): value ± stderr, the reference's value, the delta with its 95 %
    paired interval, p-value, the flip rate (0/1 outcomes) and the test, the non-inferiority verdict, or why the
    delta is not paired."""
    rows = []
    for _, record in pairs:
        if record.accuracy is None:
            continue
        part = record.accuracy
        reference, deltas = part.reference or {}, part.delta or {}
        for task, metrics in (part.tasks or {}).items():
            for metric, value in metrics.items():
                if metric.endswith("_stderr") or metric == "items":
                    continue
                paired = (part.paired or {}).get(task, {}).get(metric)
                better = (part.outcomes or {}).get(task)
                better = better.higher_is_better.get(metric) if better else None
                rows.append(
                    {
                        "scenario": record.scenario,
                        "point_id": record.point_id,
                        "quantization": record.point.get("quantization"),
                        "task": task,
                        "metric": metric,
                        "value": value,
                        "stderr": metrics.get(f"{metric}_stderr"),
                        "reference": reference.get(task, {}).get(metric),
                        "delta": deltas.get(task, {}).get(metric),
                        "delta_low": paired.low if paired else None,
                        "delta_high": paired.high if paired else None,
                        "p_value": paired.p_value if paired else None,
                        "flip_rate": paired.flip_rate if paired else None,
                        "flips": paired.flips if paired else None,
                        "test": paired.test if paired else None,
                        "non_inferior": _verdict(paired),
                        "items": metrics.get("items"),
                        "unpaired": (part.unpaired or {}).get(task, {}).get(metric),
                        "higher_is_better": metric not in LOWER_IS_BETTER if better is None else better,
                    }
                )
    return pd.DataFrame(rows)


def _verdict(paired) -> Optional[str]:
    """``pass (keep 99 %)`` / ``fail (keep 99 %)``; None without a margin."""
    if paired is None or paired.margin is None:
        return None
    return f"{'pass' if paired.non_inferior else 'fail'} (keep {paired.margin * 100:g} %)"


def accuracy_plot(table: pd.DataFrame) -> Optional[plots.Plot]:
    """Bars of each point's score per task (higher-is-better metrics), error bars = stderr, the
    reference as a dashed line."""
    if table.empty:
        return None
    shown = table[table["higher_is_better"]]
    if shown.empty:
        return None
    panels = list(shown.groupby(["task", "metric"], sort=True))
    plt = plots.pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 4.2), squeeze=False)
    for ax, ((task, metric), data) in zip(axes[0], panels):
        labels = [
            f"{s}::{p}" if shown["scenario"].nunique() > 1 else p for s, p in zip(data["scenario"], data["point_id"])
        ]
        ax.bar(range(len(data)), data["value"], yerr=data["stderr"].fillna(0), color="#1565c0", capsize=3)
        reference = data["reference"].dropna()
        if not reference.empty:
            ax.axhline(reference.iloc[0], color="#c62828", linestyle="--", label="HF reference")
            ax.legend(fontsize=7)
        ax.set_xticks(range(len(data)), labels, rotation=60, ha="right", fontsize=6)
        ax.set_ylim(0, 1)
        ax.set_title(f"{task}: {metric}", fontsize=9)
    fig.suptitle("Task accuracy (lm-eval)")
    fig.tight_layout()
    return plots.Plot(
        "accuracy",
        "Task accuracy against the HF reference",
        fig,
        "Error bars: lm-eval's standard error. Dashed: the HF reference on the same items. "
        "The table's delta_low/delta_high, p_value and flip_rate pair each item with the reference's.",
    )


def build(pairs) -> tuple[dict[str, pd.DataFrame], list[plots.Plot]]:
    table = accuracy_table(pairs)
    if table.empty:
        return {}, []
    table = table.sort_values(["task", "metric", "scenario", "point_id"]).reset_index(drop=True)
    plot = accuracy_plot(table)
    return {"accuracy": table}, [plot] if plot else []
