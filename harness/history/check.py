"""``history check``: change points over every series; the new ones that worsen a metric beyond a
threshold, and are still open (the metric has not come back), are regressions with a commit range."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from harness.history.catalogue import higher_is_better
from harness.history.changepoints import DEFAULT_PENALTY, ChangePoint, detect, last_level
from harness.history.queries import RunInfo, SeriesData

DEFAULT_THRESHOLD = 0.02
DEFAULT_SINCE = 7  # runs: a week of nights


@dataclass(frozen=True)
class Finding:
    """A change point of one series, placed among the history's runs."""

    series: SeriesData
    change: ChangePoint
    higher_is_better: Optional[bool]  # None: a metric without direction (never a regression)
    worsening: float  # relative, positive = worse
    current: float  # median since the last change point: where the metric stands now
    last_before: RunInfo  # the last run before the change ...
    first_after: RunInfo  # ... and the first one after it: the commit range to bisect
    range_before: RunInfo  # the wider range that holds the change's plausible locations
    range_after: RunInfo

    @property
    def still_worse(self) -> float:
        """How much worse the current level is than the level before the change (relative)."""
        before = self.change.before
        rel = (self.current - before) / abs(before) if before else 0.0
        return -rel if self.higher_is_better else rel

    def is_open(self, threshold: float) -> bool:
        return self.higher_is_better is not None and self.worsening > threshold and self.still_worse > threshold

    def describe(self) -> str:
        s, c = self.series, self.change
        plausible = (
            ""
            if (self.range_before.id, self.range_after.id) == (self.last_before.id, self.first_after.id)
            else f" (plausible range {self.range_before.commit or '?'}..{self.range_after.commit or '?'})"
        )
        return (
            f"{s.point} {s.metric} [{s.fingerprint.label() or 'no fingerprint'}]: {c.before:.4g} -> {c.after:.4g} "
            f"({c.relative:+.1%}, now {self.current:.4g}) from {self.first_after.label()}; last run before: "
            f"{self.last_before.label()}; bisect {self.last_before.commit or '?'}..{self.first_after.commit or '?'}"
            f"{plausible}"
        )


def findings(all_series: list[SeriesData], penalty: float = DEFAULT_PENALTY) -> list[Finding]:
    """Every change point of every series, oldest first within a series."""
    out = []
    for series in all_series:
        direction = higher_is_better(series.metric)
        changes = detect(series.values, penalty)
        for change in changes:  # change.latest stays MIN_SIZE runs before the next change (changepoints._plausible)
            out.append(
                Finding(
                    series,
                    change,
                    direction,
                    0.0 if direction is None else change.worsening(direction),
                    last_level(series.values, changes),
                    series.runs[change.index - 1],
                    series.runs[change.index],
                    series.runs[change.earliest - 1],
                    series.runs[change.latest],
                )
            )
    return out


@dataclass(frozen=True)
class CheckResult:
    regressions: list[Finding]  # new, open, worse beyond the threshold: exit 1
    open: list[Finding]  # every open worsening change point, new or not
    n_series: int
    n_runs: int


def check(
    all_series: list[SeriesData],
    runs: list[RunInfo],
    since: int = DEFAULT_SINCE,
    threshold: float = DEFAULT_THRESHOLD,
    penalty: float = DEFAULT_PENALTY,
) -> CheckResult:
    """Regressions: open worsening change points whose first run after falls within the newest ``since`` runs."""
    recent = {run.id for run in runs[-since:]} if since > 0 else set()
    found = [f for f in findings(all_series, penalty) if f.is_open(threshold)]
    return CheckResult([f for f in found if f.first_after.id in recent], found, len(all_series), len(runs))
