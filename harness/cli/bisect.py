"""``harness bisect`` and its hidden step ``harness bisect-step WORK`` (what ``git bisect run`` calls, read
before the parser so ``--help`` does not list it); the logic is ``harness.regression.bisect``."""

from __future__ import annotations

import tempfile
from pathlib import Path

STEP = "bisect-step"  # harness bisect-step WORK: what git bisect run calls at each commit


def add_parsers(commands) -> None:
    from harness.regression.bisect import DEFAULT_LAUNCHES
    from harness.regression.thresholds import DEFAULT_THRESHOLDS

    bisect = commands.add_parser(
        "bisect",
        help="find the commit that changed a point's figures: git bisect run with the regression check's "
        "verdict (DIFFERENT bad, SAME good, UNKNOWN more launches, then skip)",
    )
    bisect.add_argument(
        "scenario", metavar="SCENARIO", help="scenario YAML file (inside the repository: as checked out)"
    )
    bisect.add_argument("--good", required=True, metavar="COMMIT", help="a commit with the old figures")
    bisect.add_argument("--bad", required=True, metavar="COMMIT", help="a commit with the new figures")
    bisect.add_argument("--build", required=True, metavar="CMD", help="shell command that builds each commit")
    bisect.add_argument("-k", dest="select", action="append", metavar="EXPRESSION", help="the point(s) to run")
    bisect.add_argument("--repo", default=".", metavar="DIR", help="the git repository (default: here)")
    bisect.add_argument(
        "--launches",
        type=int,
        default=DEFAULT_LAUNCHES,
        metavar="N",
        help=f"launches a side (default {DEFAULT_LAUNCHES})",
    )
    shown = DEFAULT_THRESHOLDS.replace("%", "%%")  # argparse formats help with %
    bisect.add_argument(
        "--max-regression",
        default=DEFAULT_THRESHOLDS,
        metavar="METRIC=PCT,...",
        help=f"the metrics judged and their limits, as harness gate takes them (default {shown})",
    )
    bisect.add_argument(
        "--reference-dir", default=None, metavar="DIR", help="stored gate references, shared by every step"
    )
    bisect.add_argument(
        "--work", default=None, metavar="DIR", help="where each step's records go (default: a temporary one)"
    )


def run(args) -> int:
    from harness.errors import UsageError
    from harness.regression.bisect import BisectPlan, bisect, harness_command
    from harness.regression.thresholds import parse_thresholds

    if args.launches < 2:
        raise UsageError(f"--launches: the verdict needs at least 2 launches a side, got {args.launches}")
    parse_thresholds(args.max_regression)  # a bad value fails here, not in every step
    repo = Path(args.repo).resolve()
    work = Path(args.work).resolve() if args.work else Path(tempfile.mkdtemp(prefix="harness-bisect-"))
    plan = BisectPlan(
        repo=str(repo),
        good=args.good,
        bad=args.bad,
        scenario=str(Path(args.scenario).resolve()),
        build=args.build,
        work=str(work),
        select=list(args.select or []),
        launches=args.launches,
        reference_dir=str(Path(args.reference_dir).resolve()) if args.reference_dir else str(work / "references"),
        thresholds=args.max_regression,
    )
    result = bisect(plan, [*harness_command(), STEP])
    if result.first_bad is None:
        print(result.log.rstrip())
        print(
            f"no single first bad commit between {args.good} and {args.bad} (skipped commits above); records in {work}"
        )
        return 3
    print(f"first bad commit: {result.first_bad} {result.subject}")
    for line in result.verdict.lines if result.verdict else []:
        print(f"  {line}")
    print(f"records of every step under {work}")
    return 0


def step(argv: list[str]) -> int:
    """``harness bisect-step WORK``: one commit's verdict as git bisect run's exit code (125 on an error)."""
    import sys

    from harness.errors import HarnessError
    from harness.regression.bisect import SKIP
    from harness.regression.bisect import step as run_step

    if len(argv) != 1:
        print("ERROR usage: harness bisect-step WORK (git bisect run calls it; see harness bisect)", file=sys.stderr)
        return SKIP
    try:
        return run_step(argv[0])
    except HarnessError as exc:  # never git bisect's "bad": the commit is skipped and the error shown
        print(f"ERROR {exc}", file=sys.stderr)
        return SKIP
