"""``harness history add|list|show|export|check`` (its options: ``harness.cli.history_options``).
``run(args)`` returns the exit code (0 ok, 1 a regression found, 2 a usage error), printing
errors as one line."""

from __future__ import annotations

import argparse
import difflib
import sys
from typing import Optional

from harness.errors import HarnessError, UsageError, writing
from harness.history import REQUIRES


def run(args: argparse.Namespace) -> int:
    commands = {"add": _add, "list": _list, "show": _show, "export": _export, "check": _check}
    try:
        return commands[args.history_command](args)
    except HarnessError as exc:
        print(f"ERROR {exc}", file=sys.stderr)
        return exc.exit_code
    except (FileNotFoundError, ValueError) as exc:  # unreadable or missing record files, named in the message
        print(f"ERROR {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        if exc.name not in (*REQUIRES, "pyarrow", "psycopg"):
            raise
        print(f"ERROR harness history needs {exc.name}: pip install 'harness[history]'", file=sys.stderr)
        return 2


def _open(args):
    from harness.history.database import open_db

    return open_db(args.db)


def _add(args) -> int:
    from harness.history import database, ingest

    runs = [ingest.read_run(path, args.commit) for path in args.results]  # read all before writing any
    engine = _open(args)
    for run in runs:
        added = database.add(engine, run)
        if added.new:
            print(
                f"added run #{added.run_id} from {run.source}: {added.points} points, {added.values} values, "
                f"commit {run.commit or '?'}"
            )
        else:
            print(f"already stored: run #{added.run_id} holds the same records as {run.source}")
    return 0


def _list(args) -> int:
    from harness.history.queries import runs

    engine = _open(args)
    found = runs(engine)
    if not found:
        print(f"no runs in {engine.url.render_as_string(hide_password=True)}")
        return 0
    print(f"{'run':>6}  {'started (UTC)':16}  {'commit':12}  {'points':>6}  {'host':20}  source")
    for run in found:
        print(
            f"{run.id:>6}  {run.started_at:%Y-%m-%d %H:%M}  {(run.commit or '-')[:12]:12}  {run.n_points:>6}  "
            f"{(run.host or '-')[:20]:20}  {run.source or ''}"
        )
    return 0


def _point(text: str) -> tuple[str, str]:
    scenario, sep, point_id = text.partition("::")
    if not sep or not scenario or not point_id:
        raise UsageError(f"{text!r}: expected SCENARIO::POINT, e.g. demo::hf-cpu-bf16")
    return scenario, point_id


def _show(args) -> int:
    from harness.history import catalogue, queries
    from harness.history.changepoints import detect

    engine = _open(args)
    scenario, point_id = _point(args.point)
    everything = queries.series(engine, scenario, point_id, spread=True)
    outcomes = queries.point_outcomes(engine, scenario, point_id)
    if not everything and outcomes:  # gate-only records (harness verify): verdicts, no series
        if args.metric:
            raise UsageError(
                f"--metric {args.metric}: {args.point} has no timing series (gate-only records, from harness "
                "verify); without --metric its verdicts are shown"
            )
        print(f"{args.point}: no timing series; correctness by run")
        for run, status, verdict, _ in outcomes:
            print(f"  {run.label()}: status {status}, correctness {verdict or '-'}")
        return 0
    if not everything:
        known = sorted({s.point for s in queries.series(engine)})
        close = difflib.get_close_matches(args.point, known, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise UsageError(f"{args.point}: no such point in {engine.url.render_as_string(hide_password=True)}{hint}")
    if args.metric:
        metric = catalogue.resolve(args.metric, {s.metric for s in everything})
        chosen = [s for s in everything if s.metric == metric]
        if not chosen:
            raise UsageError(
                f"--metric {args.metric}: {args.point} has no such metric (it has "
                f"{', '.join(sorted({s.metric for s in everything}))})"
            )
        for series in chosen:
            _print_series(series, {c.index for c in detect(series.values)})
        return 0
    print(f"{args.point}: {len(everything)} series (--metric NAME shows one run by run)")
    for series in sorted(everything, key=lambda s: (s.metric, s.fingerprint.label())):
        changes = detect(series.values)
        print(
            f"  {series.metric:28} {len(series.values):>4} runs  latest {series.values[-1]:<10.4g} "
            f"{len(changes)} change point(s)  [{series.fingerprint.label()}]"
        )
    bad = [(run, status, verdict) for run, status, verdict, _ in outcomes if status != "ok" or verdict == "fail"]
    for run, status, verdict in bad:
        print(f"  {run.label()}: status {status}, correctness {verdict or '-'}")
    disturbed = {run.id: (run, left_out) for s in everything for run, left_out in zip(s.runs, s.excluded) if left_out}
    for run, left_out in sorted(disturbed.values(), key=lambda pair: pair[0].position):
        print(f"  {run.label()}: {_excluded(left_out)}")
    return 0


def _excluded(left_out) -> str:
    """The launches a run left out of the regression check (and so of the history's values), with why."""
    return f"left out as disturbed: {'; '.join(entry.label() for entry in left_out)}"


def _print_series(series, changes: set[int]) -> None:
    print(f"{series.point} {series.metric} [{series.fingerprint.label()}]")
    print(f"  {'run':>6}  {'started (UTC)':16}  {'commit':12}  {'value':>10}  {'spread (over)':>32}  verdict")
    for i, (run, value, (low, high), over, verdict) in enumerate(
        zip(series.runs, series.values, series.spread, series.spread_over, series.verdicts)
    ):
        spread = "" if low is None else f"{low:.4g}..{high:.4g} ({over})"
        mark = "  <- change point" if i in changes else ""
        print(
            f"  {run.id:>6}  {run.started_at:%Y-%m-%d %H:%M}  {(run.commit or '-')[:12]:12}  {value:>10.4g}  "
            f"{spread:>32}  {verdict or '-'}{mark}"
        )
        if series.excluded[i]:
            recorded = series.recorded[i]
            over_all = "" if recorded == value else f"; value over every launch {recorded:.4g}"
            print(f"  {'':>6}  {_excluded(series.excluded[i])}{over_all}")


def _export(args) -> int:
    from io import BytesIO
    from pathlib import Path

    from harness.history.queries import frame
    from harness.io import write_bytes_atomic

    out = Path(args.output)
    fmt: Optional[str] = args.format or {".parquet": "parquet", ".csv": "csv"}.get(out.suffix.lower())
    if fmt is None:
        raise UsageError(f"-o {args.output}: give --format parquet or csv (or a .parquet/.csv file name)")
    table = frame(_open(args))
    if fmt == "parquet":
        buffer = BytesIO()
        table.to_parquet(buffer, index=False)
        data = buffer.getvalue()
    else:
        import json

        for column in ("rounds", "launches", "excluded_launches"):  # lists as JSON text, kept intact by CSV readers
            table[column] = [None if v is None else json.dumps(v) for v in table[column]]
        data = table.to_csv(index=False).encode("utf-8")
    with writing(out, kept="nothing exported"):  # written atomically: an older export stays whole
        write_bytes_atomic(out, data)
    print(f"wrote {len(table)} values to {out}")
    return 0


def _check(args) -> int:
    from harness.history import queries
    from harness.history.series_check import check

    if args.since < 0:
        raise UsageError("--since must be >= 0")
    if args.persist < 1:
        raise UsageError(f"--persist: expected a number of nights >= 1, got {args.persist}")
    engine = _open(args)
    result = check(queries.series(engine), queries.runs(engine), args.since, args.threshold, args.penalty, args.persist)
    for finding in result.regressions:
        print(f"REGRESSION {finding.describe()}")
        _bisect_line(finding, args.threshold)
    for finding in result.suspicious:
        print(
            f"SUSPICIOUS {finding.describe()}; held {finding.nights} of the {args.persist} night(s) "
            "a regression needs (--persist): not failed"
        )
        _bisect_line(finding, args.threshold)
    older = len(result.open) - len(result.regressions)
    print(
        f"checked {result.n_series} series over {result.n_runs} runs: {len(result.regressions)} new change "
        f"point(s) worsen a metric by more than {args.threshold:.1%} in the newest {args.since} runs"
        + (f"; {older} older open one(s) (see harness report --history)" if older else "")
        + (f"; {len(result.suspicious)} suspicious (not yet {args.persist} nights)" if result.suspicious else "")
    )
    return 1 if result.regressions else 0


def _bisect_line(finding, threshold: float) -> None:
    """The command that finds the commit within a finding's range, when the range has two commits."""
    from harness.regression.bisect import command_line

    series = finding.series
    command = command_line(
        finding.last_before.commit,
        finding.first_after.commit,
        series.scenario,
        series.point_id,
        series.metric,
        threshold,
    )
    if command:
        print(f"  find the commit: {command}")
