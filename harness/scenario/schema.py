"""Scenario files: schema, safe YAML loading, and errors that name file, line and field.

A scenario names a model, prompts, generation and measurement settings, and the axes to sweep.
``harness.scenario.sweep`` expands it into points; ``harness.run.planning`` loads a file and runs the checks that
need the adapter registry, the model sources or the points (this module needs none of them). The ``gate``
and ``measurement`` sections have their own modules (``gate.py``, ``measurement.py``), the shared base and
bounds theirs (``fields.py``).
"""

from __future__ import annotations

import os
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import (
    BeforeValidator,
    Field,
    NonNegativeInt,
    PositiveInt,
    PrivateAttr,
    field_validator,
    model_validator,
)

from harness.io import STORE_NAMES
from harness.scenario.axes import Axis, AxisFacts, Capability, axes_of
from harness.scenario.fields import (
    MAX_OPTIONS_BYTES,
    SAFE_NAME,
    Strict,
    Tokens,
)
from harness.scenario.gate_section import Gate
from harness.scenario.measurement import Measurement
from harness.scenario.speculative import canonical as speculative_value
from harness.scenario.speculative import id_part as speculative_id

QUANTIZATIONS = ("none", "int8_sym", "int8_asym", "int4_sym", "int4_asym")

# Written for this project: neutral starters that any base model can continue.
DEFAULT_PROMPTS = (
    "The capital of France is",
    "A good way to keep bread fresh for longer is to",
)


class Artefacts(Strict):
    """The engines' own artefacts a user already has, run as they are instead of converting ``model.source``
    (which stays the checkpoint the gate's reference runs): checked by ``harness.models.artefacts``."""

    llamacpp: Optional[str] = Field(None, description="a .gguf file for the llamacpp adapter")
    openvino: Optional[str] = Field(
        None, description="an OpenVINO IR folder (openvino_model.xml/.bin, as optimum-intel exports) for openvino"
    )


class ModelSpec(Strict):
    source: str = Field(description="built-in name (gemma3-270m, tiny-llama, ...), HF directory or .gguf path")
    dtype: Literal["bf16", "fp16", "fp32"] = "bf16"
    seed: NonNegativeInt = Field(0, description="seed for built-in tiny models")
    trust_remote_code: bool = False
    artefacts: Artefacts = Field(
        default_factory=Artefacts, description="per adapter, the artefact it runs as is (model.source: the reference)"
    )


class Generation(Strict):
    max_new_tokens: Tokens = 32


class QuantizationOptions(Strict):
    """How engines that quantize for the sweep's quantization axis do it (recorded with results)."""

    int4_group_size: PositiveInt = Field(128, description="weights per int4 scale (NNCF group_size)")
    ratio: float = Field(1.0, gt=0, le=1, description="share of layers at the axis's precision (rest int8)")


class Accuracy(Strict):
    """Task accuracy through lm-evaluation-harness (see harness.accuracy.evaluate)."""

    tasks: list[str] = Field(
        min_length=1,
        description="lm-eval tasks: the shipped harness_cloze and "
        "harness_choice, or any task whose dataset is cached on this machine",
    )
    limit: Optional[PositiveInt] = Field(None, description="items per task (all when unset)")
    num_fewshot: NonNegativeInt = 0
    reference: bool = Field(
        True,
        description="also score the HF reference (gate.reference_dtype, else bf16) "
        "on the same tasks and record each point's delta",
    )
    non_inferiority: dict[str, Union[float, dict[str, float]]] = Field(
        default_factory=dict,
        description="per task, the fraction of the reference's score a point must keep "
        "(0.99 = 99 %, MLPerf style), for all its metrics or per metric ({task: {metric: fraction}}): the "
        "delta's 95 % interval may fall short of the reference by at most (1 - fraction) x reference",
    )

    @field_validator("non_inferiority", mode="before")
    @classmethod
    def _fractions(cls, value):
        if not isinstance(value, dict):
            raise ValueError(f"expected a mapping of task to fraction, e.g. {{harness_choice: 0.99}}, got {value!r}")
        for task, margin in value.items():
            for where, fraction in margin.items() if isinstance(margin, dict) else [(None, margin)]:
                name = f"{task}.{where}" if where is not None else task
                if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
                    raise ValueError(
                        f"{name}: expected the fraction of the reference's score to keep, "
                        f"0 < fraction <= 1 (0.99 = keep 99 %), got {fraction!r}"
                    )
        return value

    @model_validator(mode="after")
    def _margins_name_tasks(self):
        unknown = [task for task in self.non_inferiority if task not in self.tasks]
        if unknown:
            raise ValueError(
                f"non_inferiority names {', '.join(map(repr, unknown))}, not in accuracy.tasks "
                f"({', '.join(self.tasks)})"
            )
        if self.non_inferiority and not self.reference:
            raise ValueError("non_inferiority needs reference: true (margins are relative to the HF reference)")
        return self


