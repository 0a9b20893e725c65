"""The regression check's thresholds: which metric may worsen by how much (``--max-regression``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.errors import UsageError
from harness.records import metric_names

DEFAULT_THRESHOLDS = "tpot=5%,ttft=10%,energy_per_token=10%"
DEFAULT_FDR = 0.05


@dataclass(frozen=True)
class Threshold:
    name: str  # as the user typed it
    metric: str
    limit: float  # allowed relative worsening, 0.05 = 5 %
    higher_is_better: bool = False

    def change(self, before: float, after: float) -> float:
        """Relative worsening from ``before`` to ``after``: +0.2 is 20 % worse, whatever the direction."""
        worse = (before - after) if self.higher_is_better else (after - before)
        return worse / before


def parse_thresholds(text: str) -> list[Threshold]:
    """``tpot=5%,ttft=10%`` -> thresholds. Any catalogued metric with a direction works as a name (see
    ``harness.records.metrics``); bad entries are quoted back."""
    out = []
    for entry in filter(None, (part.strip() for part in text.split(","))):
        match = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*([0-9]*\.?[0-9]+)\s*(%?)", entry)
        if not match:
            raise UsageError(f"--max-regression: {entry!r}: expected NAME=PERCENT, e.g. tpot=5%")
        name, number, percent = match.groups()
        if not percent:  # "tpot=5" read as a fraction meant 500 %: the unit is never guessed
            raise UsageError(
                f"--max-regression: {entry!r}: give the limit with %, e.g. {name}={number}% "
                f"(or {name}={float(number) * 100:g}% for the fraction {number})"
            )
        try:
            metric = metric_names.resolve(name)
        except UsageError as exc:
            raise UsageError(f"--max-regression: {entry!r}: {exc}") from None
        if metric.higher_is_better is None:
            raise UsageError(
                f"--max-regression: {entry!r}: {metric.name} has no better direction "
                f"({metric.label or metric.name}, {metric.unit}), so it cannot regress"
            )
        out.append(Threshold(name, metric.name, float(number) / 100, metric.higher_is_better))
    if not out:
        raise UsageError("--max-regression: no thresholds given")
    return out
