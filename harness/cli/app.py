"""The ``harness`` command line. ``main(argv)`` returns the exit code: 0 ok, 1 failures, 2 bad input, 4 (with
``--fail-on-unknown``) nothing failed but something was not decided."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from harness import __version__
from harness.cli import analysis as cli_analysis
from harness.cli import history as history_cli
from harness.cli import output as cli_output
from harness.cli import results as cli_results
from harness.cli.options import (
    VERIFY_RESULTS_HELP,
    add_plan_options,
    add_run_options,
    add_unknown_option,
    remote_code_error,
    runner_from,
    unknown_exit,
)
from harness.errors import HarnessError, WriteFailed, writing
from harness.run import lifecycle


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harness", description="LLM inference benchmarking and correctness harness")
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run the sweep points of scenario files")
    run.add_argument("scenarios", nargs="+", metavar="SCENARIO", help="scenario YAML files")
    add_run_options(run.add_argument)
    add_unknown_option(run.add_argument)
    run.add_argument("-k", dest="select", metavar="TEXT", help="run only points whose id contains TEXT")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
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

    verify = commands.add_parser(
        "verify",
        help="run only the correctness gate of scenario files; exit 1 on any failure, 4 on a point NOT JUDGED "
        "with --fail-on-unknown",
    )
    verify.add_argument("scenarios", nargs="+", metavar="SCENARIO")
    add_run_options(verify.add_argument, results_help=VERIFY_RESULTS_HELP)
    add_unknown_option(verify.add_argument)
    verify.add_argument(
        "--prompts",
        default=None,
        metavar="ci|all|N",
        help="gate prompts: ci (1 plain + 1 chat), all (8 + 8) or a count (default: the scenario's)",
    )
    verify.add_argument("-k", dest="select", metavar="TEXT", help="only points whose id contains TEXT")

    commands.add_parser("devices", help="list adapters, their devices here, and why others are unavailable")

    check = commands.add_parser("check", help="validate scenario files and list their points; loads nothing")
    check.add_argument("scenarios", nargs="+", metavar="SCENARIO")
    add_plan_options(check.add_argument)

    reference = commands.add_parser(
        "reference",
        help="compute the gate references of scenario files (no device) so runners reuse them via --reference-dir",
    )
    reference.add_argument("scenarios", nargs="+", metavar="SCENARIO")
    add_run_options(reference.add_argument)

    cli_analysis.add_parsers(commands)
    cli_results.add_parsers(commands)
    history_cli.add_parser(commands)

    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["lm-eval"]:  # lm-eval's own command line, untouched by our parser
        return cli_analysis.lm_eval(argv[1:])
    args = _parser().parse_args(argv)
    try:
        commands = {
            "run": _run,
            "verify": _verify,
            "devices": _devices,
            "check": _check,
            "reference": _reference,
            "routing": cli_analysis.routing,
            "history": history_cli.run,
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


def _load_all(paths: Sequence[str], allow_remote_code: bool = False, max_points: Optional[int] = None):
    from harness.errors import ScenarioErrors
    from harness.run import planning
    from harness.scenario.sweep import DEFAULT_MAX_POINTS

    loaded, errors = [], []
    for path in paths:
        try:
            loaded.append(planning.load(path, max_points or DEFAULT_MAX_POINTS))
        except ScenarioErrors as exc:
            errors += exc.errors
            continue
        problem = remote_code_error(loaded[-1], allow_remote_code)
        if problem:
            errors.append(problem)
    if errors:
        raise ScenarioErrors(errors)
    planning.check_unique(loaded)  # one name, one place for records
    return loaded


def _check(args) -> int:
    from harness.scenario.sweep import expand

    for scenario in _load_all(
        args.scenarios,
        allow_remote_code=True,  # check runs nothing
        max_points=args.harness_max_points,
    ):
        for point in expand(scenario):
            print(f"{scenario.path}::{point.id}")
    return 0


def _interruptible(command, results_dir: Optional[Path] = None) -> int:
    """SIGTERM, SIGINT or SIGHUP end a sweep command with its records so far, no process of it left,
    one line on stderr and exit 128 + the signal's number (harness.run.lifecycle)."""
    with lifecycle.interruptible():
        try:
            return command()
        except lifecycle.Interrupted as exc:
            print(lifecycle.summary(exc, results_dir), file=sys.stderr)
            return exc.exit_code


