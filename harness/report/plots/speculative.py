"""The speculative sweep's plot: each speculative point's speed-up over its own plain path (timed side by side
in the same launch) against the share of drafted candidates its target accepted."""

from __future__ import annotations

from typing import Optional

import pandas as pd

from harness.records import metric_names
from harness.report import tables
from harness.report.plots.base import Plot, pyplot
from harness.scenario.speculative import id_part

X, Y = "spec_acceptance_rate", "spec_speedup"


def speedup_vs_acceptance(df: pd.DataFrame) -> Optional[Plot]:
    if X not in df or Y not in df:
        return None
    data = df.dropna(subset=[X, Y])
    if data.empty:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    series = data.assign(_series=tables.labels(data, exclude=("speculative",)))
    for (label, group), marker in zip(sorted(series.groupby("_series")), "osD^v<>ph*"):
        ax.scatter(group[X], group[Y], marker=marker, label=label)
        for _, point in group.iterrows():
            ax.annotate(id_part(point["speculative"]), (point[X], point[Y]), fontsize=6)
    ax.axhline(1.0, color="#9e9e9e", linewidth=1, linestyle="--")
    ax.set_xlabel(metric_names.get(X).axis_label)
    ax.set_ylabel(metric_names.get(Y).axis_label)
    ax.set_xlim(-0.02, 1.02)
    ax.set_title("Speculative decoding: speed-up against acceptance")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    return Plot(
        "speedup_vs_acceptance",
        "Speculative speed-up against acceptance rate",
        fig,
        "Each speculative point's end-to-end time without speculation over its time with it (above the dashed "
        "line: faster), both timed on the same loaded engine in the same launch, against the share of drafted "
        "candidates the target accepted.",
    )
