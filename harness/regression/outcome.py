"""What the regression check decides, as data: a metric's launch-level test, a finding, the outcome."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from harness.errors import EXIT_INCOMPARABLE, EXIT_INCONCLUSIVE
from harness.regression.thresholds import DEFAULT_FDR

Point = tuple[str, str]


@dataclass
class MetricTest:
    """One metric of one point tested on launch-level values (each launch's median is one value)."""

    scenario: str
    point_id: str
    metric: str
    limit: float
    base_values: tuple[float, ...]
    new_values: tuple[float, ...]
    before: float  # median of the baseline's launch medians
    after: float
    change: float  # relative worsening: +0.2 is 20 % worse, whatever the metric's direction
    min_p: float  # the smallest p these launch counts can reach
    p_value: Optional[float] = None  # the launch test's one-sided p (Mann-Whitney U by default), worse direction
    q_value: Optional[float] = None  # Benjamini-Hochberg adjusted over every launch-level test of the run
    ratio_low: Optional[float] = None  # 95 % bootstrap interval of after / before
    ratio_high: Optional[float] = None
    higher_is_better: bool = False
    # The three-outcome verdict (harness.regression.verdicts): different | same | unknown.
    verdict: Optional[str] = None
    better_p: Optional[float] = None  # the launch test's one-sided p in the better direction ...
    better_q: Optional[float] = None  # ... Benjamini-Hochberg adjusted over the run's tests
    equivalence_p: Optional[float] = None  # TOST on log values within +-limit (<= 0.05: same)
    cv: Optional[float] = None  # launch-to-launch CV, both sides pooled
    detectable: Optional[float] = None  # worsening called different in 80 % of nights at these launches
    launches_needed: Optional[int] = None  # unknown: launches a side that would decide it (None: over 50)

    @property
    def launches(self) -> tuple[int, int]:
        return len(self.base_values), len(self.new_values)

    @property
    def ratio(self) -> float:
        return self.after / self.before

    @property
    def beyond_limit(self) -> bool:
        return self.change > self.limit

    def significant(self, fdr: float) -> bool:
        return self.q_value is not None and self.q_value <= fdr

    @property
    def name(self) -> str:
        return f"{self.scenario}::{self.point_id} {self.metric}"


@dataclass
class Finding:
    scenario: str
    point_id: str
    # missing | failed | skipped | agreement | accuracy | regression | incomparable | not judged
    # | known failure (a scenario's known_failures entry still failing) | fixed (a known failure that now passes)
    # | fixed (strict) (one whose entry is strict: a finding, as pytest's strict XPASS fails)
    kind: str
    message: str
    metric: Optional[str] = None  # regressions: which metric
    test: Optional[MetricTest] = None  # regressions judged on launch-level values

    def __str__(self) -> str:
        words = {"incomparable": "INCOMPARABLE", "not judged": "NOT JUDGED", "known failure": "KNOWN FAILURE"}
        word = {**words, "fixed": "FIXED"}.get(self.kind, "FAIL")
        return (
            f"{word} {self.scenario}::{self.point_id}: {self.message}"
            if word != "FAIL"
            else (f"FAIL {self.scenario}::{self.point_id}: {self.kind}: {self.message}")
        )


@dataclass(frozen=True)
class VerdictChange:
    """A compared point whose correctness-gate verdict differs from the baseline's (both sides gated): run or
    verify records alike, so two ``harness verify --results`` directories compare on their verdicts."""

    scenario: str
    point_id: str
    before: str
    after: str

    def __str__(self) -> str:
        return f"CORRECTNESS {self.scenario}::{self.point_id}: {self.before} -> {self.after} (baseline -> new)"


@dataclass
class RegressionOutcome:
    findings: list[Finding] = field(default_factory=list)
    compared: int = 0  # points present in both runs
    notes: list[str] = field(default_factory=list)  # things checked with less than full information
    tests: list[MetricTest] = field(default_factory=list)  # launch-level tests, all points and metrics
    fdr: float = DEFAULT_FDR
    beyond_limit: list[Point] = field(default_factory=list)  # points with a metric past its threshold
    single_launch: list[Point] = field(default_factory=list)  # judged without launch statistics
    incomparable: list[Finding] = field(default_factory=list)  # fingerprints differ: not judged on figures
    verdict_changes: list[VerdictChange] = field(default_factory=list)  # the gate's verdict, baseline -> new
    not_judged: list[Finding] = field(default_factory=list)  # the correctness gate's KL tier had too few positions
    known: list[Finding] = field(default_factory=list)  # known failures still failing: told, not failed
    fixed: list[Finding] = field(default_factory=list)  # known failures now passing (strict ones are findings)

    @property
    def passed(self) -> bool:
        return not self.findings and not self.incomparable

    @property
    def exit_code(self) -> int:
        """0 passed, 1 failed, ``EXIT_INCOMPARABLE`` when nothing failed but some points could not be compared."""
        return 1 if self.findings else EXIT_INCOMPARABLE if self.incomparable else 0

    @property
    def unknown(self) -> list[MetricTest]:
        """Launch-level tests neither shown different nor shown the same: inconclusive."""
        return [t for t in self.tests if t.verdict == "unknown"]

    def exit_status(self, fail_on_unknown: bool = False) -> int:
        """``exit_code``, or ``EXIT_INCONCLUSIVE`` when it would pass but a test is inconclusive or a point's
        correctness not judged, and the caller asked to fail on that (``harness gate --fail-on-unknown``)."""
        code = self.exit_code
        undecided = self.unknown or self.not_judged
        return EXIT_INCONCLUSIVE if code == 0 and fail_on_unknown and undecided else code

    @property
    def flagged(self) -> list[Point]:
        """Points worth more launches (``--confirm``): regressed, or past a threshold without significance."""
        regressed = [(f.scenario, f.point_id) for f in self.findings if f.kind == "regression"]
        return list(dict.fromkeys([*regressed, *self.beyond_limit]))
