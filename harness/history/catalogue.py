"""What the history needs to know about metrics, in one place: direction and short names, from the
metric catalogue ``harness.records.metrics``."""

from __future__ import annotations

from typing import Iterable, Optional


def higher_is_better(metric: str) -> Optional[bool]:
    """True or False for a catalogued metric that can get better or worse; None for one that cannot
    (counts, bounds) and for names outside the catalogue (an engine's own figures): never a regression."""
    from harness.records import metric_names

    entry = metric_names.find(metric)
    return None if entry is None else entry.higher_is_better


def resolve(name: str, known: Iterable[str]) -> str:
    """A metric name from what a user typed: the name itself or its short alias (``tpot``)."""
    from harness.records import metrics

    known = set(known)
    if name in known:
        return name
    entry = metrics.BY_ALIAS.get(name)
    return entry.name if entry is not None else name
