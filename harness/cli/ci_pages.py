"""The CI pages a command writes besides its output: the Markdown summary (``--markdown FILE``, and always to
``$GITHUB_STEP_SUMMARY`` when GitHub Actions sets it; ``harness.report.markdown_summary``) and the Bencher
Metric Format export (``--bmf FILE``; ``harness.report.bmf``). Options defined once, for the command line and
the pytest plugin (prefix ``harness-``)."""

from __future__ import annotations

import sys
from typing import Optional


def add_markdown_option(add, prefix: str = "") -> None:
    add(
        f"--{prefix}markdown",
        dest="harness_markdown",
        metavar="FILE",
        default=None,
        help="also write a Markdown summary (verdict, then what changed, what is unknown, what was skipped) to "
        "FILE, e.g. for a pull-request comment; with $GITHUB_STEP_SUMMARY set it is appended there too",
    )


def add_bmf_option(add, prefix: str = "") -> None:
    add(
        f"--{prefix}bmf",
        dest="harness_bmf",
        metavar="FILE",
        default=None,
        help="also write the points' figures in Bencher Metric Format (JSON: value with its 95%% interval's "
        "lower_value and upper_value) to FILE, for `bencher run --adapter json --file FILE`",
    )


def check(options, prefix: str = "") -> None:
    """The files asked for are writable, before anything runs: a UsageError naming the option."""
    from harness.io import check_writable_file

    for name in ("markdown", "bmf"):
        value = getattr(options, f"harness_{name}", None)
        if value:
            check_writable_file(value, f"--{prefix}{name}")


def write(options, summary, records=None, log=lambda text: print(text, file=sys.stderr)) -> None:
    """Write the summary where asked (``--markdown``, ``$GITHUB_STEP_SUMMARY``) and, given ``records``, the
    BMF file (``--bmf``); a line for each file written."""
    from harness.errors import writing
    from harness.report import markdown_summary

    path: Optional[str] = getattr(options, "harness_markdown", None)
    with writing(path or "$GITHUB_STEP_SUMMARY", kept="the summary above is complete; the Markdown page is not"):
        for written in markdown_summary.write(summary, path):
            log(f"Markdown summary written to {written}")
    bmf_path = getattr(options, "harness_bmf", None)
    if bmf_path and records is not None:
        from harness.report import bmf

        with writing(bmf_path, kept="the records are written; the BMF file is not"):
            count = bmf.write(records, bmf_path)
        log(f"Bencher Metric Format: {count} benchmark(s) written to {bmf_path}")
