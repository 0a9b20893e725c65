"""What the plugin keeps for a pytest session (``config.stash``) and the regression check it runs at the
session's end (``--harness-baseline NAME``), with the same verdicts, exit statuses and ``--json`` file as
``harness gate``."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import pytest

from harness.run.runner import Runner

if TYPE_CHECKING:
    from harness.records.record import Record
    from harness.regression.thresholds import Threshold
    from harness.run.shard import Shard


@dataclass
class SessionRecords:
    """What the regression check needs at the end of a session: the records made, the points selected."""

    thresholds: list[Threshold]
    shard: Optional[Shard] = None
    records: list[Record] = field(default_factory=list)
    scenarios: set[str] = field(default_factory=set)
    deselected: set[tuple[str, str]] = field(default_factory=set)
    regression_lines: list[str] = field(default_factory=list)
    not_judged_lines: list[str] = field(default_factory=list)  # points whose gate is NOT JUDGED, and the closing line
    names: dict[str, str] = field(default_factory=dict)  # scenario name -> its file, across the session's files


RUNNER = pytest.StashKey[Runner]()
SESSION = pytest.StashKey[SessionRecords]()
HELD = pytest.StashKey[contextlib.ExitStack]()  # the results directory's lock, while the session runs points

PREFIX = "harness-"  # the plugin's options are the command line's with this prefix (harness.cli.options)


def check_options(options) -> SessionRecords:
    """Every option the session's end reads, parsed before anything runs: a bad one is a UsageError."""
    from harness.cli.regression_options import accepted_differences, gate_json_path, regression_fdr
    from harness.errors import UsageError
    from harness.regression.thresholds import parse_thresholds
    from harness.run.shard import parse_shard

    thresholds = parse_thresholds(options.harness_max_regression)
    regression_fdr(options, PREFIX)
    accepted_differences(options, PREFIX)
    if options.harness_gate_json and not options.harness_baseline:
        raise UsageError(
            f"--{PREFIX}gate-json {options.harness_gate_json}: needs --{PREFIX}baseline NAME (the gate it reports)"
        )
    gate_json_path(options, PREFIX)
    shard = parse_shard(options.harness_shard) if options.harness_shard else None
    return SessionRecords(thresholds, shard)


def regression_gate(state: SessionRecords, options) -> int:
    """``--harness-baseline NAME``: check the session's records against the baseline, fill the session's
    report lines and write ``--harness-gate-json``. Returns the exit status ``harness gate`` would give: 0
    passed, 1 failed, 3 incomparable, 4 inconclusive under ``--harness-fail-on-unknown``. An unreadable,
    empty or unrelated baseline raises (HarnessError, ValueError, FileNotFoundError): never a pass."""
    from harness.cli.regression_options import accepted_differences, regression_fdr
    from harness.cli.regression_output import regression_report, save_regression_json
    from harness.regression import baseline
    from harness.regression.check import check, key

    name = options.harness_baseline
    base = baseline.load(name, Path(options.harness_baselines_dir))
    # Only points this session could have run: its scenarios, minus what -k/-m deselected.
    scope = {key(r) for r in base if r.scenario in state.scenarios} - state.deselected
    outcome = check(
        base,
        state.records,
        state.thresholds,
        scope=scope,
        fdr=regression_fdr(options, PREFIX),
        accept=accepted_differences(options, PREFIX),
    )
    state.regression_lines = regression_report(outcome, name, fail_on_unknown_flag=f"--{PREFIX}fail-on-unknown")
    code = outcome.exit_status(fail_on_unknown=options.harness_fail_on_unknown)
    if options.harness_gate_json:
        save_regression_json(options.harness_gate_json, outcome, name, code)
    return code
