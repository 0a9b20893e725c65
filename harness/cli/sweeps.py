"""What the commands over scenario files share (run, verify, check, reference): loading the files, ending a
sweep on a signal with its records so far, and the run's verdict over the points it ran."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional, Sequence

from harness.cli.options import remote_code_error
from harness.run import lifecycle


def load_all(paths: Sequence[str], allow_remote_code: bool = False, max_points: Optional[int] = None):
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


def interruptible(command, results_dir: Optional[Path] = None) -> int:
    """SIGTERM, SIGINT or SIGHUP end a sweep command with its records so far, no process of it left,
    one line on stderr and exit 128 + the signal's number (harness.run.lifecycle)."""
    with lifecycle.interruptible():
        try:
            return command()
        except lifecycle.Interrupted as exc:
            print(lifecycle.summary(exc, results_dir), file=sys.stderr)
            return exc.exit_code


KEEP_HELP = (
    "run only the points EXPRESSION selects: pytest's -k language (words joined by and, or, not, parentheses) "
    "over scenario::id; a word that is a whole point id or a whole dash-separated part of one (f16, cpu, "
    "prompt32) matches exactly, any other word as a case-insensitive substring; several -k: any of them"
)


def point_selector(expressions: Optional[Sequence[str]], scenarios):
    """``(scenario, point) -> kept`` for the ``-k`` values given, None without any (every point)."""
    if not expressions:
        return None
    from harness.scenario.selection import selector
    from harness.scenario.sweep import expand

    keep = selector(expressions, [(s.name, p.id) for s in scenarios for p in expand(s)])
    return lambda scenario, point: keep(scenario.name, point.id)


def sweep_verdict(records, scenarios, require_all: bool):
    """The verdict of a sweep's records (``harness.records.verdict.account``), the points of ``scenarios``
    that ask for ``require_all`` (or every point, with ``--require-all``) required: ``harness run`` and
    ``harness verify`` alike."""
    from harness.records.verdict import account

    return account(records, required=require_all or {s.name for s in scenarios if s.require_all})
