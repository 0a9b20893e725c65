"""Report plots (matplotlib, Agg). Each builder returns ``None`` when the data lacks its axes.

``base.py``: ``Plot`` and ``pyplot``; ``axes.py``: plots over a sweep axis; ``overall.py``: plots over every
point. This module lists the gallery's builders and re-exports what other report modules use.
"""

from __future__ import annotations

from typing import Callable, Optional

import pandas as pd

from harness.report import tables
from harness.report.plots.axes import (
    chunk_size,
    latency_vs_beam_width,
    latency_vs_prompt_len,
    panels,
    sweeps_over,
    tpot_by_quantization,
    tpot_vs_max_seq_len,
)
from harness.report.plots.base import MAX_SERIES, Plot, pyplot
from harness.report.plots.overall import latency_energy_pareto, percentile_spread, time_split
from harness.report.plots.speculative import speedup_vs_acceptance

__all__ = ["BUILDERS", "MAX_SERIES", "Plot", "build_all", "panels", "pyplot", "sweeps_over"]


BUILDERS: list[Callable[[pd.DataFrame], Optional[Plot]]] = [
    tpot_vs_max_seq_len,
    tpot_by_quantization,
    latency_vs_prompt_len,
    latency_vs_beam_width,
    chunk_size,
    speedup_vs_acceptance,
    latency_energy_pareto,
    percentile_spread,
]


def build_all(df: pd.DataFrame) -> list[Plot]:
    """The plots of the ok points, then the time split (of every point: failed ones spent time too)."""
    ok = tables.ok_points(df)
    return [plot for plot in [*(builder(ok) for builder in BUILDERS), time_split(df)] if plot is not None]
