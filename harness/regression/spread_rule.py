"""The regression check's rule for a metric without launch statistics (one launch on a side): worse than its
threshold *and* by more than the larger interquartile range of the two runs' per-round figures. Per-round
spread understates launch-to-launch noise, so ``harness.regression.check`` says when it fell back to this."""

from __future__ import annotations

import statistics
from typing import Optional

from harness.records.columns import round_values
from harness.records.record import Record
from harness.regression.thresholds import Threshold


def _iqr(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[2] - q[0]


def metric_check(threshold: Threshold, base: Record, new: Record) -> tuple[Optional[str], Optional[str]]:
    """(failure message, note) for one metric of one point judged without launch statistics:
    beyond the threshold and beyond the larger per-round interquartile range."""
    before, after = base.metrics.get(threshold.metric), new.metrics.get(threshold.metric)
    if before is None or after is None or before <= 0:
        return None, None
    relative = threshold.change(before, after)
    if relative <= threshold.limit:
        return None, None
    worse = relative * before
    spread = max(_iqr(round_values(base).get(threshold.metric, [])), _iqr(round_values(new).get(threshold.metric, [])))
    note = None
    if threshold.metric not in round_values(base):
        note = f"{base.scenario}::{base.point_id}: {threshold.metric} has one value per run, so no spread to compare"
    if worse <= spread:
        return None, (
            f"{base.scenario}::{base.point_id}: {threshold.metric} {relative:+.1%} is within the measured "
            f"spread ({spread:.3g})"
        )
    return (
        f"{threshold.metric} {before:.4g} -> {after:.4g} ({relative:+.1%} worse; limit {threshold.limit:.0%}, "
        f"measured spread {spread:.3g})"
    ), note
