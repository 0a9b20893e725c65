"""The result record's typed parts (flattened into columns by ``harness.columns``).

A record is one JSON file per sweep point (see ``harness.results`` for the store). Parts are pydantic
models so a file read back is checked: a wrong type is a ``ValueError`` naming the file and field.
Version 2 split version 1's ``details`` grab-bag into named parts; ``migrate`` upgrades old files.
"""

from __future__ import annotations

import numbers
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator

SCHEMA_VERSION = 2
STATUSES = ("ok", "skipped", "failed", "timeout")


def _number(value):
    """Ints stay ints and floats floats (numpy's included); text and booleans are refused."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError("expected a number")
    return int(value) if isinstance(value, numbers.Integral) else float(value)


Number = Annotated[Union[int, float], BeforeValidator(_number)]


class Part(BaseModel):
    model_config = ConfigDict(validate_assignment=True, extra="forbid")  # nothing unknown is silently dropped


class ModelInfo(Part):
    name: Optional[str] = None
    checksum: Optional[str] = None
    hf_dir: Optional[str] = None
    gguf: Optional[str] = None


class ReferenceInfo(Part):
    """The HF reference a gate compared against."""

    created_at: Optional[str] = None
    versions: dict[str, Any] = Field(default_factory=dict)
    noise_floor: Optional[dict[str, Any]] = None
    prompts: Optional[int] = None
    tokens: Optional[int] = None


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


class GatePhase(Part):
    """One phase's KL tier (``harness.kl_stats``): its mean KL over ``positions`` against its own floor;
    ``floor_source`` is "overall" where the reference has no floor for the phase."""

    kl_mean: Optional[float] = None
    noise_floor: float
    kl_ratio: Optional[float] = None
    positions: int = 0
    verdict: Optional[Literal["pass", "drift", "fail"]] = None  # the KL tier alone, before fail_on_drift
    floor_source: Literal["phase", "overall"] = "phase"


class GatePhases(Part):
    prefill: GatePhase  # the first generated position, from the prompt's forward
    decode: GatePhase  # every later position, one cached decode step each
    note: Optional[str] = None  # why a phase fell back to the overall floor


class SameWeights(Part):
    """A quantized point against its own weights on a trusted engine path (``harness.same_weights``):
    there the noise floor is that of identical weights, so drift is a bug, not quantization.
    ``model_verdict`` is the gate's verdict against the HF reference alone (the quantization cost);
    ``Correctness.verdict`` is the point's, both considered. ``skipped`` says why there is none."""

    verdict: Optional[str] = None  # pass | drift | fail against its own weights; None when skipped
    model_verdict: Optional[str] = None
    reasons: list[str] = Field(default_factory=list)
    mode: Optional[str] = None
    kl_mean: Optional[float] = None
    noise_floor: Optional[float] = None
    kl_ratio: Optional[float] = None
    top1_match_rate: Optional[float] = None
    free_divergence_index: Optional[int] = None
    engine: Optional[str] = None  # the trusted path
    weights: Optional[str] = None  # the file both sides run
    floor_method: Optional[str] = None
    created_at: Optional[str] = None  # when the same-weights reference was computed
    report: Optional[str] = None
    skipped: Optional[str] = None


class Correctness(Part):
    """The correctness gate's result. In top-1 mode (engines that expose only their chosen token)
    there is no KL tier: ``kl_mean`` and ``kl_ratio`` are None. ``skipped`` says why no gate ran."""

    verdict: Optional[str] = None  # pass | drift | fail; None when skipped
    reasons: list[str] = Field(default_factory=list)
    k: Optional[int] = None
    mode: Optional[str] = None  # free | forced | both | forced-top1
    kl_mean: Optional[float] = None
    noise_floor: Optional[float] = None
    kl_ratio: Optional[float] = None
    top1_match_rate: Optional[float] = None
    free_divergence_index: Optional[int] = None
    prompts: list[dict[str, Any]] = Field(default_factory=list)  # gate.PromptResult per prompt
    reference: Optional[ReferenceInfo] = None
    report: Optional[str] = None
    diagnosis: Optional[dict[str, Any]] = None
    skipped: Optional[str] = None
    same_weights: Optional[SameWeights] = None  # None: not compared with its own weights (records before it)
    phases: Optional[GatePhases] = None  # None in top-1 mode and in records made before phases
    distribution: Optional[KLDistribution] = None

    @field_validator("reference", mode="before")
    @classmethod
    def _empty_is_none(cls, value):
        return value or None


