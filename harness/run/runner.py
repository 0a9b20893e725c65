"""Run sweeps: choose the points, run launch k of every point before launch k+1 of any, write each point's
record after each launch, show progress; rerun given records' points (``harness gate --confirm``). Orchestration
only: one point's launches, merged and written, are ``harness.run.point_runner``; what happens inside a point is
``harness.run.steps``; when a point has had enough launches, ``harness.run.stopping``; the statistics over
launches, ``harness.measure.launch_stats``."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable, Iterable, Optional

from harness.errors import HarnessError, writing
from harness.models import sources
from harness.records import store
from harness.records.record import INCOMPLETE, Record
from harness.run import lifecycle
from harness.run.point_runner import PointRunner
from harness.run.progress import PhaseLines
from harness.run.steps.launch_context import quiet
from harness.scenario.schema import Scenario
from harness.scenario.sweep import Point, expand


class Runner(PointRunner):
    """Runs sweeps of points with the run's ``settings`` and writes their records (a point's launches:
    ``PointRunner``)."""

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
        if order:  # once per run, after the checks that refuse it, before any point: the machine's speed now
            self._calibrate_canary()
        launched: dict[int, list[Record]] = {i: [] for i in order}
        stopped: set[int] = set()  # points the spent budget ended: no launch more
        planned = len(done) + sum(self.planned_launches(*work[i]) for i in order)
        try:
            with tqdm(total=planned, desc="sweep", unit="launch", disable=not bar_shown, file=sys.stderr) as bar:
                bar.update(len(done))
                finished = len(done)  # launches, counted here too: a disabled bar counts nothing
                pending = order
                while pending:
                    self.launcher.expect([work[i] for i in pending])
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

        pairs = []  # every record's scenario and point first: a refusal comes before the canary calibrates
        for record in records:
            if not record.scenario_path:
                raise HarnessError(
                    f"{record.scenario}::{record.point_id}: the record names no scenario file to rerun (scenario_path)"
                )
            scenario = planning.load(Path(record.scenario_path))
            point = next((p for p in expand(scenario) if p.id == record.point_id), None)
            if point is None:
                raise HarnessError(f"{record.scenario_path}: no point {record.point_id} in the scenario any more")
            pairs.append((scenario, point))
        self._calibrate_canary()
        out = []
        try:
            for record, (scenario, point) in zip(records, pairs):
                merged = [record]
                for _ in range(launches):
                    self.launcher.close()
                    merged.append(self._launch(scenario, point, first_launch=False))  # no second gate
                out.append(self._merged(merged))
        finally:
            self.launcher.close()
        return out


def _group(scenario: Scenario, point: Point) -> tuple:
    """Points that share a worker: same engine and model (and so the conversion artefacts)."""
    return sources.spec_key(scenario.model), point.adapter


def _on_bar(bar, name: str) -> Callable[[str], None]:
    """A point's phases as the progress bar's postfix."""
    return lambda phase: bar.set_postfix_str(f"{name}::{phase}")
