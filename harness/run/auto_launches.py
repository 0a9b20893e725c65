"""``measurement.launches: auto``: each point's launch count, chosen from the variance components a previous
record of the same point stored (``harness.measure.noise``), so that the regression check would detect a
``target_change`` worsening of ms/token with 80 % power (``harness.regression.launch_power``) within
``time_budget_s``. Pure apart from reading that record."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from harness.records import store
from harness.records.record import Record
from harness.scenario.schema import Scenario
from harness.scenario.sweep import Point

FALLBACK = 5  # launches a point gets with no stored components: the gate's usual 5 vs 5
METRIC = "tpot_ms"


@dataclass(frozen=True)
class Plan:
    launches: int
    why: str


def limit() -> float:
    """The regression check's default ms/token threshold: no launch count detects a change below it."""
    from harness.regression.thresholds import DEFAULT_THRESHOLDS, parse_thresholds

    return next(t.limit for t in parse_thresholds(DEFAULT_THRESHOLDS) if t.metric == METRIC)


def impossible(scenario: Scenario) -> Optional[str]:
    """Why the scenario's target can never be met (``harness check`` and ``harness run`` refuse it), or None."""
    m = scenario.measurement
    if m.launches != "auto" or m.target_change is None:
        return None
    floor = limit()
    if m.target_change <= floor:
        return (
            f"{m.target_change:.1%} is not above the regression check's ms/token threshold ({floor:.0%}): a "
            "change is called different only past the threshold, so no launch count detects it; raise it"
        )
    return None


def stored(results_dir: Optional[Path], scenario: Scenario, point: Point) -> Optional[Record]:
    """The point's record in ``results_dir`` whatever its status, or None (none, or unreadable)."""
    if results_dir is None:
        return None
    path = store.record_path(results_dir, Record(scenario=scenario.name, point_id=point.id, point={}, status="ok"))
    try:
        return store.read(path)
    except (OSError, ValueError):
        return None


def previous(results_dir: Optional[Path], scenario: Scenario, point: Point) -> Optional[Record]:
    record = stored(results_dir, scenario, point)
    return record if record is not None and record.status == "ok" else None


def plan(scenario: Scenario, point: Point, stored: Optional[Record]) -> Plan:
    """The fewest launches whose detectable change is within the target and whose time fits the budget."""
    from harness.measure import noise
    from harness.records.record import recorded_launches
    from harness.regression import launch_power
    from harness.regression.thresholds import DEFAULT_FDR

    m = scenario.measurement
    target = float(m.target_change or 0)
    found = stored.samples.intervals.get(METRIC) if stored is not None else None
    if stored is None or found is None or found.launches < 2 or found.cv is None:
        where = "no stored record of this point" if stored is None else "its stored record has no launch statistics"
        return Plan(FALLBACK, f"launches: auto: {where}, so {FALLBACK} launches (the default) measure them now")
    cv = abs(float(found.cv))
    if found.between_cv is not None:  # the components at this scenario's rounds
        cv = noise.launch_cv(float(found.between_cv), found.within_cv, float(m.min_rounds))
    seconds = (
        sum(stored.time_split.model_dump().values()) / len(recorded_launches(stored)) if stored.time_split else 0.0
    )
    level = launch_power.alpha(DEFAULT_FDR, 2)  # a lone regression among the point's ms/token and TTFT tests
    budget = m.time_budget_s
    most = (
        launch_power.MOST_LAUNCHES
        if not budget or not seconds
        else max(2, min(launch_power.MOST_LAUNCHES, int(budget // seconds)))
    )
    needed = launch_power.launches_to_detect(cv, target, level, limit(), False)
    if needed is not None and needed <= most:
        change = launch_power.detectable_change(cv, needed, needed, level, limit())
        return Plan(
            needed,
            f"launches: auto: {needed} launches detect {change:.1%} (target {target:.1%}) at launch CV {cv:.1%}"
            + (f", about {needed * seconds:.0f} s" if seconds else ""),
        )
    change = launch_power.detectable_change(cv, most, most, level, limit())
    seen = "nothing at any size" if change is None else f"{change:.1%}"
    bound = f"the time budget ({budget:g} s, about {seconds:.1f} s a launch)" if budget else f"{most} launches"
    return Plan(
        most,
        f"launches: auto: target {target:.1%} not reachable within {bound} at launch CV {cv:.1%}: {most} "
        f"launches detect {seen}",
    )
