"""Drift within one launch: whether per-round TPOT trended over the launch's rounds (thermal throttling, a
neighbour starting), by a Theil-Sen slope with Kendall's exact trend test. A pure function of the rounds;
scipy loads inside it, so ``import harness`` stays light. ``harness.measure.launch_stats`` stores the result in
each launch's entry."""

from __future__ import annotations

import math
import statistics
from typing import Optional, Sequence

from harness.records.samples import Drift

DRIFT_P = 0.05


def _fewest_rounds(p: float) -> int:
    """Rounds for Kendall's exact two-sided test to be able to reach ``p`` at all: the most extreme order
    of n rounds has p = 2 / n!, so 4 rounds can never go below 0.083 and 5 can (0.017)."""
    n = 2
    while 2 / math.factorial(n) > p:
        n += 1
    return n


DRIFT_MIN_ROUNDS = _fewest_rounds(DRIFT_P)
DRIFT_TOTAL = 0.05  # a significant trend worth flagging moves the metric by more than this over a launch


def drift(rounds: Sequence) -> list[Drift]:
    """The trend of per-round TPOT (mean inter-token gap, ms) over the round index: a Theil-Sen slope
    relative to the median, with Kendall's tau test. Flagged when significant and the fitted change over
    the launch exceeds ``DRIFT_TOTAL`` (thermal throttling, a neighbour starting). Needs
    ``DRIFT_MIN_ROUNDS`` rounds with tokens after the first; with fewer the entry says it was not checked
    (an empty list would read as "no drift")."""
    tpot = [statistics.fmean(r.gaps_s) * 1e3 for r in rounds if r.gaps_s]
    if len(tpot) < DRIFT_MIN_ROUNDS:
        too_few = (
            f"not checked: {len(tpot)} timed round(s) with tokens; the trend test needs {DRIFT_MIN_ROUNDS} "
            f"to be able to reach p < {DRIFT_P} (measurement.min_rounds: {DRIFT_MIN_ROUNDS})"
        )
        return [Drift(metric="tpot_ms", checked=False, why=too_few)]
    from scipy.stats import kendalltau, theilslopes  # only for a test that can run (about 1 s to import)

    order = list(range(len(tpot)))
    level = statistics.median(tpot)
    slope = float(theilslopes(tpot, order).slope) / level if level > 0 else 0.0
    tau_p = float(kendalltau(order, tpot).pvalue)
    p_value = None if math.isnan(tau_p) else tau_p  # constant rounds: no trend to test
    total = slope * (len(tpot) - 1)
    flagged = p_value is not None and p_value < DRIFT_P and abs(total) > DRIFT_TOTAL
    why: Optional[str] = None
    if flagged:
        why = (
            f"tpot_ms {'rose' if total > 0 else 'fell'} {abs(total):.0%} over {len(tpot)} rounds "
            f"(Theil-Sen {slope:+.2%} a round, Kendall p={p_value:.2g}): the machine changed during the "
            "launch (throttling, a busy neighbour); see the launch's machine state"
        )
    return [Drift(metric="tpot_ms", slope_per_round=slope, p_value=p_value, flagged=flagged, why=why)]
