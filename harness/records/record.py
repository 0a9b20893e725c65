"""The result record's typed parts (flattened into columns by ``harness.records.columns``).

A record is one JSON file per sweep point (see ``harness.records.store`` for the store). Parts are pydantic
models so a file read back is checked: a wrong type is a ``ValueError`` naming the file and field.
Older versions are upgraded as they load (``harness.records.migration``).
"""

from __future__ import annotations

from typing import Any, Literal, Optional, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.records.accuracy import Accuracy
from harness.records.base import Number, Part
from harness.records.correctness import Correctness
from harness.records.engine import EngineInfo
from harness.records.gate_verdicts import NOT_JUDGED
from harness.records.metrics import LAUNCH
from harness.records.migration import SCHEMA_VERSION, migrate
from harness.records.samples import (
    Launch,
    Samples,
    TimeSplit,
)

# A point's status. ``incomplete``: a point of several launches whose record was written after some of them
# (a sweep writes each point's record after each launch pass) and whose run was interrupted before the rest;
# readers refuse it (``harness.records.store.iter_records``) and ``harness run --resume`` runs the point again.
Status = Literal["ok", "skipped", "failed", "timeout", "incomplete"]
STATUSES: tuple[str, ...] = get_args(Status)
INCOMPLETE = "incomplete"
# What wrote a record: ``run`` (``harness run``, the pytest plugin: timing and the gate) or ``verify``
# (``harness verify --results``: the correctness gate alone, no timing). Stored only when not ``run``, so a
# run record reads as before; a verify record has its own file name (``harness.records.store.record_path``).
RecordKind = Literal["run", "verify"]


class ModelInfo(Part):
    name: Optional[str] = None
    checksum: Optional[str] = None
    hf_dir: Optional[str] = None
    gguf: Optional[str] = None


class Failure(Part):
    """Why a point failed: the Python traceback, or (isolated child died) its exit and output."""

    traceback: Optional[str] = None
    output_tail: Optional[str] = None
    exit_code: Optional[int] = None
    signal: Optional[str] = None  # e.g. SIGSEGV, when a signal killed the engine process


class KnownFailure(Part):
    """The scenario's ``known_failures`` entry this point matches: the failure it expects and why
    (``harness.records.verdict`` reports the point as fixed when it passes; ``strict`` then fails the run)."""

    reason: str
    strict: bool = False


class Routing(Part):
    """MoE routing over a prefill of the point's prompts (``RoutingMonitor.summary``)."""

    model_config = ConfigDict(extra="allow")  # engines may add their own routing figures
    n_experts: Optional[int] = None
    capacity: Optional[int] = None
    counts: list[list[int]]  # [layer][expert] tokens routed
    imbalance: list[float]  # per layer: max / mean tokens per expert
    popularity: list[list[int]] = Field(default_factory=list)
    dropped: list[int] = Field(default_factory=list)  # per layer, under a capacity
    drop_rate: float = 0.0
    tokens: Optional[int] = None
    chunk: Optional[int] = None


