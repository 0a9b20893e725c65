"""Run sweeps: choose the points, run each launch of each (through the launcher of the run's isolation mode,
``harness.run.launchers``), merge a point's launches, write its record, show progress. Orchestration only: what happens inside a point is
``harness.run.steps``; when a point has had enough launches, ``harness.run.stopping``; the statistics over
launches, ``harness.measure.launch_stats``."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable, Iterable, Optional

from harness.errors import HarnessError, writing
from harness.measure import canary
from harness.measure.launch_stats import combine
from harness.models import sources
from harness.records import store
from harness.records.record import INCOMPLETE, Record
from harness.run import lifecycle
from harness.run.budget import Clock, skipped_for_budget
from harness.run.launchers import launcher_for
from harness.run.progress import PhaseLines
from harness.run.settings import RunSettings
from harness.run.steps.caches import Caches
from harness.run.steps.launch_context import LaunchContext, quiet
from harness.run.steps.new_record import new_record, now_iso, same_scenario_settings
from harness.run.steps.skip import skip_reason
from harness.run.stopping import wants_launch
from harness.scenario.schema import SWEEP_AXES, Scenario
from harness.scenario.sweep import Point, expand


class Runner:
    """Runs points with the run's ``settings`` (taken whole) and writes their records. ``caches`` hold what
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
            self.recalibrations += 1
            self.launcher.close()  # a kept worker holds the old calibration
        if made is not None and (why or (made.attempts > 1 and not made.reused)):
            self.log(canary.message(why, old, made))

    # --- one point -------------------------------------------------------------------------------

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

    # --- sweeps ----------------------------------------------------------------------------------

    def run(
        self,
        scenarios: Iterable[Scenario],
        progress: bool = True,
        select: Optional[Callable[[Scenario, Point], bool]] = None,
        resume: bool = False,
        shard=None,
        on_phase: Callable[[str], None] = quiet,
    ) -> list[Record]:
        """Run every (selected) point of every scenario, with a progress bar on stderr (``progress``; the
        points' phases show on the bar, else go to ``on_phase``); the records come back in sweep order.

        Points are grouped by engine and model so a worker serves a group; launch k of every point runs
        before launch k+1 of any (so a slow drift of the machine spreads over all points), each launch
        pass in fresh workers. A point's record is written after each of its launches, merged so far, with
        status ``incomplete`` until its last launch. ``resume`` keeps points whose stored record is ok or
        skipped with the same configuration and all its launches; ``shard`` (a ``harness.run.shard.Shard``)
        keeps this machine's share of the points.

        An ``Interrupted`` (a front-end's signal handling, ``harness.run.lifecycle``) leaves the launch under
        way unrecorded and the point's record, if any, ``incomplete``, so ``resume`` runs the point again; it
        propagates carrying how many of how many points have complete records, and how many incomplete ones.
        """
        lifecycle.sweep_stale(self.settings.results_dir)  # what killed runs left behind
        work = [(s, p) for s in scenarios for p in expand(s) if select is None or select(s, p)]
        if shard is not None:
            from harness.run.shard import select as shard_select

            work = shard_select(work, shard)
        return self.run_pairs(work, progress, resume, on_phase)

    def run_pairs(
        self,
        work: list[tuple[Scenario, Point]],
        progress: bool = True,
        resume: bool = False,
        on_phase: Callable[[str], None] = quiet,
        lines: Optional[PhaseLines] = None,
    ) -> list[Record]:
        """``run`` over given (scenario, point) pairs, in their order: what pytest selected, interleaved.
        ``progress`` on a terminal is a bar; elsewhere (a CI log) it is lines (``harness.run.progress``), as
        ``lines`` are when given (pytest's terminal)."""
        from tqdm import tqdm

        bar_shown = progress and sys.stderr.isatty()
        if progress and not bar_shown and lines is None:  # no \r frames in a log: a line per phase and launch
            lines = PhaseLines(lambda text: print(text, file=sys.stderr, flush=True))

        if work:
            self._calibrate_canary()  # once per run, before any point: the machine's speed now
        results_dir = self.settings.results_dir
        if results_dir is not None:  # before any work, not after the first point ran
            for scenario, point in work:
                where = Record(scenario=scenario.name, point_id=point.id, point={}, status="ok")
                where = (
                    where.as_correctness_only() if self.settings.correctness_only else where
                )  # the file this run would write
                store.refuse_newer(store.record_path(results_dir, where))
        done = {i: r for i, (s, p) in enumerate(work) if resume and (r := self.finished(s, p)) is not None}
        groups: dict[tuple, int] = {}
        order = sorted(
            (i for i in range(len(work)) if i not in done),
            key=lambda i: groups.setdefault(_group(*work[i]), len(groups)),
        )
        if results_dir is not None:  # room for the records of the points to run, before any runs
            store.check_free_space(results_dir, len(order))
        launched: dict[int, list[Record]] = {i: [] for i in order}
        stopped: set[int] = set()  # points the spent budget ended: no launch more
        planned = len(done) + sum(self.planned_launches(*work[i]) for i in order)
        try:
            with tqdm(total=planned, desc="sweep", unit="launch", disable=not bar_shown, file=sys.stderr) as bar:
                bar.update(len(done))
                finished = len(done)  # launches, counted here too: a disabled bar counts nothing
                pending = order
                while pending:
                    for i in pending:
                        scenario, point = work[i]
                        bar.set_postfix_str(f"{scenario.name}::{point.id}")
                        # the point's phase (loading, timing round i/n, gate prompt j/m) on the bar
                        if bar_shown:
                            phase = _on_bar(bar, scenario.name)
                        else:
                            phase = lines.for_scenario(scenario.name) if lines is not None else on_phase
                        started = time.monotonic()
                        if self.clock.spent():  # no new point; one with launches keeps those it has
                            stopped.add(i)
                            if not launched[i]:
                                launched[i].append(self._skipped(scenario, point, self.clock.skip_reason()))
                            more = False
                        else:
                            self.clock.began((scenario.name, point.id))
                            phase(f"{point.id}: launch {len(launched[i]) + 1}/{self.planned_launches(scenario, point)}")
                            launched[i].append(self._launch(scenario, point, not launched[i], phase))
                            more = self._wants_launch(scenario, launched[i], point)
                        with writing(
                            results_dir or ".",
                            kept=lambda: f"{len(done)} of {len(work)} point(s) have records",
                            records=lambda: [done[j] for j in sorted(done)],
                        ):
                            done[i] = self._merged(launched[i], incomplete=more)  # what is on disk now
                        bar.update()
                        finished += 1
                        if lines is not None:
                            left = sum(max(0, self.planned_launches(*work[j]) - len(launched[j])) for j in pending)
                            lines.launch_done(
                                finished,
                                finished + left,
                                f"{scenario.name}::{point.id}",
                                launched[i][-1].status,
                                time.monotonic() - started,
                            )
                        if launched[i][-1].status != "ok" and progress:
                            bar.write(
                                f"{done[i].status.upper()} {scenario.name}::{point.id}: {done[i].reason}",
                                file=sys.stderr,
                            )
                    self.launcher.close()  # the next pass starts fresh workers
                    pending = [
                        i
                        for i in pending
                        if i not in stopped and self._wants_launch(work[i][0], launched[i], work[i][1])
                    ]
                    bar.total = bar.n + sum(max(1, self.planned_launches(*work[i]) - len(launched[i])) for i in pending)
        except lifecycle.Interrupted as exc:  # counted from what is on disk: a launch not yet written is not there
            complete = sum(record.status != INCOMPLETE for record in done.values())
            exc.done, exc.total, exc.incomplete = complete, len(work), len(done) - complete
            raise
        finally:
            self.launcher.close()
            if lines is not None:
                lines.idle()  # nothing under way: the heartbeat stops
        return [done[i] for i in range(len(work)) if i in done]

    def relaunch(self, records: list[Record], launches: int) -> list[Record]:
        """``launches`` more launches of each record's point (scenario read from ``record.scenario_path``),
        merged with the launches it has, written and returned in the same order (``harness gate --confirm``)."""
        from harness.run import planning

        self._calibrate_canary()
        out = []
        try:
            for record in records:
                if not record.scenario_path:
                    raise HarnessError(
                        f"{record.scenario}::{record.point_id}: the record names no scenario file "
                        "to rerun (scenario_path)"
                    )
                scenario = planning.load(Path(record.scenario_path))
                point = next((p for p in expand(scenario) if p.id == record.point_id), None)
                if point is None:
                    raise HarnessError(f"{record.scenario_path}: no point {record.point_id} in the scenario any more")
                merged = [record]
                for _ in range(launches):
                    self.launcher.close()
                    merged.append(self._launch(scenario, point, first_launch=False))  # no second gate
                out.append(self._merged(merged))
        finally:
            self.launcher.close()
        return out

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


def _group(scenario: Scenario, point: Point) -> tuple:
    """Points that share a worker: same engine and model (and so the conversion artefacts)."""
    return sources.spec_key(scenario.model), point.adapter


def _on_bar(bar, name: str) -> Callable[[str], None]:
    """A point's phases as the progress bar's postfix."""
    return lambda phase: bar.set_postfix_str(f"{name}::{phase}")
