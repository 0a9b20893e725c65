"""Record parts of the gate's KL tier (``harness.correctness.kl``, ``.paired_kl``, ``.positions``): the paired
test against the noise floor, the prefill and decode phases, the KL distribution and the buckets by position.
Both the gate's result and the dequantized-model check (``harness.records.own_weights``) hold them."""

from __future__ import annotations

from typing import Literal, Optional

from harness.records.base import Part


class KLSpread(Part):
    """Per-position KL pooled over a point's teacher-forced positions (``positions`` of them)."""

    median: float
    p90: float
    p99: float
    max: float
    positions: int


class KLDistribution(Part):
    """``forward``: KL(reference || device); ``reverse``: KL(device || reference); both over the reference's
    stored top-M ids plus one tail bucket, so lower bounds of the full-vocabulary KLs. ``top1_agreement``:
    the share of the ``top1_positions`` positions where the device's top-1 is the reference's token."""

    forward: Optional[KLSpread] = None
    reverse: Optional[KLSpread] = None
    top1_agreement: Optional[float] = None
    top1_positions: int = 0


class PairedTest(Part):
    """The KL tier's test (``harness.correctness.paired_kl``): per-position KL paired with the floor's KL at the
    same position. ``rise``: the geometric-mean factor of device KL over floor KL; ``rise_low``: its one-sided
    lower bound (``alpha``); ``margin``: ``rise_low`` over ``line``, the factor that fails this point (the
    drift line where drift fails, else the fail line); ``detectable``: the smallest rise the drift line
    catches with 80 % power on these positions; ``se_source``: "positions" or "prompts" (bootstrap)."""

    positions: int
    rise: float
    rise_low: float
    line: float
    margin: float
    detectable: float
    alpha: float
    se_source: str
    floor: Literal["positions", "mean"] = "positions"  # "mean": an older reference without per-position floors


class GatePhase(Part):
    """One phase's KL tier (``harness.correctness.kl``): its mean KL over ``positions`` against its own floor;
    ``floor_source`` is "overall" where the reference has no floor for the phase. ``test`` decides the tier;
    a phase with fewer than the gate's ``min_positions`` has none (``verdict`` None, ``pooled`` True): its
    positions count in the point's overall test only."""

    kl_mean: Optional[float] = None
    noise_floor: float
    kl_ratio: Optional[float] = None  # mean KL / mean floor: shown, not judged
    positions: int = 0
    verdict: Optional[Literal["pass", "drift", "fail"]] = None  # the KL tier alone, before fail_on_drift
    floor_source: Literal["phase", "overall"] = "phase"
    test: Optional[PairedTest] = None
    pooled: bool = False


class GatePhases(Part):
    prefill: GatePhase  # the first generated position, from the prompt's forward
    decode: GatePhase  # every later position, one cached decode step each
    note: Optional[str] = None  # why a phase fell back to the overall floor


class PositionBucket(Part):
    """The teacher-forced positions from ``start`` to ``end`` (``harness.correctness.positions``): their mean KL
    against the bucket's own noise floor (the overall one where the reference has none, ``floor_source``);
    ``verdict`` is the bucket's KL tier, None where it is not judged (too few positions, or one bucket)."""

    start: int
    end: int
    positions: int
    kl_mean: float
    noise_floor: float
    kl_ratio: float
    verdict: Optional[Literal["pass", "drift", "fail"]] = None
    floor_source: Literal["bucket", "overall"] = "bucket"
