"""The regression check's three-outcome verdicts (harness.regression.verdicts) at their edges, through the
check itself (``regression.check.check`` on hand-built launches, what ``harness gate`` runs) and the printed
line of each test. Each assertion is here because a mutant survived without it
(``python benchmarks/mutation.py regression/verdicts``, docs/benchmarks.md)."""

from __future__ import annotations

import pytest

from harness.records.record import Launch, Record, Samples
from harness.regression import verdicts
from harness.regression.check import check
from harness.regression.thresholds import parse_thresholds

TPOT = parse_thresholds("tpot=5%")[0]
SPEED = parse_thresholds("decode_tokens_per_s=5%")[0]


def _launches(*values: float, point_id="p", metric="tpot_ms") -> Record:
    entries = [Launch(index=i, medians={metric: v}, rounds=5) for i, v in enumerate(values)]
    return Record(
        scenario="demo", point_id=point_id, point={}, status="ok", metrics={metric: values[0]},
        samples=Samples(launches=entries),
    )


BASE = (10.0, 10.1, 9.9, 10.05, 9.95)


def _test(base, new, threshold=TPOT, metric="tpot_ms"):
    outcome = check([_launches(*base, metric=metric)], [_launches(*new, metric=metric)], [threshold])
    (found,) = outcome.tests
    return outcome, found


def test_a_significant_worsening_past_the_limit_is_different_and_fails():
    outcome, found = _test(BASE, tuple(v * 1.2 for v in BASE))
    assert found.verdict == verdicts.DIFFERENT and outcome.exit_code == 1
    assert verdicts.line(found).startswith("DIFFERENT demo::p tpot_ms (worse): +20.0% [95% CI ")
