"""Trend figures for ``harness report --history``: per point, one panel per metric with the value and
its spread per run, change points marked (open worsening ones in red) and correctness verdict changes
marked; and the table of open change points."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from harness.history.changepoints import DEFAULT_PENALTY
from harness.history.queries import SeriesData
from harness.history.series_check import DEFAULT_THRESHOLD, Finding, findings

OPEN_COLUMNS = (
    "point",
    "metric",
    "fingerprint",
    "before",
    "after",
    "change",
    "now",
    "first_run_after",
    "commit_after",
    "last_run_before",
    "commit_before",
    "plausible_from",
    "plausible_to",
)


@dataclass
class TrendReport:
    figures: list[Path]  # one PNG per point
    open_changes: "object"  # pandas DataFrame with OPEN_COLUMNS, worst first


def open_table(found: Sequence[Finding], threshold: float = DEFAULT_THRESHOLD):
    """Open change points (worse beyond ``threshold`` and not come back) as a DataFrame, worst first."""
    import pandas as pd

    rows = [
        {
            "point": f.series.point,
            "metric": f.series.metric,
            "fingerprint": f.series.fingerprint.label(),
            "before": f.change.before,
            "after": f.change.after,
            "change": f.change.relative,
            "now": f.current,
            "first_run_after": f.first_after.id,
            "commit_after": f.first_after.commit,
            "last_run_before": f.last_before.id,
            "commit_before": f.last_before.commit,
            "plausible_from": f.range_before.commit,
            "plausible_to": f.range_after.commit,
        }
        for f in sorted(found, key=lambda f: -f.worsening)
        if f.is_open(threshold)
    ]
    return pd.DataFrame(rows, columns=list(OPEN_COLUMNS))


def _panel(ax, series_list: list[SeriesData], marks: list[Finding], threshold: float) -> None:
    """x is the run's position in the history (dates label a few ticks): cheap to lay out for hundreds
    of figures, and nights without a value leave no misleading gap in time."""
    from harness.records import metric_names

    for series in series_list:
        x = [run.position for run in series.runs]
        line = ax.plot(
            x, series.values, marker=".", markersize=3, linewidth=1, label=series.fingerprint.label() or None
        )[0]
        spread = [(x[i], lo, hi) for i, (lo, hi) in enumerate(series.spread) if lo is not None]
        if spread:
            ax.vlines(*zip(*spread), color=line.get_color(), alpha=0.35, linewidth=2)
        changed = [
            (x[i], series.values[i], verdict)
            for i, (verdict, previous) in enumerate(zip(series.verdicts[1:], series.verdicts[:-1]), start=1)
            if verdict != previous
        ]
        for marker, color, test in (("v", "red", lambda v: v == "fail"), ("^", "green", lambda v: v != "fail")):
            points = [(px, py) for px, py, verdict in changed if test(verdict)]
            if points:
                ax.scatter(*zip(*points), marker=marker, color=color, s=40, zorder=3)
    for finding in marks:
        color = "red" if finding.is_open(threshold) else "grey"
        ax.axvline(
            (finding.last_before.position + finding.first_after.position) / 2, color=color, linestyle="--", linewidth=1
        )
        ax.axvspan(finding.range_before.position, finding.range_after.position, color=color, alpha=0.08)
    ax.set_title(metric_names.label(series_list[0].metric), fontsize=9)
    if len(series_list) > 1:
        ax.legend(fontsize=6)


def _figure(
    path: Path, point: str, panels: list[tuple[list[SeriesData], list[Finding]]], threshold: float, dates: list[str]
) -> Path:
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    from harness.report.plots import pyplot

    plt = pyplot()
    columns = min(len(panels), 2)
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5.5 * columns, 2.6 * rows), squeeze=False)
    label = FuncFormatter(lambda value, _: dates[int(value)] if 0 <= int(value) < len(dates) else "")
    for ax, (series_list, marks) in zip(axes.flat, panels):
        _panel(ax, series_list, marks, threshold)
        ax.xaxis.set_major_locator(MaxNLocator(6, integer=True))
        ax.xaxis.set_major_formatter(label)
        ax.yaxis.set_major_locator(MaxNLocator(5))
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    fig.suptitle(
        f"{point} (dashed: change points, red when worse and still open; triangles: correctness verdict changes)",
        fontsize=8,
    )
    fig.subplots_adjust(left=0.08, right=0.98, top=1 - 0.35 / rows, bottom=0.25 / rows, hspace=0.45, wspace=0.2)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=72)
    plt.close(fig)
    return path


def _render(job: tuple) -> Path:
    return _figure(*job)


def trend_figures(
    db_url: str,
    out_dir: str | Path,
    metrics: Optional[Sequence[str]] = None,
    penalty: float = DEFAULT_PENALTY,
    threshold: float = DEFAULT_THRESHOLD,
    all_points: bool = False,
    workers: Optional[int] = None,
) -> TrendReport:
    """Trend PNGs under ``out_dir`` (``<scenario>/<point>.png``) and the open change points.

    A figure per point that moved (a change point in a metric with a direction, or a verdict change;
    every point with ``all_points``), one panel per metric: ``metrics`` when given, else the
    catalogue's headline metrics plus the point's metrics that moved. Figures render in ``workers``
    processes (default: the CPUs), since matplotlib spends ~0.1 s per panel."""
    import os
    from concurrent.futures import ProcessPoolExecutor

    from harness.history import queries
    from harness.history.database import open_db
    from harness.io import safe_name
    from harness.records import metrics as catalogue

    engine = open_db(db_url)
    try:
        values = queries.series(engine)  # values only: the change points need no spread
        found = findings(values, penalty)
        marks = defaultdict(list)
        for finding in found:
            if finding.higher_is_better is not None:
                marks[finding.series.id].append(finding)
        flipped = queries.verdict_changes(engine)
        points = sorted({(s.scenario, s.point_id) for s in values if all_points or marks[s.id]} | flipped)
        dates = [f"{run.started_at:%Y-%m-%d}" for run in queries.runs(engine)]
        jobs = []
        for scenario, point_id in points:
            point_series = queries.series(engine, scenario, point_id, spread=True)
            moved = {s.metric for s in point_series if marks[s.id]}
            shown = set(metrics) if metrics is not None else set(catalogue.HEADLINE) | moved
            panels = defaultdict(list)
            for series in point_series:
                if series.metric in shown:
                    panels[series.metric].append(series)
            if panels:
                jobs.append(
                    (
                        Path(out_dir) / safe_name(scenario) / f"{safe_name(point_id)}.png",
                        f"{scenario}::{point_id}",
                        [(group, [f for s in group for f in marks[s.id]]) for _, group in sorted(panels.items())],
                        threshold,
                        dates,
                    )
                )
    finally:
        engine.dispose()
    workers = min(workers or os.cpu_count() or 1, len(jobs))
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            figures = list(pool.map(_render, jobs, chunksize=4))
    else:
        figures = [_render(job) for job in jobs]
    return TrendReport(figures, open_table(found, threshold))
