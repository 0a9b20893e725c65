"""The commands that read records: report, summary, export, baseline, compare, merge and the
regression check (``harness gate``). ``harness.cli.app`` registers them with ``add_parsers``."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.cli import ci_pages
from harness.cli.ci_pages import add_markdown_option
from harness.cli.regression_options import (
    accepted_differences,
    add_accept_option,
    add_baseline_options,
    add_regression_options,
)
from harness.cli.regression_output import regression_report
from harness.errors import EXIT_INCOMPARABLE, UsageError, writing
from harness.records.record import STATUSES


def add_parsers(commands) -> None:
    report = commands.add_parser("report", help="render records as HTML (plots embedded), Markdown and CSV")
    report.add_argument(
        "sources", nargs="+", metavar="RESULTS", help="results directories, record files or pytest-benchmark JSON files"
    )
    report.add_argument("-o", "--output", required=True, metavar="DIR", help="output directory, e.g. reports/nightly")
    report.add_argument(
        "--replace",
        action="store_true",
        help="write into DIR even if it is a non-empty directory an earlier report did not write "
        "(files of the same name are overwritten; nothing else is removed)",
    )
    report.add_argument("--title", default=None)
    report.add_argument(
        "--history",
        metavar="URL",
        default=None,
        help="add trend plots and open change points from a results history (harness history)",
    )

    baseline = commands.add_parser("baseline", help="save records as a named baseline")
    baseline_commands = baseline.add_subparsers(dest="baseline_command", required=True)
    save = baseline_commands.add_parser("save", help="store RESULTS as baseline NAME")
    save.add_argument("sources", nargs="+", metavar="RESULTS")
    save.add_argument("--name", required=True)
    save.add_argument("--replace", action="store_true", help="overwrite an existing baseline of that name")
    add_baseline_options(save.add_argument)
    listing = baseline_commands.add_parser("list", help="list saved baselines")
    add_baseline_options(listing.add_argument)

    compare = commands.add_parser("compare", help="per-point ratios of NEW against BASE (speedup, energy, agreement)")
    compare.add_argument("base", metavar="BASE", help="baseline name or records")
    compare.add_argument("new", metavar="NEW", help="records")
    compare.add_argument("--csv", metavar="FILE", help="also write the table as CSV")
    add_baseline_options(compare.add_argument)
    add_accept_option(compare.add_argument)

    merge = commands.add_parser("merge", help="combine records from many runners into one results directory")
    merge.add_argument(
        "sources", nargs="+", metavar="RESULTS", help="results directories, record or benchmark JSON files"
    )
    merge.add_argument("-o", "--output", required=True, metavar="DIR")

    regression = commands.add_parser(
        "gate", help="exit 1 on regressions, gate failures and lost points against a baseline"
    )
    regression.add_argument("sources", nargs="+", metavar="NEW", help="records of the new run")
    add_markdown_option(regression.add_argument)
    add_regression_options(regression.add_argument)
    add_baseline_options(regression.add_argument)
    regression.add_argument(
        "--present-only",
        action="store_true",
        help="judge only the points NEW has (one runner's shard, confirming on its own device); "
        "points missing from NEW are then the merged run's gate to report",
    )
    regression.add_argument(
        "--confirm",
        type=int,
        default=0,
        metavar="K",
        help="rerun points that regressed (or passed a threshold without significance) K more "
        "launches and judge them again on those launches before failing; needs NEW to be "
        "one results directory, where the reruns are written",
    )

    summary = commands.add_parser("summary", help="per engine and device: is it right, how fast, at what energy")
    summary.add_argument("sources", nargs="+", help="record files, results directories or pytest-benchmark JSON")
    summary.add_argument("--report", default=None, help="a report path to name at the end")
    export = commands.add_parser("export", help="per-token and per-gate-position rows for other tools")
    export.add_argument("sources", nargs="+", help="record files, results directories or pytest-benchmark JSON")
    export.add_argument("--format", choices=("parquet", "jsonl"), default="parquet")
    export.add_argument("-o", "--output", required=True, help="the file to write")


def _report(args) -> int:
    from harness.io import check_own_dir, check_writable_dir
    from harness.report.build import MARKER, build

    if args.replace:
        check_writable_dir(args.output, "report -o")
    else:
        check_own_dir(args.output, "report -o", MARKER, "--replace")
    written = build(args.sources, args.output, title=args.title, history=args.history)
    print(f"wrote {written.html}, {written.markdown}, {len(written.csv)} CSV tables, {len(written.plots)} plots")
    return 0


def _summary(args) -> int:
    from harness.records import store
    from harness.report.summary import summarize

    records = store.timing_records(record for _, record in store.iter_records(args.sources))
    print(summarize(records, report=args.report))
    return 0


def _export(args) -> int:
    from harness.io import check_writable_file
    from harness.records import store
    from harness.report import export

    check_writable_file(args.output, "export -o")
    records = [record for _, record in store.iter_records(args.sources)]
    with writing(args.output, kept="nothing exported"):  # written atomically: the old file stays whole
        count = export.write(records, args.output, args.format)
    print(f"wrote {count} rows to {args.output}")
    if count == 0:  # an empty file is not an export: say so and fail, as a check that compared nothing would
        print(
            f"export: {' '.join(map(str, args.sources))} hold no timed rounds and no gate positions "
            "(only skipped or failed points?)",
            file=sys.stderr,
        )
        return 1
    return 0


def _baseline(args) -> int:
    from harness.io import check_writable_dir
    from harness.regression import baseline

    if args.baseline_command == "list":
        for manifest in sorted(Path(args.harness_baselines_dir).glob(f"*/{baseline.MANIFEST}")):
            print(manifest.parent.name)
        return 0
    check_writable_dir(args.harness_baselines_dir, "baseline save --baselines-dir")
    target = baseline.save(args.sources, args.name, Path(args.harness_baselines_dir), replace=args.replace)
    print(f"baseline {args.name!r} saved at {target}")
    return 0


def _records(sources):
    from harness.records.store import iter_records

    return [record for _, record in iter_records(sources)]


def _compare(args) -> int:
    from harness.io import check_writable_file
    from harness.regression import baseline
    from harness.report.compare import comparison, format_table

    if args.csv:
        check_writable_file(args.csv, "compare --csv")
    table = comparison(
        baseline.load(args.base, Path(args.harness_baselines_dir)), _records([args.new]), accepted_differences(args)
    )
    print(format_table(table))
    if args.csv:
        from harness.io import write_bytes_atomic

        with writing(args.csv, kept="the table above is complete; the CSV is not written"):
            write_bytes_atomic(args.csv, table.to_csv(index=False).encode("utf-8"))
    incomparable = table[table["incomparable"].notna()] if "incomparable" in table else table.iloc[0:0]
    for _, row in incomparable.iterrows():
        print(f"INCOMPARABLE {row.scenario}::{row.point_id}: {row.incomparable}", file=sys.stderr)
    if len(incomparable):
        print(
            f"{len(incomparable)} point(s) ran with another fingerprint: their ratios compare different machines or "
            "engines (--accept-difference FIELD,... to accept)",
            file=sys.stderr,
        )
        return EXIT_INCOMPARABLE
    return 0


def _merge(args) -> int:
    from harness.io import check_writable_dir
    from harness.records import store
    from harness.run.shard import merge

    check_writable_dir(args.output, "merge -o")
    merged, conflicts = merge(store.iter_records(args.sources))
    if not merged:
        print(f"ERROR no result records under {', '.join(args.sources)}", file=sys.stderr)
        return 2
    if conflicts:
        print("ERROR conflicting records for the same point (nothing written):", file=sys.stderr)
        for line in conflicts:
            print(f"  {line}", file=sys.stderr)
        return 2
    written: list = []
    with writing(args.output, kept=lambda: f"{len(written)} of {len(merged)} point(s) merged into {args.output}/"):
        for record in merged:
            written.append(store.write(record, args.output))
    statuses = {s: sum(r.status == s for r in merged) for s in STATUSES}
    print(
        f"merged {len(merged)} points into {args.output}/ ({', '.join(f'{n} {s}' for s, n in statuses.items() if n)})"
    )
    return 0


def _regression_check(args) -> int:
    """``harness gate``: the regression check against a baseline (the command keeps its short name)."""
    from harness.cli.regression_options import regression_settings
    from harness.cli.regression_output import save_regression_json
    from harness.regression import baseline
    from harness.regression.check import key
    from harness.regression.entry import Confirmation, run_check

    settings = regression_settings(args)  # every option checked before anything is read
    ci_pages.check(args)
    if args.confirm < 0:
        raise UsageError(f"--confirm: expected a number of launches >= 0, got {args.confirm}")
    confirmation = Confirmation(args.confirm, _relaunch(args.sources)) if args.confirm else None
    base = baseline.load(args.harness_baseline, settings.baselines_dir)
    current = _records(args.sources)
    scope = {key(r) for r in current} if args.present_only else None
    result = run_check(settings, base, current, scope=scope, confirmation=confirmation)
    print("\n".join(regression_report(result)))
    if settings.json_path:
        save_regression_json(settings.json_path, result)
    from harness.report.markdown_summary import from_regression

    ci_pages.write(args, from_regression(result, current))
    return result.exit_code


def _relaunch(sources):
    """``Runner.relaunch`` with ``harness run``'s default options, writing into the one results directory."""
    import argparse

    from harness.cli.options import add_run_options, runner_from

    if len(sources) != 1 or not Path(sources[0]).is_dir():
        raise UsageError(
            f"--confirm: expected NEW to be one results directory (reruns are written there), got {' '.join(sources)}"
        )
    defaults = argparse.ArgumentParser(add_help=False)
    add_run_options(defaults.add_argument)
    options = defaults.parse_args([])
    options.harness_results = sources[0]
    relauncher = runner_from(options, log=lambda message: print(message, file=sys.stderr))
    return lambda records, launches: relauncher.relaunch(records, launches=launches)


HANDLERS = {
    "report": _report,
    "summary": _summary,
    "export": _export,
    "baseline": _baseline,
    "compare": _compare,
    "merge": _merge,
    "gate": _regression_check,
}