def _unset() -> list:
    """An axis's default value list: one unset value (the engine's own default)."""
    return [None]


class Sweep(Strict):
    """The axes to sweep, one field each; the points are their product (``harness.scenario.sweep``).

    Each field declares its axis once: ``AxisFacts`` says how a point id names it and what an adapter
    needs to run a value other than the default (``harness.scenario.axes``); every list of axes derives
    from ``SWEEP_AXES``. A new axis also needs its field on ``harness.scenario.sweep.Point`` (checked at import).
    """

    adapter: Annotated[list[str], AxisFacts(id_prefix=None)] = Field(min_length=1)
    device: Annotated[list[str], AxisFacts(id_prefix=None)] = Field(default_factory=lambda: ["cpu"], min_length=1)
    max_seq_len: Annotated[
        list[Optional[Tokens]], AxisFacts("seq", Capability("supports_max_seq_len", "cannot fix the KV cache size"))
    ] = Field(default_factory=_unset, min_length=1)
    # precision leads the id: the quantization, or the model's dtype when it is "none"
    quantization: Annotated[list[Literal[QUANTIZATIONS]], AxisFacts(id_prefix=None)] = Field(  # type: ignore[valid-type]
        default_factory=lambda: ["none"], min_length=1
    )
    prompt_len: Annotated[list[Optional[Tokens]], AxisFacts("prompt")] = Field(default_factory=_unset, min_length=1)
    beam_width: Annotated[list[PositiveInt], AxisFacts("beam", Capability("supports_beams", "has no beam search"))] = (
        Field(default_factory=lambda: [1], min_length=1)
    )
    batch_size: Annotated[
        list[PositiveInt], AxisFacts("bs", Capability("supports_batch", "runs batch size 1 only"))
    ] = Field(default_factory=lambda: [1], min_length=1)
    moe_chunk_size: Annotated[
        list[Optional[PositiveInt]],
        AxisFacts("chunk", Capability("supports_chunked_prefill", "has no chunked prefill")),
    ] = Field(default_factory=_unset, min_length=1)
    # tokens each expert takes per forward pass (a prefill chunk or a decode step); None = unlimited
    moe_capacity: Annotated[
        list[Optional[PositiveInt]],
        AxisFacts("cap", Capability("supports_moe_capacity", "cannot limit expert capacity")),
    ] = Field(default_factory=_unset, min_length=1)
    # none, prompt_lookup or {draft: SOURCE, tokens: N, quantization: ...}; a point holds the canonical text
    # (harness.scenario.speculative), so the value enters its settings, id and keys
    speculative: Annotated[
        list[Annotated[str, BeforeValidator(speculative_value)]],
        AxisFacts(
            "spec-",
            Capability("supports_speculative", "has no speculative decoding"),
            canonical=speculative_value,
            id_value=speculative_id,
        ),
    ] = Field(default_factory=lambda: ["none"], min_length=1)


# The sweep's axes, in field order (harness.scenario.sweep.Point has exactly these fields), and their names.
SWEEP_AXES: tuple[Axis, ...] = axes_of(Sweep)
AXES: tuple[str, ...] = tuple(axis.name for axis in SWEEP_AXES)


class KnownFailure(Strict):
    """A failure the scenario expects: its points fail without failing the run (pytest: xfail), and one that
    passes is reported as fixed (pytest: XPASS); ``strict`` makes a pass fail the run (XPASS(strict))."""

    match: dict[str, Any] = Field(
        description="axis values a point must have, e.g. {device: NPU, quantization: int4_sym}"
    )
    reason: str
    strict: bool = Field(False, description="a point that passes fails the run, so the entry is removed once fixed")

    def matches(self, axes: dict[str, Any]) -> bool:
        return all(axes.get(axis) == value for axis, value in self.match.items())


