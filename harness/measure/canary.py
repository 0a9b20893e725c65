"""The machine-speed canary (issue #30): a short fixed workload, compute (an integer matrix product, which
numpy runs on one core without BLAS threads, so every process runs the same work) and memory (a 32 MiB
copy), timed at the edges of every launch's timed window and compared with the machine's own speed
calibrated once at the start of the run. Every reading runs in a child process (``python -m
harness.measure.canary_child``), so the calibration and the launches time the same thing in the same kind
of process, and the workload's memory never counts in a point's peak RSS. The child is started once per
process that takes readings (the run's, each worker's) and serves its readings over a pipe: each reading
builds the workload afresh as before; only the child's start (Python and numpy, ~0.2 s) is no longer paid at
both edges of every launch.

A canary that took longer (or shorter) than the calibration by more than ``measurement.canary_tolerance``
says the machine changed speed around the launch (a neighbour, a clock change, a noisy host), so the
launch is re-run (``measurement.disturbed_reruns``) and kept but excluded from the regression check's
significance test (``Launch.excluded``). Nothing here runs at import; numpy loads inside the functions.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from typing import TYPE_CHECKING, Iterator, Optional

if TYPE_CHECKING:  # the child process imports numpy alone: it starts fast
    from harness.records.samples import CanaryCalibration, CanaryReading

SIDE = 128  # the matrix product: SIDE x SIDE int64, REPEAT times
REPEAT = 5
COPY_MIB = 32  # the memory copy: COPY_PASSES passes over this many MiB
COPY_PASSES = 4
TIMES = 3  # a reading is the median of this many timed runs of the workload, after one untimed
CALIBRATION_RUNS = 5  # the calibration is the median of this many readings
# A busy machine at the start of a run made a calibration that every launch then beat ("0.06x its
# calibration"), unsaid. Two signs of it: the calibration's readings spread more than CALIBRATION_SPREAD
# (max/min - 1; the calibration is taken again, at most CALIBRATION_ATTEMPTS times), or a launch's canary
# under FASTER_THAN_CALIBRATION of the calibration at both edges (the runner calibrates again).
CALIBRATION_SPREAD = 0.25
CALIBRATION_ATTEMPTS = 3
FASTER_THAN_CALIBRATION = 0.7


class _Workload:
    """The canary's arrays, made once per reading (the first pass pays the page faults, untimed)."""

    def __init__(self):
        import numpy as np

        rng = np.random.default_rng(0)
        self.a = rng.integers(0, 100, (SIDE, SIDE), dtype=np.int64)
        self.b = rng.integers(0, 100, (SIDE, SIDE), dtype=np.int64)
        self.src = np.ones(COPY_MIB * 2**20 // 8)
        self.dst = np.empty_like(self.src)
        self.copyto = np.copyto

    def run(self) -> float:
        began = time.perf_counter()
        for _ in range(REPEAT):
            self.a @ self.b
        for _ in range(COPY_PASSES):
            self.copyto(self.dst, self.src)
        return time.perf_counter() - began


def _readings(count: int) -> list[float]:
    """In this process: ``count`` readings, each the median of ``TIMES`` runs, after one untimed run."""
    work = _Workload()
    work.run()
    return [statistics.median(work.run() for _ in range(TIMES)) for _ in range(count)]


def _in_child(count: int) -> list[float]:
    """``count`` readings from this process's canary child (``harness.measure.canary_child``)."""
    from harness.measure import canary_child

    return canary_child.readings(count)


def time_workload() -> float:
    """Seconds the canary workload takes now (one reading)."""
    return _in_child(1)[0]


def time_readings(count: int) -> list[float]:
    """``count`` readings now, from one child process."""
    return _in_child(count)


def spread(readings: list[float]) -> float:
    """How far a calibration's readings lie apart: max/min - 1 (0.25 = the slowest took 25 % longer)."""
    return max(readings) / min(readings) - 1 if readings and min(readings) > 0 else 0.0


def calibrate(runs: int = CALIBRATION_RUNS, attempts: int = CALIBRATION_ATTEMPTS) -> CanaryCalibration:
    """The machine's canary time at the start of a run: the median of ``runs`` readings, taken again (at
    most ``attempts`` times in all) while they spread more than ``CALIBRATION_SPREAD``; the least spread
    attempt is kept, and ``disturbed`` says so when even that one spread too far."""
    from harness.records.samples import CanaryCalibration

    tries: list[list[float]] = []
    while len(tries) < max(attempts, 1):
        tries.append(_in_child(runs))
        if spread(tries[-1]) <= CALIBRATION_SPREAD:
            break
    readings = min(tries, key=spread)
    disturbed = None
    if spread(readings) > CALIBRATION_SPREAD:
        disturbed = (
            f"its readings spread {spread(readings):.0%} ({min(readings):.4f}-{max(readings):.4f} s) in each of "
            f"{len(tries)} attempts, more than {CALIBRATION_SPREAD:.0%}: the machine was busy while the run calibrated"
        )
    return CanaryCalibration(
        seconds=statistics.median(readings),
        readings_s=[round(r, 6) for r in readings],
        workload=f"int64 matmul {SIDE}x{SIDE} x{REPEAT} + {COPY_MIB} MiB copy x{COPY_PASSES}, median of {TIMES}, "
        "in a child process",
        attempts=len(tries),
        disturbed=disturbed,
    )


def faster_than_calibration(canary: Optional[CanaryReading]) -> Optional[str]:
    """Why a launch's canary says the calibration itself was disturbed: the workload ran in under
    ``FASTER_THAN_CALIBRATION`` of the calibration's time at both edges of the window (a machine does not
    get that much faster; it was busier when the run calibrated). None otherwise."""
    if canary is None or max(canary.ratio_before, canary.ratio_after) >= FASTER_THAN_CALIBRATION:
        return None
    return (
        f"the canary ran at {canary.ratio_before:.2f}x and {canary.ratio_after:.2f}x its calibration at the edges "
        "of the timed window: the calibration was disturbed (the machine was busier when the run calibrated)"
    )


def reading(calibration: CanaryCalibration, before_s: float, after_s: float) -> CanaryReading:
    """A launch's canary: its times before and after the timed window and their ratios to the calibration."""
    from harness.records.samples import CanaryReading

    return CanaryReading(
        before_s=round(before_s, 6),
        after_s=round(after_s, 6),
        ratio_before=round(before_s / calibration.seconds, 4),
        ratio_after=round(after_s / calibration.seconds, 4),
    )


MAX_RECALIBRATIONS = 2  # a run calibrates again at most this many times (a machine that keeps changing)


def disturbed_by(launch, calibration: Optional[CanaryCalibration]) -> Optional[str]:
    """``faster_than_calibration`` for the last launch of ``launch`` (a launch's record), or None."""
    entries = launch.samples.launches if launch is not None else []
    if calibration is None or not entries:
        return None
    return faster_than_calibration(entries[-1].canary)


def message(why: Optional[str], old: Optional[CanaryCalibration], new: CanaryCalibration) -> str:
    """The run's one line on a disturbed calibration: what showed it, and what the run did."""
    if why and old is not None:
        text = (
            f"canary: {why}; calibrated again: {old.seconds:.4f} s -> {new.seconds:.4f} s; that launch is kept, "
            "marked and excluded from the significance test, later launches compare with the new calibration"
        )
    else:
        text = (
            f"canary: the calibration's readings spread more than {CALIBRATION_SPREAD:.0%} (a busy machine); "
            f"calibrated {new.attempts} times, kept {new.seconds:.4f} s (spread {spread(new.readings_s):.0%})"
        )
    return text + (f"; still disturbed: {new.disturbed}" if new.disturbed else "")


class Edges:
    """What ``around()`` yields; ``result()`` is the reading once the with-block has ended, ``seconds`` the
    wall time both edges took (the record's time split counts it as ``canary_s``)."""

    _result: Optional[CanaryReading] = None
    seconds: float = 0.0

    def result(self) -> Optional[CanaryReading]:
        return self._result


@contextlib.contextmanager
def around(calibration: Optional[CanaryCalibration]) -> Iterator[Edges]:
    """``with around(calibration) as canary: <timed window>``: the canary runs just before and just after
    the window, never inside it. Without a calibration nothing runs and ``result()`` is None."""
    edges = Edges()
    if calibration is None:
        yield edges
        return
    began = time.perf_counter()
    before = time_workload()
    edges.seconds = time.perf_counter() - began
    yield edges  # an exception in the window propagates: a launch that failed needs no canary
    began = time.perf_counter()
    edges._result = reading(calibration, before, time_workload())
    edges.seconds += time.perf_counter() - began


def moved(canary: Optional[CanaryReading], tolerance: float) -> Optional[str]:
    """Why the canary says the machine's speed moved beyond ``tolerance`` (0.15 = 15 %), else None."""
    if canary is None:
        return None
    worst = max((canary.ratio_before, "before"), (canary.ratio_after, "after"), key=lambda x: abs(x[0] - 1))
    if abs(worst[0] - 1) <= tolerance and tolerance > 0:
        return None
    faster = faster_than_calibration(canary)
    return (
        f"canary {worst[0]:.2f}x its calibration {worst[1]} the timed window "
        f"(tolerance {tolerance:.0%}; before {canary.ratio_before:.2f}x, after {canary.ratio_after:.2f}x)"
        + ("; faster at both edges: the calibration was disturbed, not this launch" if faster else "")
    )


def exclusion(canary: Optional[CanaryReading], noisy: Optional[str], tolerance: float) -> Optional[str]:
    """Why a launch is excluded from the significance test: its canary moved, or its machine state says
    the machine was disturbed (``machine_state.noisy``); None for a clean launch."""
    reasons = [why for why in (moved(canary, tolerance), noisy and f"noisy machine: {noisy}") if why]
    return "; ".join(reasons) or None
