"""Run sweeps: choose the points, run each (in this process or an isolated worker), write its record,
show progress. Orchestration only: what happens inside a point is ``harness.steps``."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional, Union

from harness import lifecycle, registry, results, steps
from harness.errors import HarnessError
from harness.isolation import Limits, run_in_child
from harness.record import Record
from harness.scenario import Scenario
from harness.steps.session import Session, now_iso
from harness.sweep import Point, expand


@dataclass
class Runner:
    """Runs points and writes their records; one ``Session`` holds what points share (resolved models,
    references, the energy meter), so a sweep converts each model once.

    ``timing=False`` runs only the correctness gate (``harness verify``); ``gate_prompts`` overrides
    the scenarios' gate prompt selection; references live in ``reference_dir`` (default
    ``<results_dir>/references``).
    """

    results_dir: Optional[Path] = Path("results")
    cache_dir: Optional[Path] = None
    reference_dir: Optional[Path] = None
    timing: bool = True
    gate_prompts: Union[str, int, None] = None
    refresh_reference: bool = False
    log: Callable[[str], None] = field(default=lambda message: None)
    isolate: bool = False  # run each point in a child process (see harness.isolation)
    allow_remote_code: bool = False  # the command line's confirmation of model.trust_remote_code
    energy: bool = True  # energy (Zeus), CPU time and the roofline around the timed rounds
    limits: Limits = field(default_factory=Limits)

    def __post_init__(self):
        self.session = Session(cache_dir=self.cache_dir, reference_dir=self.reference_dir, timing=self.timing,
                               gate_prompts=self.gate_prompts, refresh_reference=self.refresh_reference,
                               allow_remote_code=self.allow_remote_code, energy=self.energy, log=self.log)

    def run_point(self, scenario: Scenario, point: Point, on_round: Optional[Callable[[int], None]] = None) -> Record:
        if self.isolate:
            record = self._run_isolated(scenario, point)
        else:
            record = steps.execute(self.session, scenario, point, on_round)
        if self.results_dir is not None:
            results.write(record, self.results_dir)
        return record

    def _run_isolated(self, scenario: Scenario, point: Point) -> Record:
        started = now_iso()
        try:
            reason = registry.get(point.adapter).supports(point)  # cheap: skip without a child
        except HarnessError as exc:
            reason = str(exc)
        if reason:
            record = steps.new_record(self.session, scenario, point)
            record.status, record.reason = "skipped", reason
        else:
            record = run_in_child(self.session.options(), scenario, point, self.limits, self.log,
                                  progress=self.session.progress)
            record.settings = record.settings or self.session.settings_of(scenario)
            record.environment = record.environment or self.session.environment()
            record.started_at = record.started_at or started
        record.finished_at = record.finished_at or now_iso()
        return record

    def prepare_reference(self, scenario: Scenario):
        """Compute (or find) the scenario's gate reference without touching any device: run once on
        any machine, then ship the reference directory to the runners (``--reference-dir``)."""
        from harness.steps.verify import gate_reference

        return gate_reference(self.session, scenario, self.session.model(scenario))

    def finished(self, scenario: Scenario, point: Point) -> Optional[Record]:
        """The stored record of this point when it is ``ok`` or ``skipped`` and its configuration matches."""
        if self.results_dir is None:
            return None
        path = results.record_path(self.results_dir, Record(scenario=scenario.name, point_id=point.id,
                                                            point={}, status="ok"))
        try:
            record = results.read(path)
        except (OSError, ValueError):
            return None
        settings = json.loads(json.dumps(self.session.settings_of(scenario)))
        same = record.point == point.axes() and record.settings == settings
        return record if same and record.status in ("ok", "skipped") else None

    def run(self, scenarios: Iterable[Scenario], progress: bool = True,
            select: Optional[Callable[[Point], bool]] = None, resume: bool = False, shard=None) -> list[Record]:
        """Run every (selected) point of every scenario, with a progress bar on stderr.

        ``resume`` keeps points whose stored record is ok or skipped with the same configuration;
        failed, timed-out and missing points run again. ``shard`` (a ``harness.shard.Shard``) keeps
        this machine's share of the selected points.

        An ``Interrupted`` (a front-end's signal handling, ``harness.lifecycle``) leaves the point under
        way without a record, so ``resume`` runs it again; it propagates carrying how many of how many
        points have records.
        """
        from tqdm import tqdm

        lifecycle.sweep_stale(self.results_dir)  # what killed runs left behind
        work = [(s, p) for s in scenarios for p in expand(s) if select is None or select(p)]
        if shard is not None:
            from harness.shard import select as shard_select

            work = shard_select(work, shard)
        records = []
        try:
            with tqdm(total=len(work), desc="sweep", unit="point", disable=not progress, file=sys.stderr) as bar:
                for scenario, point in work:
                    bar.set_postfix_str(f"{scenario.name}::{point.id}")
                    if progress:  # the point's phase (loading, timing round i/n, gate prompt j/m) on the bar
                        self.session.progress = lambda phase, name=scenario.name: bar.set_postfix_str(f"{name}::{phase}")
                    record = (self.finished(scenario, point) if resume else None) or self.run_point(scenario, point)
                    records.append(record)
                    bar.update()
                    if record.status != "ok" and progress:
                        bar.write(f"{record.status.upper()} {scenario.name}::{point.id}: {record.reason}",
                                  file=sys.stderr)
        except lifecycle.Interrupted as exc:
            exc.done, exc.total = len(records), len(work)
            raise
        finally:
            self.session.progress = lambda phase: None
        return records