class Scenario(Strict):
    name: str = Field(pattern=SAFE_NAME)

    @field_validator("name")
    @classmethod
    def _not_a_store(cls, name: str) -> str:
        if name in STORE_NAMES:
            raise ValueError(
                f"{name!r} is the name of the harness's own store inside a results directory; name the scenario "
                "something else (name: ...)"
            )
        return name

    description: str = ""
    model: ModelSpec
    prompts: list[str] = Field(default_factory=lambda: list(DEFAULT_PROMPTS), min_length=1)
    synthetic_prompts: PositiveInt = Field(1, description="distinct corpus prompts per point when prompt_len is swept")
    generation: Generation = Field(default_factory=Generation)
    measurement: Measurement = Field(default_factory=Measurement)
    quantization_options: QuantizationOptions = Field(default_factory=QuantizationOptions)
    adapter_options: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="per adapter name, options only that adapter reads: checked against its Options model "
        "(harness.run.planning) before any point runs",
    )
    gate: Optional[Gate] = None
    accuracy: Optional[Accuracy] = None
    sweep: Sweep
    exclude: list[dict[str, Any]] = Field(default_factory=list)
    include: list[dict[str, Any]] = Field(default_factory=list)
    markers: list[str] = Field(default_factory=list)
    known_failures: list[KnownFailure] = Field(default_factory=list)
    require_all: bool = Field(
        False,
        description="every point the run selects must run: a skipped point fails the run (as --require-all)",
    )
    path: Optional[str] = Field(None, description="file the scenario came from (set by the loader)")
    # (adapter, device) -> the precision it runs the model at when quantization is none, where that is not
    # model.dtype (a GGUF's own file type, a plugin's inference precision): set by the loader
    # (harness.run.planning), read by point ids.
    _native_precision: dict[tuple[str, str], str] = PrivateAttr(default_factory=dict)

    @property
    def native_precision(self) -> dict[tuple[str, str], str]:
        return self._native_precision

    def known_failure(self, axes: dict[str, Any]) -> Optional[KnownFailure]:
        """The first ``known_failures`` entry a point with these axes matches, or None."""
        return next((known for known in self.known_failures if known.matches(axes)), None)

    @property
    def source_file(self) -> Optional[str]:
        """The scenario file as an absolute path, for records (``harness gate --confirm`` reruns from it in any
        directory); None for a scenario read from a string."""
        if not self.path or self.path.startswith("<"):
            return None
        return os.path.abspath(self.path)

    @field_validator("model", mode="before")
    @classmethod
    def _model_shorthand(cls, value):
        return {"source": value} if isinstance(value, str) else value

    @field_validator("adapter_options", mode="after")
    @classmethod
    def _bounded_options(cls, value):
        import json

        size = len(json.dumps(value, default=str))
        if size > MAX_OPTIONS_BYTES:
            raise ValueError(
                f"{size:,} bytes as JSON; at most {MAX_OPTIONS_BYTES // 1024} KiB (every record copies these options)"
            )
        return value

    @model_validator(mode="after")
    def _options_for_swept_adapters(self):
        swept = set(self.sweep.adapter) | {entry.get("adapter") for entry in self.include}
        for name in self.adapter_options:
            if name not in swept:
                raise ValueError(
                    f"adapter_options names {name!r}, which no point of this sweep uses "
                    f"(adapters: {', '.join(sorted(a for a in swept if a))})"
                )
        return self

    @model_validator(mode="after")
    def _warmup_within_generation(self):
        asked, longest = self.measurement.warmup_new_tokens, self.generation.max_new_tokens
        if asked is not None and asked > longest:
            raise ValueError(
                f"measurement.warmup_new_tokens is {asked}, more than generation.max_new_tokens ({longest}): "
                "a warm-up round generates at most what a timed round does"
            )
        return self

    @property
    def explicit_axes(self) -> frozenset[str]:
        """Axes the file names explicitly: these appear in point ids."""
        return frozenset(self.sweep.model_fields_set)
