"""``harness verify``: only the correctness gate of scenario files' points, one verdict line each, then the run's
verdict (``harness.records.verdict``, as ``harness run`` prints it): exit 1 on any failure not listed as known,
a strict known failure that passes, or a skip under ``--require-all``; 4 on a point NOT JUDGED with
``--fail-on-unknown``; a non-zero exit ends with its ``exit N: ...`` line."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

from harness.cli import output as cli_output
from harness.cli.options import VERIFY_RESULTS_HELP, add_require_option, add_run_options, runner_from
from harness.cli.regression_options import add_unknown_option
from harness.cli.sweeps import KEEP_HELP, interruptible, load_all, point_selector, sweep_verdict
from harness.errors import HarnessError
from harness.run import lifecycle


def add_parser(commands) -> None:
    verify = commands.add_parser(
        "verify",
        help="run only the correctness gate of scenario files; exit 1 on any failure (or a skip, with "
        "--require-all), 4 on a point NOT JUDGED with --fail-on-unknown",
    )
    verify.add_argument("scenarios", nargs="+", metavar="SCENARIO")
    add_run_options(verify.add_argument, results_help=VERIFY_RESULTS_HELP)
    add_unknown_option(verify.add_argument)
    add_require_option(verify.add_argument)
    verify.add_argument(
        "--prompts",
        default=None,
        metavar="ci|all|N",
        help="gate prompts: ci (1 plain + 1 chat), all (8 + 8) or a count (default: the scenario's)",
    )
    verify.add_argument("-k", dest="select", action="append", metavar="EXPRESSION", help=KEEP_HELP)


def _parse_prompts(value: Optional[str]):
    if value is None or value in ("ci", "all"):
        return value
    if value.isdigit() and int(value) > 0:
        return int(value)
    raise HarnessError(f"--prompts: expected ci, all or a positive count, got {value!r}")


def run(args) -> int:
    return interruptible(lambda: _verify_all(args))  # no results_dir: verify has no --resume to suggest


def _verify_all(args) -> int:
    scenarios = load_all(args.scenarios, args.harness_trust_remote_code, args.harness_max_points)
    without = [s.path for s in scenarios if s.gate is None]
    if without:
        print(f"ERROR no gate section in: {', '.join(map(str, without))}", file=sys.stderr)
        return 2
    from harness.run import planning

    planning.check_against_models(scenarios, args.harness_cache_dir and Path(args.harness_cache_dir))
    runner = runner_from(
        args,
        correctness_only=True,
        gate_prompts=_parse_prompts(args.prompts),
        # Gate-only records (<point id>.verify.json) with --results; none without it (references still stored).
        results_dir=Path(args.harness_results) if args.harness_results else None,
        log=lambda message: print(message),
    )
    if runner.settings.results_dir is None:
        return _gate_points(runner, scenarios, args)
    from harness.io import results_lock

    with results_lock(runner.settings.results_dir):  # not while a `harness run` writes there
        return _gate_points(runner, scenarios, args)


def _gate_points(runner, scenarios, args) -> int:
    """Gate every point (the ``-k`` expressions in ``args.select`` select), one line each, then the run's
    verdict and, on a non-zero exit, the line that says why."""
    from harness.scenario.sweep import expand

    select = point_selector(args.select, scenarios)

    ran = []
    total, done = sum(1 for s in scenarios for p in expand(s) if select is None or select(s, p)), 0
    for scenario in scenarios:
        try:
            records = runner.run([scenario], progress=False, select=select)
        except lifecycle.Interrupted as exc:
            exc.done, exc.total = done + (exc.done or 0), total  # counted over every scenario
            raise
        done += len(records)
        ran += records
        for record in records:
            name = f"{record.scenario}::{record.point_id}"
            if record.status != "ok":
                print(f"{record.status.upper():<6} {name}: {record.reason}")
                continue
            print(cli_output.verdict_line(name, record.correctness))
            if record.correctness and record.correctness.report:
                print(record.correctness.report)
    if runner.settings.results_dir is not None and done:
        print(f"gate-only records written under {runner.settings.results_dir}/ (<scenario>/<point id>.verify.json)")
    if unjudged := cli_output.not_judged_line(ran):
        print(unjudged)
    verdict = sweep_verdict(ran, scenarios, args.harness_require_all)
    print("\n".join(verdict.lines()))
    if exit_line := verdict.exit_line(args.harness_fail_on_unknown):
        print(exit_line)
    return verdict.exit_code(args.harness_fail_on_unknown)
