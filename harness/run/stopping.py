"""When a point has had enough launches: the planned count, each disturbed launch re-run, then with
``measurement.target_rel_ci`` more until the interval of the median TPOT is narrow enough (adaptive stopping)."""

from __future__ import annotations

from typing import Callable, Sequence

from harness.measure.launch_stats import combine, rel_half_width
from harness.records.record import Record
from harness.scenario.measurement import Measurement


def wants_launch(m: Measurement, launches: Sequence[Record], gate_only: bool, planned: Callable[[], int]) -> bool:
    """Another launch: until ``planned()`` launches, each disturbed launch (``Launch.excluded``) re-run up to
    ``disturbed_reruns`` times; then, with ``target_rel_ci``, until the interval of the median TPOT is
    narrow enough or ``max_launches`` is reached. Never after a launch that was not ok. ``planned`` is asked
    only when the rule needs it (``launches: auto`` plans from the stored record, once, and says why)."""
    if not launches:
        return True
    if launches[-1].status != "ok" or gate_only:  # `harness verify` gates once
        return False
    disturbed = sum(1 for r in launches for entry in r.samples.launches if entry.excluded)
    if len(launches) < planned() + min(disturbed, m.disturbed_reruns):
        return True
    if m.target_rel_ci is None or len(launches) >= (m.max_launches or 0):
        return False
    width = rel_half_width(combine(launches))
    return width is None or width > m.target_rel_ci
