"""``history check``: change points over every series; the new ones that worsen a metric beyond a
threshold, and are still open (the metric has not come back), are regressions with a commit range — once the
new level has held for ``persist`` consecutive nights (default 2; ``changepoints.held``). A worsening step that
has held fewer nights (a lone bad newest night, by default, whether or not the segmentation paired it with an
ordinary night) is *suspicious*: reported, not failed, and a regression if the next night confirms it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from harness.history.catalogue import higher_is_better
from harness.history.changepoints import DEFAULT_PENALTY, MIN_SIZE, ChangePoint, detect, held, last_level, recent_step
from harness.history.queries import RunInfo, SeriesData

DEFAULT_THRESHOLD = 0.02
DEFAULT_SINCE = 7  # runs: a week of nights
DEFAULT_PERSIST = 2  # nights a worsened level must hold to be a regression; fewer: suspicious


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
    def nights(self) -> int:
        """How many consecutive nights the new level has held (``changepoints.held``)."""
        return held(self.series.values, self.change, self.higher_is_better)

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


def findings(all_series: list[SeriesData], penalty: float = DEFAULT_PENALTY, recent: bool = False) -> list[Finding]:
    """Every change point of every series, oldest first within a series; with ``recent``, then, per series,
    the longest step in its newest nights too short for a change point (``changepoints.recent_step``)."""
    out = []
    for series in all_series:
        direction = higher_is_better(series.metric)
        changes = detect(series.values, penalty)
        found = []
        for change in changes:
            found.append(_finding(series, change, direction, last_level(series.values, changes)))
        for nights in range(MIN_SIZE - 1, 0, -1) if recent else ():
            since = changes
            if changes and len(series.values) - changes[-1].index < MIN_SIZE + nights:
                if held(series.values, changes[-1], direction) <= nights:  # the step paired with an ordinary night
                    since = changes[:-1]
            step = recent_step(series.values, nights, since, penalty)
            if step is not None:
                # the segmentation may have paired the step's nights with an ordinary one before them: the
                # step, placed at its own night, replaces that change when the change held no longer
                found = [f for f in found if f.change.index < step.index - 1 or f.nights > nights]
                found.append(_finding(series, step, direction, step.after))
                break
        out += found
    return out


def _finding(series: SeriesData, change: ChangePoint, direction: Optional[bool], current: float) -> Finding:
    """``range_after`` is ``change.latest`` as it stands: ``detect``'s plausible range already stops ``MIN_SIZE``
    runs before the next change, and a recent step's range is its own night."""
    return Finding(
        series,
        change,
        direction,
        0.0 if direction is None else change.worsening(direction),
        current,
        series.runs[change.index - 1],
        series.runs[change.index],
        series.runs[change.earliest - 1],
        series.runs[change.latest],
    )


@dataclass(frozen=True)
class CheckResult:
    regressions: list[Finding]  # new, open, worse beyond the threshold, held ``persist`` nights: exit 1
    open: list[Finding]  # every open worsening change point, new or not
    n_series: int
    n_runs: int
    suspicious: list[Finding] = field(default_factory=list)  # new worsening steps of fewer nights: reported


def check(
    all_series: list[SeriesData],
    runs: list[RunInfo],
    since: int = DEFAULT_SINCE,
    threshold: float = DEFAULT_THRESHOLD,
    penalty: float = DEFAULT_PENALTY,
    persist: int = DEFAULT_PERSIST,
) -> CheckResult:
    """Regressions: open worsening change points whose first run after falls within the newest ``since`` runs
    and whose new level has held ``persist`` nights; the ones that have not held so long, and worsening steps
    in the newest nights too short for a change point (``recent_steps``), are suspicious."""
    recent = {run.id for run in runs[-since:]} if since > 0 else set()
    found = [f for f in findings(all_series, penalty, recent=True) if f.is_open(threshold)]
    new = [f for f in found if f.first_after.id in recent]
    return CheckResult(
        [f for f in new if f.nights >= persist],
        [f for f in found if f.nights >= persist],
        len(all_series),
        len(runs),
        [f for f in new if f.nights < persist],
    )
