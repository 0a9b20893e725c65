"""One point's launches: how many it is planned to get, each through the launcher of the run's isolation
mode (``harness.run.launchers``), merged and written; the canary's calibration the launches are timed against;
whether a stored record already holds the point (``--resume``); a scenario's gate reference made ahead. Sweeps
over many points are ``harness.run.runner``."""

from __future__ import annotations

from typing import Callable, Optional

from harness.measure import canary
from harness.measure.launch_stats import combine
from harness.records import store
from harness.records.record import INCOMPLETE, Record
from harness.run.budget import Clock, skipped_for_budget
from harness.run.launchers import launcher_for
from harness.run.settings import RunSettings
from harness.run.steps.caches import Caches
from harness.run.steps.launch_context import LaunchContext, quiet
from harness.run.steps.new_record import new_record, now_iso, same_scenario_settings
from harness.run.steps.skip import skip_reason
from harness.run.stopping import wants_launch
from harness.scenario.schema import SWEEP_AXES, Scenario
from harness.scenario.sweep import Point, expand


class PointRunner:
    """Runs a point's launches with the run's ``settings`` (taken whole) and writes its record. ``caches`` hold what
    points run in this process share (resolved models, references, the energy meter, the canary's
    calibration), so a sweep converts each model once; the launcher of ``settings.isolation``
    (``harness.run.launchers``) runs each launch. ``log`` hears progress lines."""

    def __init__(self, settings: Optional[RunSettings] = None, log: Callable[[str], None] = quiet):
        self.settings, self.log = settings or RunSettings(), log
        self.caches = Caches()
        self.launcher = launcher_for(settings, self.caches, log)
        self.plans: dict[tuple[str, str], int] = {}  # (scenario, point id) -> launches planned by launches: auto
        self.recalibrations = 0  # canary calibrations taken again this run (a launch beat the first)
        self.clock = Clock(self.settings.budget)  # --budget: no new point once it is spent

    def close(self) -> None:
        """End the isolated worker kept for the next point (sweeps end theirs themselves)."""
        self.launcher.close()

    def planned_launches(self, scenario: Scenario, point: Optional[Point] = None) -> int:
        """How many launches the point is planned to get: ``--launches``, the scenario's, or with ``launches:
        auto`` the count planned from its stored record (``harness.run.auto_launches``; planned once, before
        the point runs). ``harness.records.record.recorded_launches`` lists those a record holds."""
        if self.settings.launches:
            return self.settings.launches
        if scenario.measurement.launches != "auto":
            return scenario.measurement.launches
        from harness.run import auto_launches

        if point is None:
            return auto_launches.FALLBACK
        key = (scenario.name, point.id)
        if key not in self.plans:
            stored = auto_launches.previous(self.settings.results_dir, scenario, point)
            found = auto_launches.plan(scenario, point, stored)
            self.plans[key] = found.launches
            self.log(f"{scenario.name}::{point.id}: {found.why}")
        return self.plans[key]

    def _calibrate_canary(self, launch: Optional[Record] = None) -> None:
        """The machine's speed, once per run, before any point (a gate-only run times nothing; a stored
        calibration is reused, ``harness.measure.calibration_store``); again
        (at most ``MAX_RECALIBRATIONS`` times a run) when ``launch``'s canary beat it at both edges."""
        if self.settings.correctness_only:
            return
        old = self.caches.canary
        why = canary.disturbed_by(launch, old)
        if launch is not None and (why is None or self.recalibrations >= canary.MAX_RECALIBRATIONS):
            return
        made = self.caches.calibrate_canary(again=why is not None, settings=self.settings, log=self.log)
        if made is not None and why:
            self.recalibrations += 1  # a kept worker gets the new calibration with its next job
        if made is not None and (why or (made.attempts > 1 and not made.reused)):
            self.log(canary.message(why, old, made))

    def run_point(
        self,
        scenario: Scenario,
        point: Point,
        on_round: Optional[Callable[[int], None]] = None,
        on_phase: Callable[[str], None] = quiet,
    ) -> Record:
        """Every launch of one point, one after another (each in a fresh worker), merged and written; skipped
        unstarted when the run's budget is spent."""
        if self.clock.spent():
            return self._merged([self._skipped(scenario, point, self.clock.skip_reason())])
        self.clock.began((scenario.name, point.id))
        self._calibrate_canary()
        launches: list[Record] = []
        while self._wants_launch(scenario, launches, point):
            if launches:
                self.launcher.close()  # a launch is independent: fresh worker, fresh load
            on_phase(f"{point.id}: launch {len(launches) + 1}/{self.planned_launches(scenario, point)}")
            launches.append(self._launch(scenario, point, not launches, on_phase, on_round))
        return self._merged(launches)

    def _launch(
        self,
        scenario: Scenario,
        point: Point,
        first_launch: bool,
        on_phase: Callable[[str], None] = quiet,
        on_round: Optional[Callable[[int], None]] = None,
    ) -> Record:
        """One launch of the point; the correctness gate and accuracy run in the first launch only."""
        reason = skip_reason(scenario, point, self.settings.correctness_only)
        if reason:  # decided without starting a process
            return self._skipped(scenario, point, str(reason))
        record = self.launcher.launch(scenario, point, first_launch=first_launch, on_phase=on_phase, on_round=on_round)
        self._calibrate_canary(record)  # a canary that beat it at both edges: the calibration was disturbed
        return record

    def _skipped(self, scenario: Scenario, point: Point, reason: str) -> Record:
        record = new_record(self.caches, scenario, point)
        record.status, record.reason, record.finished_at = "skipped", reason, now_iso()
        return record

    def _wants_launch(self, scenario: Scenario, launches: list[Record], point: Optional[Point] = None) -> bool:
        """Another launch of the point (``harness.run.stopping``)."""
        return wants_launch(
            scenario.measurement,
            launches,
            self.settings.correctness_only,
            lambda: self.planned_launches(scenario, point),
        )

    def _merged(self, launches: list[Record], incomplete: bool = False) -> Record:
        """The point's launches as one record, written; ``incomplete``: more launches are to come, so an ok
        record is stored as ``incomplete`` (an interrupted sweep leaves nothing that reads as finished)."""
        record = combine(launches)
        if incomplete and record.status == "ok":
            record = record.model_copy(
                update={
                    "status": INCOMPLETE,
                    "reason": f"{len(launches)} launch(es) recorded, more planned; the run ended before the rest "
                    "(`harness run --resume` runs the point again)",
                }
            )
        if (
            self.settings.correctness_only
        ):  # `harness verify`: the gate's record, beside (never over) the point's run record
            record = record.as_correctness_only()
        if self.settings.results_dir is not None:
            store.write(record, self.settings.results_dir)
        return record

    def prepare_reference(self, scenario: Scenario):
        """Compute (or find) the scenario's gate reference without touching any device: run once on
        any machine, then ship the reference directory to the runners (``--reference-dir``)."""
        from harness.run.steps.check_correctness import gate_reference

        ctx = LaunchContext(self.settings, self.caches, log=self.log)
        model = self.caches.model(scenario, self.settings.cache_dir)
        # every gate length the points need, each once (the caches keep references by path)
        return [gate_reference(ctx, scenario, model, point) for point in expand(scenario)][-1]

    def finished(self, scenario: Scenario, point: Point) -> Optional[Record]:
        """The stored record of this point when it is ``ok`` (with all its launches) or ``skipped`` and its
        configuration matches."""
        if self.settings.results_dir is None:
            return None
        path = store.record_path(
            self.settings.results_dir, Record(scenario=scenario.name, point_id=point.id, point={}, status="ok")
        )
        try:
            record = store.read(path)
        except (OSError, ValueError):
            return None
        # an axis added after the record was written (speculative) counts as its default there
        stored = {axis.name: axis.default for axis in SWEEP_AXES if not axis.required} | record.point
        same = stored == point.axes() and same_scenario_settings(record.settings, scenario)
        complete = (record.status == "skipped" and not skipped_for_budget(record)) or (
            record.status == "ok"
            and (
                self.settings.correctness_only or len(record.samples.launches) >= self.planned_launches(scenario, point)
            )
        )
        return record if same and complete else None