class Record(BaseModel):
    model_config = ConfigDict(validate_assignment=True, extra="forbid")  # a misspelt part is an error, not lost

    scenario: str
    point_id: str
    point: dict[str, Any]  # the point's axes
    kind: RecordKind = "run"
    status: Status
    reason: Optional[str] = None  # why skipped, or the error when failed
    settings: dict[str, Any] = Field(default_factory=dict)  # model, generation, measurement as resolved
    model: ModelInfo = Field(default_factory=ModelInfo)
    metrics: dict[str, Optional[Number]] = Field(default_factory=dict)  # names in harness.records.metrics
    units: dict[str, str] = Field(default_factory=dict)
    samples: Samples = Field(default_factory=Samples)  # raw timings, so statistics can be recomputed
    time_split: Optional[TimeSplit] = None
    correctness: Optional[Correctness] = None  # None: the scenario has no gate
    accuracy: Optional[Accuracy] = None  # None: the scenario asks for no task accuracy
    engine: EngineInfo = Field(default_factory=EngineInfo)  # the adapter's describe(): the engine that ran
    outputs: dict[str, str] = Field(default_factory=dict)  # generated text by prompt index
    prompt_lengths: list[int] = Field(default_factory=list)
    unavailable: dict[str, str] = Field(default_factory=dict)  # metric name -> why it is missing or partial
    failure: Optional[Failure] = None
    known_failure: Optional[KnownFailure] = None  # None: the scenario expects no failure of this point
    routing: Optional[Routing] = None
    log: list[str] = Field(default_factory=list)  # an isolated child's progress lines, replayed by the parent
    environment: dict[str, Any] = Field(default_factory=dict)
    scenario_path: Optional[str] = None
    started_at: Optional[str] = None
    finished_at: Optional[str] = None
    schema_version: int = SCHEMA_VERSION

    @field_validator("correctness", "accuracy", "failure", "routing", mode="before")
    @classmethod
    def _empty_is_none(cls, value):
        return value or None  # {} meant "none" in version 1

    @field_validator("environment", mode="before")
    @classmethod
    def _none_is_empty(cls, value):
        return {} if value is None else value

    @property
    def verdict(self) -> Optional[str]:
        """The correctness gate's verdict; None when no gate ran."""
        return self.correctness.verdict if self.correctness else None

    @property
    def correctness_only(self) -> bool:
        """A gate-only record (written by ``harness verify``, stored as kind ``verify``): the gate's verdict and
        parts, no timing; timing readers pass over it where the point also has a run record
        (``harness.records.store.timing_view``)."""
        return self.kind == "verify"

    def as_correctness_only(self) -> Record:
        """This record as ``harness verify`` stores it: kind ``verify``, every timing figure left out."""
        cleared = {"metrics": {}, "units": {}, "samples": Samples(), "time_split": None, "unavailable": {}}
        return self.model_copy(update={"kind": "verify", **cleared})

    @property
    def verdict_failed(self) -> bool:
        """The point ran but a verdict on it failed: the correctness gate, or a task's non-inferiority margin."""
        return self.verdict == "fail" or (self.accuracy is not None and self.accuracy.verdict == "fail")

    @property
    def known_failure_fixed(self) -> bool:
        """A point the scenario expects to fail ran and passed every verdict: the known failure is fixed."""
        return self.known_failure is not None and self.status == "ok" and not self.verdict_failed

    @property
    def not_judged(self) -> bool:
        """The gate's top-k checks passed but its KL tier had too few positions to judge: not a pass."""
        return self.verdict == NOT_JUDGED

    def to_dict(self) -> dict:
        # stored only where they say something, so a record without them reads as before
        left_out = {"kind"} if self.kind == "run" else set()
        left_out |= {"known_failure"} if self.known_failure is None else set()
        return self.model_dump(mode="python", exclude=left_out or None)

    @classmethod
    def from_dict(cls, data: dict, source: object = None) -> Record:
        """A record from its JSON form (any supported version); a wrong type is a ValueError naming
        ``source`` (the file) and the field."""
        if not isinstance(data, dict):
            raise ValueError(f"{source or 'record'}: expected a JSON object, got {type(data).__name__}")
        try:
            data = migrate(dict(data))
        except ValueError as exc:
            raise ValueError(f"{source}: {exc}" if source else str(exc)) from None
        try:
            record = cls.model_validate(data)
        except ValidationError as exc:
            raise ValueError(describe_errors(exc, source)) from None
        from harness.records.physics import impossible

        problem = impossible(record)  # shapes are right; now the values must be possible
        if problem:
            raise ValueError(f"{source}: {problem}" if source else problem)
        return record


def describe_errors(exc: ValidationError, source: object = None) -> str:
    """``path: field: expected ..., got ...`` per problem, one per line."""
    lines = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "(top level)"
        message = err["msg"].removeprefix("Value error, ").replace("Input should be", "expected")
        message = message[0].lower() + message[1:]
        if "input" in err and err["type"] != "missing":
            message += f", got {err['input']!r}"[:200]
        lines.append(f"{source}: {field}: {message}" if source else f"{field}: {message}")
    return "\n".join(lines)


def recorded_launches(record: Record) -> list[Launch]:
    """The launches a record holds (not how many a point is planned to get: ``PointRunner.planned_launches``); a record written before launches existed (or a single-launch record whose
    status the run decided after the launch entry) counts as one launch with the record's status."""
    entries = list(record.samples.launches)
    if len(entries) > 1:
        return entries
    first = (
        entries[0]
        if entries
        else Launch(
            index=0,
            rounds=len(record.samples.rounds),
            started_at=record.started_at,
            medians={name: record.metrics[name] for name in LAUNCH if record.metrics.get(name) is not None},
        )
    )
    status = "ok" if record.status == INCOMPLETE else record.status  # its one launch ran; more were to come
    return [first.model_copy(update={"index": 0, "status": status, "reason": record.reason})]


def launch_values(record: Record, metric: str) -> list[float]:
    """The metric's median in each counted launch that measured it: the values the regression check tests.
    A launch excluded as disturbed (``Launch.excluded``: its canary moved, a noisy machine) stays in the
    record but is not tested — unless fewer than two launches are left, when every ok launch is tested
    (``disturbed_throughout`` says so): on a machine disturbed throughout, a test on disturbed launches
    beats no test, and the check's note says the figures may be the machine's."""
    ok = [
        (entry, float(value))
        for entry in recorded_launches(record)
        if entry.status == "ok" and (value := entry.medians.get(metric)) is not None
    ]
    counted = [value for entry, value in ok if entry.counted]
    return counted if len(counted) >= 2 else [value for _, value in ok]


def disturbed_throughout(record: Record) -> bool:
    """Fewer than two undisturbed ok launches but at least two ok ones: ``launch_values`` tests them all."""
    ok = [entry for entry in recorded_launches(record) if entry.status == "ok"]
    return len(ok) >= 2 and sum(entry.counted for entry in ok) < 2
