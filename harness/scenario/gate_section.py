"""The scenario's ``gate`` section, where the correctness gate's defaults are written, and ``GateSettings``, what
the gate judges with, derived from it (the gate itself: harness.correctness.gate)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal, Optional, Union

from pydantic import Field, PositiveFloat, PositiveInt, model_validator

from harness.scenario.fields import Strict, Tokens

GateMode = Literal["free", "forced", "both"]


@dataclass(frozen=True)
class GateSettings:
    """The settings one comparison is judged with (``Gate.settings``): the scenario's ``gate`` section with
    ``fail_on_drift`` decided for the point. Built from the section only, so its defaults live there."""

    k: int
    mode: GateMode
    drift_factor: float
    fail_factor: float
    fail_on_drift: bool
    min_positions: int  # no KL tier (overall, per phase) is judged on fewer teacher-forced positions

    @property
    def failing(self) -> float:
        """The factor of its floor that fails a KL tier: the drift line where drift fails, else the fail line."""
        return self.drift_factor if self.fail_on_drift else self.fail_factor


class Gate(Strict):
    """Correctness gate against the HF reference (see harness.correctness.gate)."""

    k: PositiveInt = Field(5, description="top-k for the two-way inclusion checks")
    tokens: Tokens = Field(32, description="greedy tokens per prompt")
    prompts: Union[
        Literal["ci", "all"], PositiveInt, Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]
    ] = Field("ci", description="ci (1 plain + 1 chat), all (8 + 8), a count, or a non-empty list of texts")
    mode: GateMode = "both"
    drift_factor: PositiveFloat = Field(5.0, description="mean KL above this x noise floor: drift")
    fail_factor: PositiveFloat = Field(100.0, description="mean KL above this x noise floor: fail")
    fail_on_drift: Union[bool, Literal["auto"]] = Field(
        "auto", description="auto: drift fails unquantized points and is only reported for quantized ones"
    )
    reference_dtype: Literal["bf16", "fp16", "fp32"] = "bf16"
    length: Union[Literal["auto", "short"], Tokens] = Field(
        "auto",
        description="long teacher-forced prompts (harness.correctness.lengths): auto on points that set "
        "prompt_len or max_seq_len, at their context and past the sliding window; N positions on every "
        "point; short: none",
    )
    long_prompts: PositiveInt = Field(2, le=16, description="long prompts per point when it has a gate length")
    min_positions: PositiveInt = Field(
        8, description="fewest teacher-forced positions a KL tier (overall or per phase) is judged on"
    )
    prefill_positions: PositiveInt = Field(
        8,
        description="the prefill phase: the last N prompt positions of every prompt, each prefilled on its own "
        "(harness.correctness.prefill; fewer on long prompts, which the record notes)",
    )
    copy_prompts: int = Field(
        0,
        ge=0,
        le=6,
        description="copy-fidelity prompts added to the gate (gate_prompts.json copy: digits and identifiers "
        "copied from the prompt), teacher-forced on their own text's last `tokens` positions",
    )
    power: Optional[PositiveFloat] = Field(
        None,
        description="target detectable rise (x noise floor, above drift_factor): add prompts from the shipped "
        "set until min_positions is reached and the KL test detects this rise with 80 % power, or say it cannot",
    )

    @model_validator(mode="after")
    def _factors_ordered(self):
        if self.fail_factor < self.drift_factor:
            raise ValueError(f"fail_factor ({self.fail_factor:g}) must be >= drift_factor ({self.drift_factor:g})")
        return self

    def drift_fails(self, quantized: bool) -> bool:
        """``fail_on_drift`` for a point: ``auto`` fails drift on unquantized points, where it is a bug."""
        return not quantized if self.fail_on_drift == "auto" else self.fail_on_drift

    def settings(self, quantized: bool) -> GateSettings:
        """What the gate judges a point with: this section, ``fail_on_drift`` decided by ``drift_fails``."""
        return GateSettings(
            k=self.k,
            mode=self.mode,
            drift_factor=self.drift_factor,
            fail_factor=self.fail_factor,
            fail_on_drift=self.drift_fails(quantized),
            min_positions=self.min_positions,
        )