def _run(args) -> int:
    return _interruptible(lambda: _run_sweep(args), Path(args.harness_results))


def _run_sweep(args) -> int:
    scenarios = _load_all(args.scenarios, args.harness_trust_remote_code, args.harness_max_points)
    from harness.run import planning

    planning.check_against_models(scenarios, args.harness_cache_dir and Path(args.harness_cache_dir))
    runner = runner_from(args, log=lambda message: print(message, file=sys.stderr))
    select = (lambda point: args.select in point.id) if args.select else None
    shard = None
    if args.harness_shard:
        from harness.run.shard import parse_shard

        shard = parse_shard(args.harness_shard)
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
        print(f"ERROR no point id contains {args.select!r}", file=sys.stderr)
        return 2
    cli_output.run_table(records)
    print(cli_output.time_split_table(records))
    if unjudged := cli_output.not_judged_line(records):
        print(unjudged)
    print(f"records written under {args.harness_results}/")
    if args.history:
        from harness.history import add_records

        again = f"harness history add {args.harness_results} --db {args.history}"
        with writing(args.history, kept=f"the records are written; add them with: {again}"):
            added = add_records(records, args.history, source=str(args.harness_results))
        print(f"history: run #{added.run_id}" + ("" if added.new else " (already stored)") + f" in {args.history}")
    failed = any(r.status in ("failed", "timeout") or r.verdict_failed for r in records)
    return 1 if failed else unknown_exit(records, args.harness_fail_on_unknown)


def _parse_prompts(value: Optional[str]):
    if value is None or value in ("ci", "all"):
        return value
    if value.isdigit() and int(value) > 0:
        return int(value)
    raise HarnessError(f"--prompts: expected ci, all or a positive count, got {value!r}")


def _verify(args) -> int:
    return _interruptible(lambda: _verify_all(args))  # no results_dir: verify has no --resume to suggest


def _verify_all(args) -> int:
    scenarios = _load_all(args.scenarios, args.harness_trust_remote_code, args.harness_max_points)
    without = [s.path for s in scenarios if s.gate is None]
    if without:
        print(f"ERROR no gate section in: {', '.join(map(str, without))}", file=sys.stderr)
        return 2
    from harness.run import planning

    planning.check_against_models(scenarios, args.harness_cache_dir and Path(args.harness_cache_dir))
    runner = runner_from(
        args, timing=False, gate_prompts=_parse_prompts(args.prompts), log=lambda message: print(message)
    )
    # Gate-only records (<point id>.verify.json) with --results; none without it (references still stored).
    runner.results_dir = Path(args.harness_results) if args.harness_results else None
    if runner.results_dir is None:
        return _gate_points(runner, scenarios, args.select, args.harness_fail_on_unknown)
    from harness.io import results_lock

    with results_lock(runner.results_dir):  # not while a `harness run` writes there
        return _gate_points(runner, scenarios, args.select, args.harness_fail_on_unknown)


def _gate_points(runner, scenarios, text: Optional[str], fail_on_unknown: bool) -> int:
    """Gate every point (whose id contains ``text``), one line each; exit 1 on any failure, 4 on a point
    not judged with ``fail_on_unknown``."""
    select = (lambda point: text in point.id) if text else None
    from harness.scenario.sweep import expand

    failed, ran = False, []
    total, done = sum(1 for s in scenarios for p in expand(s) if select is None or select(p)), 0
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
                failed |= record.status in ("failed", "timeout")
                continue
            print(cli_output.verdict_line(name, record.correctness))
            if record.correctness and record.correctness.report:
                print(record.correctness.report)
            failed |= record.verdict == "fail"
    if runner.results_dir is not None and done:
        print(f"gate-only records written under {runner.results_dir}/ (<scenario>/<point id>.verify.json)")
    if unjudged := cli_output.not_judged_line(ran):
        print(unjudged)
    return 1 if failed else unknown_exit(ran, fail_on_unknown)


def _reference(args) -> int:
    scenarios = [
        s
        for s in _load_all(args.scenarios, args.harness_trust_remote_code, args.harness_max_points)
        if s.gate is not None
    ]
    if not scenarios:
        print("ERROR none of these scenarios has a gate section", file=sys.stderr)
        return 2
    runner = runner_from(args, log=print)
    for scenario in scenarios:
        runner.prepare_reference(scenario)
    print(f"references under {runner.reference_dir}/")
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
