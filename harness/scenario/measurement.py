"""The scenario's ``measurement`` section: timing rounds, threads and how many launches each point gets."""

from __future__ import annotations

from typing import Annotated, Literal, Optional, Union

from pydantic import (
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    field_validator,
    model_validator,
)

from harness.scenario.fields import MAX_LAUNCHES, MAX_THREADS, Strict


class Measurement(Strict):
    warmup_rounds: NonNegativeInt = Field(1, description="untimed runs before measuring")
    warmup_new_tokens: Optional[PositiveInt] = Field(
        None,
        description="new tokens each warm-up round generates (at most generation.max_new_tokens); default: max_new_tokens on "
        "a freshly loaded engine, 2 on an engine kept loaded from the previous point (its prefill at this "
        "point's prompt and a decode step)",
    )
    min_rounds: PositiveInt = Field(3, description="measure at least this many rounds ...")
    min_time_s: NonNegativeFloat = Field(0.0, description="... and at least this long")
    max_rounds: PositiveInt = Field(1000, description="hard stop, whatever min_time_s says")
    threads: Optional[PositiveInt] = Field(
        None, le=MAX_THREADS, description=f"engine threads; default: the engine's own (at most {MAX_THREADS} here)"
    )
    launches: Union[Annotated[int, Field(ge=1, le=MAX_LAUNCHES)], Literal["auto"]] = Field(
        1,
        description="independent launches per point (fresh worker and load each), interleaved across the sweep; "
        "auto: chosen per point from its stored variance components for target_change within time_budget_s",
    )
    target_change: Optional[float] = Field(
        None,
        gt=0,
        lt=10,
        description="with launches: auto, the worsening of tpot the regression check should detect with 80 % "
        "power, as a fraction (0.1) or a percentage ('10%')",
    )
    time_budget_s: Optional[PositiveFloat] = Field(
        None, description="with launches: auto, the most seconds a point's launches may take together"
    )

    @field_validator("target_change", mode="before")
    @classmethod
    def _percent(cls, value):
        if isinstance(value, str) and value.strip().endswith("%"):
            try:
                return float(value.strip()[:-1]) / 100
            except ValueError:
                raise ValueError(f"expected a percentage such as '10%', got {value!r}") from None
        return value

    target_rel_ci: Optional[PositiveFloat] = Field(
        None,
        description="adaptive: stop adding launches to a point once the 95 % interval of its median "
        "tpot is within +-this fraction (0.02 = 2 %); needs max_launches",
    )
    max_launches: Optional[PositiveInt] = Field(
        None, le=MAX_LAUNCHES, description="with target_rel_ci: at most this many launches"
    )
    canary_tolerance: NonNegativeFloat = Field(
        0.15,
        description="a launch whose machine-speed canary moved more than this fraction from the run's "
        "calibration is disturbed (0: every launch counts as moved)",
    )
    disturbed_reruns: NonNegativeInt = Field(
        0,
        le=MAX_LAUNCHES,
        description="re-run disturbed launches (canary moved, noisy machine) of a point, at most this many extra "
        "launches; disturbed launches are kept but excluded from the regression check's significance test",
    )

    @model_validator(mode="after")
    def _rounds_consistent(self):
        if self.max_rounds < self.min_rounds:
            raise ValueError(f"max_rounds ({self.max_rounds}) must be >= min_rounds ({self.min_rounds})")
        if self.target_rel_ci is not None and self.max_launches is None:
            raise ValueError("target_rel_ci needs max_launches (the most launches a point may take)")
        auto = self.launches == "auto"
        if self.max_launches is not None and isinstance(self.launches, int) and self.max_launches < self.launches:
            raise ValueError(f"max_launches ({self.max_launches}) must be >= launches ({self.launches})")
        if auto and self.target_change is None:
            raise ValueError("launches: auto needs target_change (the tpot worsening to detect, e.g. 10%)")
        if auto and self.target_rel_ci is not None:
            raise ValueError("launches: auto and target_rel_ci each choose the launch count: use one")
        if not auto and (self.target_change is not None or self.time_budget_s is not None):
            raise ValueError("target_change and time_budget_s need launches: auto")
        return self
