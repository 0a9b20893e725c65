"""What the points one process runs share: the caches that make a sweep convert each model, compute each
reference, collect the environment and open the energy meter once, the run's machine-speed calibration,
and (in a persistent worker) the last point's engine. Caches only: the run's settings are
``harness.run.settings.RunSettings``, a launch's switch and callbacks are arguments of ``steps.execute``."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from harness.errors import StepFailed
from harness.models import sources
from harness.records import environment
from harness.records.samples import CanaryCalibration
from harness.run.settings import RunSettings
from harness.scenario.schema import Scenario


@dataclass
class Caches:
    # A persistent worker keeps the last point's engine for the next point it can serve (steps.resolve).
    keep_engines: bool = False
    # The machine-speed canary's calibration (harness.measure.canary), made once per run by the runner
    # and passed to its workers; None: no canary runs around the timed rounds.
    canary: Optional[CanaryCalibration] = None
    kept_engine: Any = field(default=None, repr=False)
    refreshed: set = field(default_factory=set, repr=False)  # accuracy references --refresh-reference redid
    _models: dict[str, sources.ResolvedModel] = field(default_factory=dict, repr=False)
    # by the stored file's path, which digests the model's content: two models of one name, two entries
    _references: dict[Path, Any] = field(default_factory=dict, repr=False)
    # The preparation steps that failed in this process, by (file, step): the same step of the same file is not
    # run again for another point, which fails with the first failure (harness.errors.step(once=True)).
    failures: dict[tuple[str, str], StepFailed] = field(default_factory=dict, repr=False)
    # Seconds spent getting stored references (every kind: gate, same-weights, dequantized model, stop
    # prompts), all points together; a point's share is the difference across it (``steps.execute``).
    references_s: float = 0.0
    _environment: Optional[dict] = field(default=None, repr=False)
    _meter: Any = field(default=None, repr=False)

    def environment(self) -> dict:
        if self._environment is None:
            self._environment = environment.collect()
        if self.canary is not None:  # the run's calibration, with the machine it describes
            return {**self._environment, "canary": self.canary.model_dump()}
        return self._environment

    def calibrate_canary(
        self, again: bool = False, settings: Optional[RunSettings] = None, log: Optional[Callable[[str], None]] = None
    ) -> Optional[CanaryCalibration]:
        """The machine-speed canary's calibration at the start of a timed run: this machine's stored one
        when a reading now agrees with it, else taken afresh (``harness.measure.calibration_store``;
        ``settings.recalibrate`` forces that); taken ``again`` when a launch showed it was disturbed. The
        new calibration, None if none was made."""
        if self.canary is None or again:
            from harness.measure import calibration_store

            settings, say = settings or RunSettings(), log or (lambda message: None)
            if again:
                self.canary = calibration_store.fresh(settings.cache_dir, say)
            else:
                self.canary = calibration_store.start(settings.cache_dir, settings.recalibrate, say)
            return self.canary
        return None

    def has_model(self, scenario: Scenario) -> bool:
        return sources.spec_key(scenario.model) in self._models

    def model(self, scenario: Scenario, cache_dir: Optional[Path]) -> sources.ResolvedModel:
        key = sources.spec_key(scenario.model)
        if key not in self._models:
            self._models[key] = sources.resolve(scenario.model, cache_dir)
            return self._models[key]  # only the first point pays (and reports) conversion
        cached = self._models[key]
        return sources.ResolvedModel(**{**cached.__dict__, "convert_s": 0.0})

    def reference(self, path: Path, compute: Callable[[], Any]) -> Any:
        """The reference at ``path``, computed once. (A computation that fails is remembered by its step,
        ``failures``: the other points of the model fail with the first error, not computing it again.)"""
        if path not in self._references:
            start = time.perf_counter()
            try:
                self._references[path] = compute()
            finally:
                self.references_s += time.perf_counter() - start
        return self._references[path]

    def close(self) -> None:
        """Release what is kept between points (a persistent worker's kept engine)."""
        kept, self.kept_engine = self.kept_engine, None
        if kept is not None:
            kept.adapter.close()

    def energy_meter(self):
        from harness.measure.energy import EnergyMeter

        if self._meter is None:
            self._meter = EnergyMeter()
        return self._meter