class TaskOutcomes(Part):
    """One task's per-document outcomes (lm-eval's logged samples), in ``doc_ids`` order: 0/1 for
    accuracy-type metrics, the log-likelihood for perplexity-type ones. ``weights`` holds the per-document
    denominator (words, bytes) of weighted aggregations. Metrics whose per-item values are not numbers
    (f1, bleu) appear in ``aggregation`` only."""

    doc_ids: list[int]
    values: dict[str, list[Number]] = Field(default_factory=dict)
    weights: dict[str, list[Number]] = Field(default_factory=dict)
    aggregation: dict[str, str] = Field(default_factory=dict)  # lm-eval's: mean | perplexity | bits_per_byte ...
    higher_is_better: dict[str, bool] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_per_document(self):
        for kind, columns in (("values", self.values), ("weights", self.weights)):
            for metric, column in columns.items():
                if len(column) != len(self.doc_ids):
                    raise ValueError(f"{kind}.{metric}: {len(column)} items for {len(self.doc_ids)} doc_ids")
        return self


class PairedDelta(Part):
    """Point minus reference on the documents both scored, from their paired per-item outcomes.
    ``test``: McNemar's (exact when few pairs disagree) for 0/1 outcomes; otherwise a paired sign-flip
    permutation test gives ``p_value``. ``low``/``high``: the 95 % paired-bootstrap interval of the delta.
    With a non-inferiority ``margin`` (the fraction of the reference's score to keep), ``non_inferior``
    says whether the interval's worse end stays within (1 - margin) x |reference|."""

    delta: Number
    low: Number
    high: Number
    p_value: Number
    test: Literal["mcnemar", "paired bootstrap"]
    items: int
    reference: Number  # the reference's score on the paired documents
    margin: Optional[Number] = None
    non_inferior: Optional[bool] = None


class Accuracy(Part):
    """lm-eval task scores: ``{task: {metric: value, metric_stderr: value, items: n}}``, the HF
    reference's on the same items, and point minus reference. ``outcomes`` / ``reference_outcomes``:
    both sides' per-document outcomes; ``paired``: the delta's test and interval per task and metric;
    ``unpaired``: why a metric has none; ``verdict``: non-inferiority over the metrics given a margin
    (None when no margin is set or one could not be judged)."""

    tasks: Optional[dict[str, dict[str, Number]]] = None
    reference: Optional[dict[str, dict[str, Number]]] = None
    delta: Optional[dict[str, dict[str, Number]]] = None
    limit: Optional[Number] = None
    num_fewshot: Optional[int] = None
    skipped: Optional[str] = None
    outcomes: Optional[dict[str, TaskOutcomes]] = None
    reference_outcomes: Optional[dict[str, TaskOutcomes]] = None
    paired: Optional[dict[str, dict[str, PairedDelta]]] = None
    unpaired: Optional[dict[str, dict[str, str]]] = None
    verdict: Optional[Literal["pass", "fail"]] = None


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
    slope_per_round: float  # relative change per round (0.01 = +1 % a round), from a Theil-Sen fit
    p_value: Optional[float] = None
    flagged: bool = False
    why: Optional[str] = None


class Launch(Part):
    """One independent launch of a point: a fresh worker loaded the engine afresh and ran the warm-up and
    the timed rounds. ``medians`` are the launch's medians of the headline metrics (``metrics.LAUNCH``)."""

    index: int
    status: str = "ok"
    reason: Optional[str] = None
    medians: dict[str, Optional[Number]] = Field(default_factory=dict)
    rounds: int = 0
    drift: list[Drift] = Field(default_factory=list)
    machine: dict[str, Any] = Field(default_factory=dict)  # harness.machine_state during the timed window
    started_at: Optional[str] = None
    wall_s: Optional[Number] = None


class Interval(Part):
    """A metric over launches: the median of launch medians with its 95 % confidence interval."""

    estimate: Optional[Number] = None
    low: Optional[Number] = None
    high: Optional[Number] = None
    cv: Optional[Number] = None  # launch-to-launch coefficient of variation
    launches: int = 0
    samples: int = 0  # per-round (or per-token) values behind the estimate
    method: str = "single launch"  # bootstrap | t | single launch


class Samples(Part):
    rounds: list[RoundSample] = Field(default_factory=list)
    warmup_s: list[float] = Field(default_factory=list)
    rounds_ms: Optional[dict[str, list[float]]] = None  # records carried in pytest-benchmark JSON keep only these
    launches: list[Launch] = Field(default_factory=list)
    intervals: dict[str, Interval] = Field(default_factory=dict)  # metric name -> over launches


