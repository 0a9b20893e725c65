"""``harness history``'s command line: its subcommands (add, list, show, export, check) and their options;
``harness.cli.history`` runs them."""

from __future__ import annotations

import argparse
import math
import re

from harness.history import DEFAULT_URL


def _percent(text: str) -> float:
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(%?)\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a relative change such as 2% or 0.02")
    return float(match.group(1)) / (100 if match.group(2) else 1)


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:  # nan compares False with everything: say it here
        raise argparse.ArgumentTypeError(f"{text!r}: expected a finite number > 0")
    return value


def add_parser(subparsers) -> argparse.ArgumentParser:
    from harness.history.changepoints import DEFAULT_PENALTY
    from harness.history.series_check import DEFAULT_PERSIST, DEFAULT_SINCE, DEFAULT_THRESHOLD

    history = subparsers.add_parser("history", help="keep every run in a database; trends and change points")
    commands = history.add_subparsers(dest="history_command", metavar="COMMAND", required=True)
    db = argparse.ArgumentParser(add_help=False)
    db.add_argument(
        "--db",
        default=DEFAULT_URL,
        metavar="URL",
        help=f"SQLAlchemy database URL (default {DEFAULT_URL}; "
        "PostgreSQL: postgresql+psycopg://user:password@host/dbname)",
    )
    add = commands.add_parser(
        "add",
        parents=[db],
        help="add result records; each RESULTS argument is one run; adding the same records again stores nothing",
    )
    add.add_argument("results", nargs="+", metavar="RESULTS", help="results directory, record or pytest-benchmark JSON")
    add.add_argument("--commit", default=None, metavar="SHA", help="commit of the run (default: the records' own)")
    commands.add_parser("list", parents=[db], help="list the runs in the history")
    show = commands.add_parser("show", parents=[db], help="one point's series: values, spread, verdicts, change points")
    show.add_argument("point", metavar="SCENARIO::POINT")
    show.add_argument("--metric", default=None, help="one metric (short names such as tpot work)")
    export = commands.add_parser(
        "export", parents=[db], help="every stored value as Parquet or CSV (one row per value)"
    )
    export.add_argument("--format", choices=("parquet", "csv"), default=None, help="default: from the file name")
    export.add_argument("-o", "--output", required=True, metavar="FILE")
    check = commands.add_parser(
        "check",
        parents=[db],
        help="change-point detection over every series; exit 1 when "
        "a new change point worsens a metric beyond the threshold",
    )
    check.add_argument(
        "--since",
        type=int,
        default=DEFAULT_SINCE,
        metavar="N",
        help=f"a change is new when its first run after is one of the newest N runs (default {DEFAULT_SINCE})",
    )
    check.add_argument(
        "--threshold",
        type=_percent,
        default=DEFAULT_THRESHOLD,
        metavar="PCT",
        help=f"relative worsening that fails (default {DEFAULT_THRESHOLD:.0%})",
    )
    check.add_argument(
        "--persist",
        type=int,
        default=DEFAULT_PERSIST,
        metavar="N",
        help=f"nights a worsened level must hold to fail (default {DEFAULT_PERSIST}); a worsening step of "
        "fewer nights is reported as SUSPICIOUS and does not fail",
    )
    check.add_argument(
        "--penalty",
        type=_positive,
        default=DEFAULT_PENALTY,
        help="change-point penalty, in noise "
        f"variances per ln(nights) (default {DEFAULT_PENALTY:g}; lower finds smaller steps and more "
        "false alarms)",
    )
    return history
