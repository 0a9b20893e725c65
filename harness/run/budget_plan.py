"""``harness plan SCENARIO... --budget 60m``: which points, how many launches and how many gate prompts fit a
time budget, each point's cost (``harness.run.point_cost``: measured on this runner, or estimated), the change
the regression check could detect at the planned launches (``harness.regression.launch_power.detectable``,
the figure ``harness run`` prints), and what is left out and why. Pure apart from reading earlier records.

**How it chooses.** Points that skip here (no such engine or device, or skipped by this runner last time)
are left out first. Then, while the rest do not all fit: the gate prompts go down to ``MIN_GATE_PROMPTS`` (the
``ci`` set), then the launches go down one by one to the stated minimum (``--min-launches``); if even that
does not fit, points are taken in sweep order while they fit, and the others are left out with the seconds
they would need. One launch count and one gate prompt count serve every point, so ``harness run --launches N
--gate-prompts M`` runs the plan as it is."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from harness.run.budget import Budget
from harness.run.point_cost import Cost, cost
from harness.run.steps.skip import skip_reason
from harness.scenario.schema import Scenario
from harness.scenario.sweep import Point

MIN_GATE_PROMPTS = 2  # the gate's ``ci`` set: one plain prompt, one chat
DOES_NOT_FIT = "does not fit"  # how a point left out for the budget alone is described


@dataclass(frozen=True)
class Planned:
    """One point in the plan: its cost; the launches and gate prompts it gets (0 launches: left out, and
    ``left_out`` says why); ``detectable``: what the regression check could see at those launches."""

    scenario: Scenario
    point: Point
    cost: Cost
    launches: int = 0
    gate_prompts: int = 0
    seconds: float = 0.0
    left_out: Optional[str] = None
    detectable: str = ""

    @property
    def name(self) -> str:
        return f"{self.scenario.name}::{self.point.id}"


@dataclass(frozen=True)
class Plan:
    """The plan: ``launches`` / ``gate_prompts`` None where each point keeps its scenario's own."""

    budget: Budget
    points: tuple[Planned, ...]
    launches: Optional[int]
    gate_prompts: Optional[int]

    @property
    def chosen(self) -> list[Planned]:
        return [p for p in self.points if p.left_out is None]

    @property
    def left_out(self) -> list[Planned]:
        return [p for p in self.points if p.left_out is not None]

    @property
    def seconds(self) -> float:
        return sum(p.seconds for p in self.chosen)

    def run_options(self, name_points: bool = False) -> list[str]:
        """What ``harness run`` needs besides the scenarios to run this plan; ``name_points``: name the chosen
        points with ``-k`` even when all fit (a selection ``harness run`` cannot repeat, such as ``-m``)."""
        options = ["--budget", str(self.budget)]
        if self.launches is not None:
            options += ["--launches", str(self.launches)]
        if self.gate_prompts is not None:
            options += ["--gate-prompts", str(self.gate_prompts)]
        if name_points or any((p.left_out or "").startswith(DOES_NOT_FIT) for p in self.left_out):  # those that fit
            for p in self.chosen:
                options += ["-k", p.point.id]
        return options


def make(
    work: Sequence[tuple[Scenario, Point]],
    budget: Budget,
    results_dir: Optional[Path],
    planned: Callable[[Scenario, Point], int],
    min_launches: int = 1,
    launches: Optional[int] = None,
) -> Plan:
    """The plan for ``work`` within ``budget``. ``planned``: a point's own launch count (the runner's
    ``planned_launches``); ``launches``: the count ``--launches`` gives every point (lowered, like the
    scenarios' own, down to ``min_launches`` when the budget asks)."""
    points: list[Planned] = []
    for scenario, point in work:
        found = cost(results_dir, scenario, point)
        reason = skip_reason(scenario, point)
        if reason is not None:
            points.append(Planned(scenario, point, found, left_out=f"skips here: {reason}"))
        elif found.skips is not None:
            points.append(
                Planned(scenario, point, found, left_out=f"skipped on this runner ({found.source}): {found.skips}")
            )
        else:
            points.append(Planned(scenario, point, found))
    runnable = [p for p in points if p.left_out is None]
    own = launches or max((planned(p.scenario, p.point) for p in runnable), default=1)
    gated = any(p.cost.gate_prompts > MIN_GATE_PROMPTS for p in runnable)

    def count(p: Planned, n: Optional[int]) -> int:
        return n if n is not None else (launches or planned(p.scenario, p.point))

    def total(n: Optional[int], g: Optional[int]) -> float:
        return sum(p.cost.seconds(count(p, n), g) for p in runnable)

    tries: list[tuple[Optional[int], Optional[int]]] = [(None, None)]
    if gated:
        tries.append((None, MIN_GATE_PROMPTS))
    lowest_prompts = MIN_GATE_PROMPTS if gated else None
    tries += [(n, lowest_prompts) for n in range(own - 1, min_launches - 1, -1)]
    n, g = next(((n, g) for n, g in tries if total(n, g) <= budget.seconds), tries[-1])
    n = launches if n is None else n
    placed, left = [], budget.seconds
    for p in points:
        if p.left_out is not None:
            placed.append(p)
            continue
        k = count(p, n)
        prompts = p.cost.gate_prompts if g is None else min(g, p.cost.gate_prompts)
        seconds = p.cost.seconds(k, g)
        if seconds > left:
            why = f"{DOES_NOT_FIT}: needs about {seconds:.0f} s at {k} launch(es), {max(0.0, left):.0f} s of the budget left"
            placed.append(Planned(p.scenario, p.point, p.cost, left_out=why))
            continue
        left -= seconds
        placed.append(Planned(p.scenario, p.point, p.cost, k, prompts, seconds))
    return Plan(budget, tuple(with_detectable(placed)), n, g)


def with_detectable(points: list[Planned], thresholds=None, fdr: Optional[float] = None) -> list[Planned]:
    """Each chosen point with the change the regression check could detect at its planned launches, from its
    earlier record's launch-to-launch noise (the figure ``harness run`` prints under a point, named for what it
    assumes), over the tests of every chosen point."""
    from harness.regression import launch_power
    from harness.regression.thresholds import DEFAULT_FDR, DEFAULT_THRESHOLDS, parse_thresholds

    thresholds = thresholds or parse_thresholds(DEFAULT_THRESHOLDS)
    fdr = DEFAULT_FDR if fdr is None else fdr

    def tested(p: Planned) -> list:
        record = p.cost.record
        return [] if record is None or p.launches < 2 else launch_power.testable(record, thresholds)

    chosen = [p for p in points if p.left_out is None]
    tests = sum(len(tested(p)) for p in chosen)
    level = launch_power.alpha(fdr, tests)
    out = []
    for p in points:
        if p.left_out is not None:
            out.append(p)
            continue
        if p.launches < 2:
            text = "detectable change: none (one launch: no significance test)"
        elif not tested(p):
            text = "detectable change: not known yet (no record here with two or more launches measured its noise)"
        else:
            found = launch_power.detectable(p.cost.record, thresholds, level, launches=p.launches)
            text = (
                f"detectable change if the baseline has this run's noise (80 % power, {p.launches} vs {p.launches} "
                f"launches, FDR {fdr:g} over {tests} test(s)): {', '.join(d.describe() for d in found)}"
            )
        out.append(Planned(p.scenario, p.point, p.cost, p.launches, p.gate_prompts, p.seconds, None, text))
    return out
