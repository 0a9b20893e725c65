"""What a step returns: its contribution to the record (not to be confused with a record's own sections,
``harness.records.base.Part``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from harness.records.record import Record


@dataclass
class Contribution:
    """Metrics to add, metrics that could not be measured (and why), and record parts to set."""

    metrics: dict[str, Optional[float]] = field(default_factory=dict)
    unavailable: dict[str, Optional[str]] = field(default_factory=dict)
    updates: dict[str, Any] = field(default_factory=dict)  # record attribute -> typed part


def apply(record: Record, contribution: Contribution) -> None:
    record.metrics.update(contribution.metrics)
    record.unavailable.update({metric: why for metric, why in contribution.unavailable.items() if why})
    for name, value in contribution.updates.items():
        setattr(record, name, value)  # validated: a part of the wrong type is an error here, not on read
