"""The regression check's one entry: ``harness gate`` and the pytest plugin's end-of-session check both call
``run_check`` with the settings parsed from their options, then print and write JSON from its result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Optional

from harness.regression.check import check
from harness.regression.confirm import confirm
from harness.regression.outcome import Point, RegressionOutcome
from harness.regression.settings import RegressionSettings

if TYPE_CHECKING:
    from harness.records.record import Record


@dataclass(frozen=True)
class Confirmation:
    """``harness gate --confirm K``: rerun what looks like a regression ``launches`` more times with ``rerun``
    (``Runner.relaunch``) and judge those launches alone (``harness.regression.confirm``)."""

    launches: int
    rerun: Callable[[list[Record], int], list[Record]]


@dataclass(frozen=True)
class RegressionResult:
    """What one regression check decided, with the settings it ran under and the exit status it gives."""

    settings: RegressionSettings
    outcome: RegressionOutcome
    exit_code: int  # 0 passed, 1 failed, 3 incomparable, 4 inconclusive under fail_on_unknown

    @property
    def baseline(self) -> str:
        return self.settings.baseline or "baseline"


def run_check(
    settings: RegressionSettings,
    baseline: Iterable[Record],
    candidate: Iterable[Record],
    scope: Optional[set[Point]] = None,
    confirmation: Optional[Confirmation] = None,
) -> RegressionResult:
    """Check ``candidate`` against ``baseline`` under ``settings``; ``scope`` limits which baseline points must
    be present (None: all of them). With ``confirmation``, flagged points are rerun and judged again before
    anything fails. Raises UsageError when nothing can be compared: never a pass."""
    baseline, candidate = list(baseline), list(candidate)
    outcome = check(baseline, candidate, settings, scope=scope)
    if confirmation is not None and confirmation.launches > 0 and outcome.flagged:
        outcome = confirm(outcome, baseline, candidate, settings, confirmation.rerun, confirmation.launches)
    return RegressionResult(settings, outcome, outcome.exit_status(fail_on_unknown=settings.fail_on_unknown))
