"""The ``harness`` command line. ``main(argv)`` returns the exit code: 0 ok, 1 failures, 2 bad input, 4 (with
``--fail-on-unknown``) nothing failed but something was not decided."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from harness import __version__
from harness.cli import analysis as cli_analysis
from harness.cli import bisect as bisect_cli
from harness.cli import ci_pages, history_options
from harness.cli import history as history_cli
from harness.cli import output as cli_output
from harness.cli import plan as plan_cli
from harness.cli import results as cli_results
from harness.cli import verify as verify_cli
from harness.cli.ci_pages import add_bmf_option, add_markdown_option
from harness.cli.options import (
    add_budget_option,
    add_cache_option,
    add_gate_prompts_option,
    add_plan_options,
    add_require_option,
    add_run_options,
    runner_from,
)
from harness.cli.regression_options import add_unknown_option
from harness.cli.sweeps import KEEP_HELP, interruptible, load_all, point_selector, sweep_verdict
from harness.errors import HarnessError, WriteFailed, writing


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harness", description="LLM inference benchmarking and correctness harness")
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run the sweep points of scenario files")
    run.add_argument("scenarios", nargs="+", metavar="SCENARIO", help="scenario YAML files")
    add_run_options(run.add_argument)
    add_unknown_option(run.add_argument)
    add_require_option(run.add_argument)
    add_budget_option(run.add_argument)
    add_gate_prompts_option(run.add_argument)
    run.add_argument("-k", dest="select", action="append", metavar="EXPRESSION", help=KEEP_HELP)
    run.add_argument("--no-progress", action="store_true", help="no progress bar (nor progress lines in a log)")
    add_markdown_option(run.add_argument)
    add_bmf_option(run.add_argument)
    run.add_argument(
        "--resume",
        action="store_true",
        help="keep points whose record is ok or skipped with the same configuration; run the rest",
    )
    run.add_argument(
        "--history",
        metavar="URL",
        default=None,
        help="also add this run's records to a results history (a SQLAlchemy URL, e.g. "
        "sqlite:///results/history.sqlite; see harness history)",
    )

    verify_cli.add_parser(commands)

    commands.add_parser("devices", help="list adapters, their devices here, and why others are unavailable")

    check = commands.add_parser(
        "check", help="validate scenario files and list their points (and which will skip or fail); loads no weights"
    )
    check.add_argument("scenarios", nargs="+", metavar="SCENARIO")
    add_plan_options(check.add_argument)
    add_cache_option(check.add_argument)  # where the converter's architecture lookups are kept

    reference = commands.add_parser(
        "reference",
        help="compute the gate references of scenario files (no device) so runners reuse them via --reference-dir",
    )
    reference.add_argument("scenarios", nargs="+", metavar="SCENARIO")
    add_run_options(reference.add_argument)

    cli_analysis.add_parsers(commands)
    cli_results.add_parsers(commands)
    history_options.add_parser(commands)
    bisect_cli.add_parsers(commands)
    plan_cli.add_parser(commands)

    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["lm-eval"]:  # lm-eval's own command line, untouched by our parser
        return cli_analysis.lm_eval(argv[1:])
    if argv[:1] == [bisect_cli.STEP]:  # what git bisect run calls, hidden from --help
        return bisect_cli.step(argv[1:])
    args = _parser().parse_args(argv)
    try:
        commands = {
            "run": _run,
            "verify": verify_cli.run,
            "devices": _devices,
            "check": _check,
            "reference": _reference,
            "routing": cli_analysis.routing,
            "history": history_cli.run,
            "bisect": bisect_cli.run,
            "plan": plan_cli.run,
            **cli_results.HANDLERS,
        }
        return commands[args.command](args)
    except HarnessError as exc:
        print(f"ERROR {exc}", file=sys.stderr)
        return exc.exit_code
    except (FileNotFoundError, ValueError) as exc:  # unreadable or missing record files, named in the message
        if args.command in ("run", "verify"):
            raise
        print(f"ERROR {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _check(args) -> int:
    from harness.errors import ScenarioErrors
    from harness.run.preflight import refusal, will_fail, will_skip
    from harness.scenario.sweep import expand

    scenarios = load_all(
        args.scenarios, allow_remote_code=True, max_points=args.harness_max_points
    )  # runs no model code
    refused = [error for scenario in scenarios if (error := refusal(scenario))]
    if refused:
        raise ScenarioErrors(refused)
    cache = args.harness_cache_dir and Path(args.harness_cache_dir)
    for scenario in scenarios:
        points = expand(scenario)
        skips, failures = will_skip(scenario, points, cache), will_fail(scenario, points, cache)
        for point in points:
            said = f"  will skip: {skips[point.id]}" if point.id in skips else ""
            said = said or (f"  will fail: {failures[point.id]}" if point.id in failures else "")
            print(f"{scenario.name}::{point.id}{said}")  # the spelling every other command uses
    return 0


def _run(args) -> int:
    return interruptible(lambda: _run_sweep(args), Path(args.harness_results))


def _run_sweep(args) -> int:
    scenarios = load_all(args.scenarios, args.harness_trust_remote_code, args.harness_max_points)
    from harness.run import planning

    planning.check_against_models(scenarios, args.harness_cache_dir and Path(args.harness_cache_dir))
    runner = runner_from(args, log=lambda message: print(message, file=sys.stderr))
    ci_pages.check(args)
    select = point_selector(args.select, scenarios)
    shard = None
    if args.harness_shard:
        from harness.run.shard import parse_shard

        shard = parse_shard(args.harness_shard)
        if shard.source:
            print(f"shard {shard} from {shard.source}", file=sys.stderr)
    from harness.io import results_lock

    with results_lock(args.harness_results):
        try:
            records = runner.run(
                scenarios, progress=not args.no_progress, select=select, resume=args.resume, shard=shard
            )
        except WriteFailed as exc:  # the summary of what was recorded, one line, and how to finish
            if exc.records:
                cli_output.run_table(exc.records)
            again = " ".join(["harness run", *args.scenarios, "--results", str(args.harness_results), "--resume"])
            print(f"ERROR {exc}; fix it, then complete the set with: {again}", file=sys.stderr)
            return exc.exit_code
    if not records and shard is not None:
        print(f"shard {shard}: no points fall to this shard")
        return 0
    if not records:
        print(f"ERROR no point matches -k {' -k '.join(map(repr, args.select or []))}", file=sys.stderr)
        return 2
    cli_output.run_table(records)
    print(cli_output.time_split_table(records))
    if unjudged := cli_output.not_judged_line(records):
        print(unjudged)
    verdict = sweep_verdict(records, scenarios, args.harness_require_all)
    print("\n".join(verdict.lines()))
    print(f"records written under {args.harness_results}/")
    from harness.report.markdown_summary import from_verdict

    ci_pages.write(args, from_verdict(verdict, "harness run"), records)
    if args.history:
        from harness.history import add_records

        again = f"harness history add {args.harness_results} --db {args.history}"
        with writing(args.history, kept=f"the records are written; add them with: {again}"):
            added = add_records(records, args.history, source=str(args.harness_results))
        print(f"history: run #{added.run_id}" + ("" if added.new else " (already stored)") + f" in {args.history}")
    if exit_line := verdict.exit_line(args.harness_fail_on_unknown):
        print(exit_line)
    return verdict.exit_code(args.harness_fail_on_unknown)


def _reference(args) -> int:
    scenarios = [
        s
        for s in load_all(args.scenarios, args.harness_trust_remote_code, args.harness_max_points)
        if s.gate is not None
    ]
    if not scenarios:
        print("ERROR none of these scenarios has a gate section", file=sys.stderr)
        return 2
    runner = runner_from(args, log=print)
    for scenario in scenarios:
        runner.prepare_reference(scenario)
    print(f"references under {runner.settings.reference_dir}/")
    return 0


def _devices(args) -> int:
    from harness.adapters import registry

    for name in registry.names():
        try:
            cls = registry.get(name)
        except HarnessError as exc:
            print(f"{name:<12} error: {exc}")
            continue
        for device, reason in cls.device_status().items():
            state = "available" if reason is None else f"unavailable: {reason}"
            print(f"{name + ':' + device:<24} {state}")
    return 0
