"""What points of one sweep share: the run's settings and the caches that make a sweep convert each
model, compute each reference and open each energy meter once."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Optional, Union

from harness.models import sources
from harness.records import environment
from harness.records.samples import CanaryCalibration
from harness.scenario.schema import Scenario

SETTINGS_PARTS = {
    "model",
    "generation",
    "measurement",
    "prompts",
    "synthetic_prompts",
    "quantization_options",
    "adapter_options",
    "gate",
    "accuracy",
}


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


@dataclass
class Session:
    """``timing=False`` runs only the correctness gate (``harness verify``); ``gate_prompts`` overrides
    the scenarios' gate prompt selection."""

    cache_dir: Optional[Path] = None
    reference_dir: Optional[Path] = None  # None: results/references
    timing: bool = True
    gate_prompts: Union[str, int, None] = None
    refresh_reference: bool = False
    allow_remote_code: bool = False  # the command line's confirmation of model.trust_remote_code
    energy: bool = True  # energy (Zeus), CPU time and the roofline around the timed rounds
    log: Callable[[str], None] = field(default=lambda message: None, repr=False)
    # The current point's phase ("converting the model", "timing round 2/4", "gate prompt 1/2"), e.g.
    # a progress bar's postfix; an isolated worker relays it through a file (harness.run.isolation).
    progress: Callable[[str], None] = field(default=lambda phase: None, repr=False)
    _models: dict[str, sources.ResolvedModel] = field(default_factory=dict, repr=False)
    _references: dict[Path, Any] = field(default_factory=dict, repr=False)
    refreshed: set = field(default_factory=set, repr=False)  # accuracy references --refresh-reference redid
    _environment: Optional[dict] = field(default=None, repr=False)
    _meter: Any = field(default=None, repr=False)
    # A persistent worker keeps the last point's engine for the next point it can serve (steps.resolve).
    reuse_engines: bool = False
    kept_engine: Any = field(default=None, repr=False)
    # False: the correctness gate and accuracy are left out (a point's second and later launches).
    verify: bool = True
    # The machine-speed canary's calibration (harness.measure.canary), made once per run by the runner
    # and passed to its workers; None: no canary runs around the timed rounds.
    canary: Optional[CanaryCalibration] = None

    def options(self) -> dict:
        """The settings a worker process needs to rebuild this session (JSON-safe)."""
        return {
            "cache_dir": str(self.cache_dir) if self.cache_dir else None,
            "reference_dir": str(self.reference_dir) if self.reference_dir else None,
            "timing": self.timing,
            "gate_prompts": self.gate_prompts,
            "refresh_reference": self.refresh_reference,
            "allow_remote_code": self.allow_remote_code,
            "energy": self.energy,
            "reuse_engines": self.reuse_engines,
            "verify": self.verify,
            "canary": self.canary.model_dump() if self.canary else None,
        }

    @classmethod
    def from_options(cls, options: dict, log: Callable[[str], None]) -> Session:
        return cls(
            **{
                **options,
                "cache_dir": Path(options["cache_dir"]) if options["cache_dir"] else None,
                "reference_dir": Path(options["reference_dir"]) if options["reference_dir"] else None,
                "canary": CanaryCalibration.model_validate(options["canary"]) if options.get("canary") else None,
            },
            log=log,
        )

    @property
    def reference_store(self) -> Path:
        from harness.io import REFERENCE_DIR

        return self.reference_dir or Path("results") / REFERENCE_DIR

    def environment(self) -> dict:
        if self._environment is None:
            self._environment = environment.collect()
        if self.canary is not None:  # the run's calibration, with the machine it describes
            return {**self._environment, "canary": self.canary.model_dump()}
        return self._environment

    def calibrate_canary(self) -> None:
        """Time the machine-speed canary once, at the start of a run (``harness.measure.canary``)."""
        if self.canary is None and self.timing:
            from harness.measure import canary

            self.canary = canary.calibrate()

    @staticmethod
    def settings_of(scenario: Scenario) -> dict:
        return scenario.model_dump(include=SETTINGS_PARTS)

    @classmethod
    def same_settings(cls, stored: dict, scenario: Scenario) -> bool:
        """A record's ``settings`` are the scenario's: a setting the record lacks (added to the schema after
        it was written, e.g. ``measurement.canary_tolerance``) counts as its default, so an older record
        still resumes when the scenario leaves the new setting at its default."""
        import json

        def as_stored(settings: dict):  # as a record holds them: read back from JSON
            return json.loads(json.dumps(settings))

        return as_stored(_with_defaults(stored, scenario, SETTINGS_PARTS)) == as_stored(cls.settings_of(scenario))

    def has_model(self, scenario: Scenario) -> bool:
        return sources.spec_key(scenario.model) in self._models

    def model(self, scenario: Scenario) -> sources.ResolvedModel:
        key = sources.spec_key(scenario.model)
        if key not in self._models:
            self._models[key] = sources.resolve(scenario.model, self.cache_dir)
            return self._models[key]  # only the first point pays (and reports) conversion
        cached = self._models[key]
        return sources.ResolvedModel(**{**cached.__dict__, "convert_s": 0.0})

    def reference(self, path: Path, compute: Callable[[], Any]) -> Any:
        if path not in self._references:
            self._references[path] = compute()
        return self._references[path]

    def close(self) -> None:
        """Release what the session keeps between points (a persistent worker's kept engine)."""
        kept, self.kept_engine = self.kept_engine, None
        if kept is not None:
            kept.adapter.close()

    def energy_meter(self):
        from harness.measure.energy import EnergyMeter

        if self._meter is None:
            self._meter = EnergyMeter()
        return self._meter


def _with_defaults(stored: dict, model: Any, names) -> dict:
    """``stored`` (a dump of ``model``'s fields ``names``) with each field it lacks at the field's default,
    nested models alike; a field without a default stays missing (so the settings differ)."""
    from pydantic import BaseModel
    from pydantic_core import PydanticUndefined

    out = dict(stored)
    fields = type(model).model_fields
    for name in names:
        value = getattr(model, name)
        if name not in stored:
            default = fields[name].get_default(call_default_factory=True)
            if default is not PydanticUndefined:
                out[name] = default.model_dump() if isinstance(default, BaseModel) else default
        elif isinstance(value, BaseModel) and isinstance(stored[name], dict):
            out[name] = _with_defaults(stored[name], value, type(value).model_fields)
    return out