class TimeSplit(Part):
    """Where a point's wall time went, in seconds, summed over its launches (``harness.accounting``)."""

    process_start_s: Number = 0.0
    imports_s: Number = 0.0
    conversion_s: Number = 0.0
    load_s: Number = 0.0
    warmup_s: Number = 0.0
    timed_s: Number = 0.0
    gate_s: Number = 0.0
    accuracy_s: Number = 0.0
    other_s: Number = 0.0


class Failure(Part):
    """Why a point failed: the Python traceback, or (isolated child died) its exit and output."""

    traceback: Optional[str] = None
    output_tail: Optional[str] = None
    exit_code: Optional[int] = None
    signal: Optional[str] = None  # e.g. SIGSEGV, when a signal killed the engine process


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
    status: str  # ok | skipped | failed | timeout
    reason: Optional[str] = None  # why skipped, or the error when failed
    settings: dict[str, Any] = Field(default_factory=dict)  # model, generation, measurement as resolved
    model: ModelInfo = Field(default_factory=ModelInfo)
    metrics: dict[str, Optional[Number]] = Field(default_factory=dict)  # names in harness.metrics
    units: dict[str, str] = Field(default_factory=dict)
    samples: Samples = Field(default_factory=Samples)  # raw timings, so statistics can be recomputed
    time_split: Optional[TimeSplit] = None
    correctness: Optional[Correctness] = None  # None: the scenario has no gate
    accuracy: Optional[Accuracy] = None  # None: the scenario asks for no task accuracy
    adapter: dict[str, Any] = Field(default_factory=dict)  # adapter.describe()
    outputs: dict[str, str] = Field(default_factory=dict)  # generated text by prompt index
    prompt_lengths: list[int] = Field(default_factory=list)
    unavailable: dict[str, str] = Field(default_factory=dict)  # metric name -> why it is missing or partial
    failure: Optional[Failure] = None
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

    def to_dict(self) -> dict:
        return self.model_dump(mode="python")

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
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ValueError(describe_errors(exc, source)) from None


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


V1_FIELDS = {"scenario", "point_id", "point", "status", "reason", "settings", "model", "metrics", "units", "samples",
             "correctness", "accuracy", "adapter", "environment", "scenario_path", "started_at", "finished_at",
             "schema_version"}
V1_UNAVAILABLE = {"cpu_cycles_unavailable": "cpu_cycles", "device_memory_unavailable": "device_memory_peak_mb"}


def migrate(data: dict) -> dict:
    """Upgrade an older record's JSON to the current schema."""
    version = data.get("schema_version")
    if not isinstance(version, int) or not 1 <= version <= SCHEMA_VERSION:
        raise ValueError(f"unsupported record schema_version {version!r} (this harness reads 1 to {SCHEMA_VERSION})")
    if version == 1:
        data = _from_v1(data)
    return data


def _from_v1(data: dict) -> dict:
    """Version 1 kept generated text, tracebacks, routing and notes in one ``details`` dict."""
    details = dict(data.pop("details", None) or {})
    unavailable = {}
    for source, why in (details.pop("energy_unavailable", None) or {}).items():
        unavailable["energy_j" if source == "npu" else f"energy_{source}_j"] = why
    for key, metric in V1_UNAVAILABLE.items():
        if details.get(key):
            unavailable[metric] = details.pop(key)
    note = details.pop("roofline_note", None)
    if note:
        names = ("decode_bound_ms", "roofline_fraction") if "weight size" in note else ("prefill_compute_bound_ms",)
        unavailable.update(dict.fromkeys(names, note))
    failure = {k: details.pop(k) for k in ("traceback", "output_tail", "exit_code") if k in details}
    if isinstance(failure.get("exit_code"), int) and failure["exit_code"] < 0:
        failure["signal"] = _signal_name(-failure["exit_code"])
    samples = data.get("samples") or {}
    data = {k: v for k, v in data.items() if k in V1_FIELDS}  # version 1 passed unknown keys over
    return {**data, "schema_version": SCHEMA_VERSION, "samples": samples,
            "outputs": details.pop("outputs", {}), "prompt_lengths": details.pop("prompt_lengths", []),
            "routing": details.pop("routing", None), "log": details.pop("log", []),
            "failure": failure or None, "unavailable": unavailable}


def _signal_name(number: int) -> Optional[str]:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return None
