"""Record parts of the raw measurements: rounds, launches, intervals, drift and the time split."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import Field

from harness.records.base import Number, Part


class RoundSample(Part):
    """One timed generation in seconds (``measure.Round`` as stored)."""

    prompt_index: int
    prompt_tokens: int
    batch_size: int
    ttft_s: float
    gaps_s: list[float]
    e2e_s: float
    launch: int = 0  # which independent launch (record.samples.launches) timed it


class Drift(Part):
    """The trend of a per-round figure within one launch: throttling or a neighbour starting shows as a slope."""

    metric: str
    checked: bool = True  # False: too few rounds for the test to ever fire (``why`` says how many it needs)
    slope_per_round: Optional[float] = None  # relative change per round (0.01 = +1 % a round), Theil-Sen
    p_value: Optional[float] = None
    flagged: bool = False
    why: Optional[str] = None


class CanaryCalibration(Part):
    """The machine's canary time (``harness.measure.canary.calibrate``), taken at the start of a run or
    reused from an earlier run on the same machine, stored in the record's environment under ``canary``."""

    seconds: float  # the median of the readings
    readings_s: list[float] = Field(default_factory=list)
    workload: str = ""
    attempts: int = 1  # calibrations taken: one more each time the readings spread too far
    disturbed: Optional[str] = None  # why this calibration is not the quiet machine's speed; None: it is
    taken_at: Optional[str] = None  # when it was taken (ISO 8601, UTC); None: an older record
    # True: taken by an earlier run on this machine and reused (``harness.measure.calibration_store``),
    # after ``check_s``, the best of the readings at this run's start, agreed with it
    reused: bool = False
    check_s: Optional[float] = None


class CanaryReading(Part):
    """A launch's canary (``harness.measure.canary``): the workload's seconds just before and just after the
    timed window, and each over the run's calibration (1.0 = as fast as at the start, 1.3 = 30 % slower)."""

    before_s: float
    after_s: float
    ratio_before: float
    ratio_after: float

    @property
    def ratio(self) -> float:
        """The mean of the two edges' ratios: the machine's speed factor over the launch."""
        return (self.ratio_before + self.ratio_after) / 2


class Launch(Part):
    """One independent launch of a point: a fresh worker loaded the engine afresh and ran the warm-up and
    the timed rounds. ``medians`` are the launch's medians of the headline metrics (``metrics.LAUNCH``).
    ``excluded`` says why the launch is kept (its figures count in the point's medians and intervals) but
    left out of the regression check's significance test: its canary moved, or the machine was disturbed."""

    index: int
    status: Literal["ok", "skipped", "failed", "timeout"] = "ok"  # a launch ran or did not: never incomplete
    reason: Optional[str] = None
    medians: dict[str, Optional[Number]] = Field(default_factory=dict)
    rounds: int = 0
    drift: list[Drift] = Field(default_factory=list)
    machine: dict[str, Any] = Field(default_factory=dict)  # harness.measure.machine_state during the timed window
    started_at: Optional[str] = None
    wall_s: Optional[Number] = None
    canary: Optional[CanaryReading] = None  # None: no canary ran (an older record, a run without calibration)
    excluded: Optional[str] = None

    @property
    def counted(self) -> bool:
        """An ok launch the regression check's significance test counts."""
        return self.status == "ok" and self.excluded is None


class Interval(Part):
    """A metric over launches: the median of launch medians with its 95 % confidence interval."""

    estimate: Optional[Number] = None
    low: Optional[Number] = None
    high: Optional[Number] = None
    cv: Optional[Number] = None  # launch-to-launch coefficient of variation
    launches: int = 0
    samples: int = 0  # per-round (or per-token) values behind the estimate
    method: str = "single launch"  # bootstrap | log-t (positive values) | t | single launch
    # Variance components (harness.measure.noise, Kalibera & Jones) of the metric's per-round values, relative
    # to its mean: round to round inside a launch, and what launches add on top; None where not measurable.
    within_cv: Optional[Number] = None
    between_cv: Optional[Number] = None
    rounds_per_launch: Optional[Number] = None  # harmonic mean of the launches' round counts


class Samples(Part):
    rounds: list[RoundSample] = Field(default_factory=list)
    warmup_s: list[float] = Field(default_factory=list)
    warmup_tokens: list[int] = Field(default_factory=list)  # new tokens of each warm-up round (empty in older records)
    rounds_ms: Optional[dict[str, list[float]]] = None  # records carried in pytest-benchmark JSON keep only these
    launches: list[Launch] = Field(default_factory=list)
    intervals: dict[str, Interval] = Field(default_factory=dict)  # metric name -> over launches


class TimeSplit(Part):
    """Where a point's wall time went, in seconds, summed over its launches (``harness.accounting``)."""

    process_start_s: Number = 0.0
    imports_s: Number = 0.0
    conversion_s: Number = 0.0
    resolve_s: Number = 0.0  # the point's tokenizer (parsed once per process) and prompts, conversion aside
    load_s: Number = 0.0
    warmup_s: Number = 0.0
    canary_s: Number = 0.0  # the machine-speed canary's two readings at the timed window's edges
    timed_s: Number = 0.0
    gate_s: Number = 0.0
    accuracy_s: Number = 0.0
    other_s: Number = 0.0
