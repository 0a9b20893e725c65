"""What a step returns: its share of the record."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from harness.records.record import Record


class Skip(Exception):
    """A point this adapter cannot run here, decided before the model loads."""


@dataclass
class Part:
    """Metrics to add, metrics that could not be measured (and why), and record parts to set."""

    metrics: dict[str, Optional[float]] = field(default_factory=dict)
    unavailable: dict[str, Optional[str]] = field(default_factory=dict)
    updates: dict[str, Any] = field(default_factory=dict)  # record attribute -> typed part


def apply(record: Record, part: Part) -> None:
    record.metrics.update(part.metrics)
    record.unavailable.update({metric: why for metric, why in part.unavailable.items() if why})
    for name, value in part.updates.items():
        setattr(record, name, value)  # validated: a part of the wrong type is an error here, not on read
