"""The report's sections, in the order the page and summary.md show them. A new section is one module
here (``NAME``, ``TEMPLATE``, ``build``, ``markdown``: see ``base``) and one entry in ``SECTIONS``."""

from __future__ import annotations

from harness.report.sections import (
    accuracy,
    correctness,
    engines,
    figures,
    first_next,
    history,
    launches,
    metric_sources,
    moe,
    not_run,
    overview,
    points,
    positions,
    spread,
    time_split,
    warnings,
)
from harness.report.sections.base import Section

SECTIONS: list[Section] = [
    warnings,
    engines,
    overview,
    launches,
    time_split,
    figures,
    first_next,
    correctness,
    positions,
    accuracy,
    spread,
    moe,
    history,
    not_run,
    metric_sources,
    points,
]
