"""What a worker started beside another adds to the sweep's time split: only the wait it caused, so the two
records of a pair of starts hold the sweep's wait between them, once."""

from __future__ import annotations

import pytest

from harness.run.launchers.worker_records import spare_wait, waited_part


def test_a_next_workers_start_counts_from_when_this_groups_worker_was_ready():
    # both began at 10; this group's ready at 13, the next at 14: the sweep waited 1 s more for it alone
    assert spare_wait(10.0, 13.0, True, 14.0) == pytest.approx(1.0)
    # the next one ready first: the sweep waited for this group's worker anyway
    assert spare_wait(10.0, 13.0, True, 12.0) == 0.0
    # this group's worker still starting when the next was ready (the wait ends at the next's): nothing added
    assert spare_wait(10.0, None, True, 12.0) == 0.0
    # this group's worker gone: the sweep waited for the next one from the start
    assert spare_wait(10.0, None, False, 12.5) == pytest.approx(2.5)


def test_the_waited_part_of_a_start_is_its_process_start_first_then_its_imports():
    assert waited_part((0.3, 2.0), 1.0) == pytest.approx((0.3, 0.7))
    assert waited_part((0.3, 2.0), 0.1) == pytest.approx((0.1, 0.0))
    assert waited_part((0.3, 2.0), 5.0) == pytest.approx((0.3, 2.0))  # never more than the start itself
    assert waited_part((0.3, 2.0), 0.0) == (0.0, 0.0)
