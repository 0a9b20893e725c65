"""What the plugin keeps for a pytest session (``config.stash``) and the regression check it runs at the
session's end (``--harness-baseline NAME``): the same entry, verdicts, exit statuses and JSON file as
``harness gate``."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional

import pytest

from harness.run.runner import Runner

if TYPE_CHECKING:
    from harness.records.record import Record
    from harness.regression.settings import RegressionSettings
    from harness.run.shard import Shard


@dataclass
class SessionRecords:
    """What the regression check needs at the end of a session: its settings, the records made, the points
    selected."""

    regression: RegressionSettings
    shard: Optional[Shard] = None
    records: list[Record] = field(default_factory=list)
    scenarios: set[str] = field(default_factory=set)
    deselected: set[tuple[str, str]] = field(default_factory=set)
    regression_lines: list[str] = field(default_factory=list)
    not_judged_lines: list[str] = field(default_factory=list)  # points whose gate is NOT JUDGED, and the closing line
    verdict_lines: list[str] = field(default_factory=list)  # the run's account (harness.records.verdict)
    required: set[str] = field(default_factory=set)  # scenarios whose every point must run (require_all: true)
    names: dict[str, str] = field(default_factory=dict)  # scenario name -> its file, across the session's files


RUNNER = pytest.StashKey[Runner]()
SESSION = pytest.StashKey[SessionRecords]()
HELD = pytest.StashKey[contextlib.ExitStack]()  # the results directory's lock, while the session runs points

PREFIX = "harness-"  # the plugin's options are the command line's with this prefix (harness.cli.options)


def check_options(options, warn: Callable[[str], None]) -> SessionRecords:
    """Every option the session's end reads, parsed before anything runs: a bad one is a UsageError; an old
    spelling goes to ``warn`` (one line naming the new one)."""
    from harness.cli.regression_options import regression_settings
    from harness.run.shard import parse_shard

    settings = regression_settings(options, PREFIX, warn=warn)
    shard = parse_shard(options.harness_shard) if options.harness_shard else None
    return SessionRecords(settings, shard)


def regression_check(state: SessionRecords) -> int:
    """``--harness-baseline NAME``: check the session's records against the baseline
    (``harness.regression.entry.run_check``, as ``harness gate`` does), fill the session's report lines and
    write ``--harness-regression-json``. Returns the exit status ``harness gate`` would give: 0 passed, 1
    failed, 3 incomparable, 4 inconclusive under ``--harness-fail-on-unknown``. An unreadable, empty or
    unrelated baseline raises (HarnessError, ValueError, FileNotFoundError): never a pass."""
    from harness.cli.regression_output import regression_report, save_regression_json
    from harness.errors import UsageError
    from harness.regression import baseline
    from harness.regression.check import key
    from harness.regression.entry import run_check

    settings = state.regression
    if settings.baseline is None:
        raise UsageError(f"--{PREFIX}baseline: no baseline named, so there is nothing to check against")
    base = baseline.load(settings.baseline, settings.baselines_dir)
    # Only points this session could have run: its scenarios, minus what -k/-m deselected.
    scope = {key(r) for r in base if r.scenario in state.scenarios} - state.deselected
    result = run_check(settings, base, state.records, scope=scope)
    state.regression_lines = regression_report(result, fail_on_unknown_flag=f"--{PREFIX}fail-on-unknown")
    if settings.json_path:
        save_regression_json(settings.json_path, result)
    return result.exit_code
