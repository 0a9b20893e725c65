"""Run sweeps: choose the points, run each launch of each (in this process or an isolated worker), merge a
point's launches, write its record, show progress. Orchestration only: what happens inside a point is
``harness.run.steps``; when a point has had enough launches, ``harness.run.stopping``; the statistics over
launches, ``harness.measure.launches``."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional, Union

from harness.errors import HarnessError, writing
from harness.measure.launches import combine
from harness.models import sources
from harness.records import store
from harness.records.record import Record
from harness.run import lifecycle, steps
from harness.run.isolation import MODES, Limits
from harness.run.pool import WorkerPool
from harness.run.steps.session import Session, now_iso
from harness.run.steps.skip import skip_reason
from harness.run.stopping import wants_launch
from harness.scenario.schema import Scenario
from harness.scenario.sweep import Point, expand


@dataclass
class Runner:
    """Runs points and writes their records; one ``Session`` holds what points share (resolved models,
    references, the energy meter), so a sweep converts each model once.

    ``isolation``: ``worker`` (persistent isolated workers, one per group of points sharing an engine and
    a model), ``point`` (a fresh process per point) or ``none`` (this process); ``isolate=True`` without
    ``isolation`` means ``worker``. ``timing=False`` runs only the correctness gate (``harness verify``);
    ``gate_prompts`` overrides the scenarios' gate prompt selection; references live in ``reference_dir``
    (default ``<results_dir>/references``). ``launches`` overrides every scenario's ``measurement.launches``.
    """

    results_dir: Optional[Path] = Path("results")
    cache_dir: Optional[Path] = None
    reference_dir: Optional[Path] = None
    timing: bool = True
    gate_prompts: Union[str, int, None] = None
    refresh_reference: bool = False
    log: Callable[[str], None] = field(default=lambda message: None)
    isolate: bool = False
    isolation: Optional[str] = None
    allow_remote_code: bool = False  # the command line's confirmation of model.trust_remote_code
    energy: bool = True  # energy (Zeus), CPU time and the roofline around the timed rounds
    limits: Limits = field(default_factory=Limits)
    launches: Optional[int] = None
    plans: dict = field(default_factory=dict)  # (scenario, point id) -> launches planned by launches: auto

    def __post_init__(self):
        self.isolation = self.isolation or ("worker" if self.isolate else "none")
        if self.isolation not in MODES:
            raise ValueError(f"isolation: expected one of {', '.join(MODES)}, got {self.isolation!r}")
        self.session = Session(
            cache_dir=self.cache_dir,
            reference_dir=self.reference_dir,
            timing=self.timing,
            gate_prompts=self.gate_prompts,
            refresh_reference=self.refresh_reference,
            allow_remote_code=self.allow_remote_code,
            energy=self.energy,
            log=self.log,
        )
        self.pool = WorkerPool(self.session.options, self.isolation, self.limits, self.log)

    def close(self) -> None:
        """End the isolated worker kept for the next point (sweeps end theirs themselves)."""
        self.pool.close()

    def launches_of(self, scenario: Scenario, point: Optional[Point] = None) -> int:
        """The point's launch count: ``--launches``, the scenario's, or with ``launches: auto`` the one planned
        from its stored record (``harness.run.auto_launches``; planned once, before the point runs)."""
        if self.launches:
            return self.launches
        if scenario.measurement.launches != "auto":
            return scenario.measurement.launches
        from harness.run import auto_launches

        if point is None:
            return auto_launches.FALLBACK
        key = (scenario.name, point.id)
        if key not in self.plans:
            found = auto_launches.plan(scenario, point, auto_launches.previous(self.results_dir, scenario, point))
            self.plans[key] = found.launches
            self.log(f"{scenario.name}::{point.id}: {found.why}")
        return self.plans[key]

    # --- one point -------------------------------------------------------------------------------

    def run_point(self, scenario: Scenario, point: Point, on_round: Optional[Callable[[int], None]] = None) -> Record:
        """Every launch of one point, one after another (each in a fresh worker), merged and written."""
        self.session.calibrate_canary()
        launches: list[Record] = []
        while self._wants_launch(scenario, launches, point):
            if launches:
                self.pool.close()  # a launch is independent: fresh worker, fresh load
            launches.append(self._launch(scenario, point, len(launches), on_round))
        return self._merged(launches)

    def _launch(self, scenario: Scenario, point: Point, index: int, on_round=None) -> Record:
        """One launch of the point; the correctness gate and accuracy run in the first launch only."""
        started = now_iso()
        reason = skip_reason(scenario, point, self.timing)
        if reason:  # decided without starting a process
            record = steps.new_record(self.session, scenario, point)
            record.status, record.reason = "skipped", str(reason)
        elif self.isolation == "none":
            self.session.verify = index == 0
            try:
                record = steps.execute(self.session, scenario, point, on_round)
            finally:
                self.session.verify = True
        else:
            record = self.pool.run(scenario, point, verify=index == 0, progress=self.session.progress)
            record.settings = record.settings or self.session.settings_of(scenario)
            record.environment = record.environment or self.session.environment()
            record.started_at = record.started_at or started
        record.finished_at = record.finished_at or now_iso()
        return record

    def _wants_launch(self, scenario: Scenario, launches: list[Record], point: Optional[Point] = None) -> bool:
        """Another launch of the point (``harness.run.stopping``)."""
        return wants_launch(scenario.measurement, launches, self.timing, lambda: self.launches_of(scenario, point))

    def _merged(self, launches: list[Record]) -> Record:
        record = combine(launches)
        if not self.timing:  # `harness verify`: the gate's record, beside (never over) the point's run record
            record = record.as_verify_only()
        if self.results_dir is not None:
            store.write(record, self.results_dir)
        return record

    # --- sweeps ----------------------------------------------------------------------------------

    def run(
        self,
        scenarios: Iterable[Scenario],
        progress: bool = True,
        select: Optional[Callable[[Point], bool]] = None,
        resume: bool = False,
        shard=None,
    ) -> list[Record]:
        """Run every (selected) point of every scenario, with a progress bar on stderr; the records come
        back in sweep order.

        Points are grouped by engine and model so a worker serves a group; launch k of every point runs
        before launch k+1 of any (so a slow drift of the machine spreads over all points), each launch
        pass in fresh workers. A point's record is written after each of its launches, merged so far.
        ``resume`` keeps points whose stored record is ok or skipped with the same configuration and all
        its launches; ``shard`` (a ``harness.run.shard.Shard``) keeps this machine's share of the points.

        An ``Interrupted`` (a front-end's signal handling, ``harness.run.lifecycle``) leaves the launch under
        way unrecorded, so ``resume`` runs the point again; it propagates carrying how many of how many
        points have complete records.
        """
        lifecycle.sweep_stale(self.results_dir)  # what killed runs left behind
        work = [(s, p) for s in scenarios for p in expand(s) if select is None or select(p)]
        if shard is not None:
            from harness.run.shard import select as shard_select

            work = shard_select(work, shard)
        return self.run_pairs(work, progress, resume)

    def run_pairs(
        self, work: list[tuple[Scenario, Point]], progress: bool = True, resume: bool = False
    ) -> list[Record]:
        """``run`` over given (scenario, point) pairs, in their order: what pytest selected, interleaved."""
        from tqdm import tqdm

        if work:
            self.session.calibrate_canary()  # once per run, before any point: the machine's speed now
        if self.results_dir is not None:  # before any work, not after the first point ran
            for scenario, point in work:
                where = Record(scenario=scenario.name, point_id=point.id, point={}, status="ok")
                where = where if self.timing else where.as_verify_only()  # the file this run would write
                store.refuse_newer(store.record_path(self.results_dir, where))
        done = {i: r for i, (s, p) in enumerate(work) if resume and (r := self.finished(s, p)) is not None}
        groups: dict[tuple, int] = {}
        order = sorted(
            (i for i in range(len(work)) if i not in done),
            key=lambda i: groups.setdefault(_group(*work[i]), len(groups)),
        )
        if self.results_dir is not None:  # room for the records of the points to run, before any runs
            store.check_free_space(self.results_dir, len(order))
        launched: dict[int, list[Record]] = {i: [] for i in order}
        planned = len(done) + sum(self.launches_of(*work[i]) for i in order)
        try:
            with tqdm(total=planned, desc="sweep", unit="launch", disable=not progress, file=sys.stderr) as bar:
                bar.update(len(done))
                pending = order
                while pending:
                    for i in pending:
                        scenario, point = work[i]
                        bar.set_postfix_str(f"{scenario.name}::{point.id}")
                        if progress:  # the point's phase (loading, timing round i/n, gate prompt j/m) on the bar
                            self.session.progress = lambda phase, name=scenario.name: bar.set_postfix_str(
                                f"{name}::{phase}"
                            )
                        launched[i].append(self._launch(scenario, point, len(launched[i])))
                        with writing(
                            self.results_dir or ".",
                            kept=lambda: f"{len(done)} of {len(work)} point(s) have records",
                            records=lambda: [done[j] for j in sorted(done)],
                        ):
                            done[i] = self._merged(launched[i])
                        bar.update()
                        if launched[i][-1].status != "ok" and progress:
                            bar.write(
                                f"{done[i].status.upper()} {scenario.name}::{point.id}: {done[i].reason}",
                                file=sys.stderr,
                            )
                    self.pool.close()  # the next pass starts fresh workers
                    pending = [i for i in pending if self._wants_launch(work[i][0], launched[i], work[i][1])]
                    bar.total = bar.n + sum(max(1, self.launches_of(*work[i]) - len(launched[i])) for i in pending)
        except lifecycle.Interrupted as exc:
            complete = [
                i for i in done if i not in launched or not self._wants_launch(work[i][0], launched[i], work[i][1])
            ]
            exc.done, exc.total = len(complete), len(work)
            raise
        finally:
            self.pool.close()
            self.session.progress = lambda phase: None
        return [done[i] for i in range(len(work)) if i in done]

    def relaunch(self, records: list[Record], launches: int) -> list[Record]:
        """``launches`` more launches of each record's point (scenario read from ``record.scenario_path``),
        merged with the launches it has, written and returned in the same order (``harness gate --confirm``)."""
        from harness.run import planning

        self.session.calibrate_canary()
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
                    self.pool.close()
                    merged.append(self._launch(scenario, point, index=1))  # no second gate
                out.append(self._merged(merged))
        finally:
            self.pool.close()
        return out

    def prepare_reference(self, scenario: Scenario):
        """Compute (or find) the scenario's gate reference without touching any device: run once on
        any machine, then ship the reference directory to the runners (``--reference-dir``)."""
        from harness.run.steps.verify import gate_reference
        from harness.scenario.sweep import expand

        model = self.session.model(scenario)
        # every gate length the points need, each once (the session keeps references by path)
        return [gate_reference(self.session, scenario, model, point) for point in expand(scenario)][-1]

    def finished(self, scenario: Scenario, point: Point) -> Optional[Record]:
        """The stored record of this point when it is ``ok`` (with all its launches) or ``skipped`` and its
        configuration matches."""
        if self.results_dir is None:
            return None
        path = store.record_path(
            self.results_dir, Record(scenario=scenario.name, point_id=point.id, point={}, status="ok")
        )
        try:
            record = store.read(path)
        except (OSError, ValueError):
            return None
        same = record.point == point.axes() and self.session.same_settings(record.settings, scenario)
        complete = record.status == "skipped" or (
            record.status == "ok"
            and (not self.timing or len(record.samples.launches) >= self.launches_of(scenario, point))
        )
        return record if same and complete else None


def _group(scenario: Scenario, point: Point) -> tuple:
    """Points that share a worker: same engine and model (and so the conversion artefacts)."""
    return sources.spec_key(scenario.model), point.adapter
