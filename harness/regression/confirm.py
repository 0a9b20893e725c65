"""``harness gate --confirm K``: rerun what looks like a regression and judge the new launches alone."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable

if TYPE_CHECKING:
    from harness.records.record import Record
    from harness.regression.outcome import RegressionOutcome
    from harness.regression.settings import RegressionSettings


def confirm(
    outcome: RegressionOutcome,
    baseline: Iterable[Record],
    current: Iterable[Record],
    settings: RegressionSettings,
    rerun: Callable[[list[Record], int], list[Record]],
    launches: int,
) -> RegressionOutcome:
    """``harness gate --confirm K``: rerun the flagged points (``RegressionOutcome.flagged``) ``launches`` more
    times with ``rerun(records, launches)`` (``Runner.relaunch``: each record comes back with the new
    launches appended after its own), then judge those points again on the new launches alone, with the
    false discovery rate held over that smaller family: the launches that raised the alarm do not also
    confirm it, so screening and confirming stay independent. Other points keep their verdicts. Pure
    apart from ``rerun``."""
    from dataclasses import replace

    from harness.measure.launch_stats import since
    from harness.records.record import recorded_launches
    from harness.regression.check import check, index, key
    from harness.regression.outcome import RegressionOutcome

    flagged = outcome.flagged
    if not flagged or launches < 1:
        return outcome
    baseline, now = list(baseline), index(current, "new records")
    targets = [now[point] for point in flagged if point in now]
    before = {key(r): len(recorded_launches(r)) for r in targets}
    fresh = {}
    for record in rerun(targets, launches):
        if key(record) in before and len(recorded_launches(record)) > before[key(record)]:
            fresh[key(record)] = since(record, before[key(record)])
    if not fresh:
        return replace(
            outcome,
            notes=[
                *outcome.notes,
                f"--confirm {launches}: the rerun returned no new launches, so nothing was confirmed",
            ],
        )
    second = check(baseline, fresh.values(), settings, scope=set(fresh))
    kept = [f for f in outcome.findings if f.kind != "regression" or (f.scenario, f.point_id) not in fresh]
    verdicts = {
        (f.scenario, f.point_id): "still regressed" if f.kind == "regression" else f.kind for f in second.findings
    }
    names = ", ".join(f"{s}::{p} ({verdicts.get((s, p), 'cleared')})" for s, p in fresh)
    # a known failure is told by the first check; the reruns do not gate again, so not a second FIXED
    again = [f for f in second.findings if f.kind != "fixed (strict)"]
    return RegressionOutcome(
        findings=kept + again,
        compared=outcome.compared,
        fdr=outcome.fdr,
        notes=[
            *outcome.notes,
            *(f"confirmation: {n}" for n in second.notes),
            f"--confirm {launches}: reran {names} and judged the new launches alone against the baseline",
        ],
        tests=[t for t in outcome.tests if (t.scenario, t.point_id) not in fresh] + second.tests,
        beyond_limit=[p for p in outcome.beyond_limit if p not in fresh] + second.beyond_limit,
        single_launch=[p for p in outcome.single_launch if p not in fresh] + second.single_launch,
        incomparable=outcome.incomparable,
        verdict_changes=outcome.verdict_changes,  # the reruns time the points, they do not gate them again
        not_judged=outcome.not_judged,
        known=outcome.known,
        fixed=outcome.fixed,
    )
