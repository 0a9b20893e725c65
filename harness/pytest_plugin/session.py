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
    from harness.regression.entry import RegressionResult
    from harness.regression.settings import RegressionSettings
    from harness.run.progress import PhaseLines
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
    regression_result: Optional[RegressionResult] = None  # --harness-baseline: the check's result
    pages_written: list[str] = field(default_factory=list)  # the CI pages' lines for the terminal summary


RUNNER = pytest.StashKey[Runner]()
SESSION = pytest.StashKey[SessionRecords]()
HELD = pytest.StashKey[contextlib.ExitStack]()  # the results directory's lock, while the session runs points

PHASES = pytest.StashKey["PhaseLines"]()  # the points' phases as lines on pytest's terminal


def phase_lines(config) -> Optional["PhaseLines"]:
    """The session's progress lines (``harness.run.progress``) on pytest's terminal, written as pytest's live
    logging writes, around the output capture: a point's phases (converting, gate reference, gate prompts,
    launch k/N) show while it runs, never silent for minutes. None without a terminal reporter."""
    if PHASES not in config.stash:
        from harness.run.progress import PhaseLines

        reporter = config.pluginmanager.get_plugin("terminalreporter")
        capture = config.pluginmanager.get_plugin("capturemanager")
        if reporter is None:
            return None

        def write(text: str) -> None:
            with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
                reporter.ensure_newline()
                reporter.write_line(f"harness: {text}")

        config.stash[PHASES] = PhaseLines(write)
    return config.stash[PHASES]


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
    state.regression_result = result
    state.regression_lines = regression_report(result, fail_on_unknown_flag=f"--{PREFIX}fail-on-unknown")
    if settings.json_path:
        save_regression_json(settings.json_path, result)
    return result.exit_code


def write_ci_pages(config, state: SessionRecords) -> None:
    """``--harness-markdown`` / ``$GITHUB_STEP_SUMMARY`` and ``--harness-bmf``: the session's CI pages, as
    ``harness run`` (no baseline) or ``harness gate`` (``--harness-baseline``) write them."""
    from harness.cli import ci_pages
    from harness.errors import HarnessError
    from harness.report.markdown_summary import from_records, from_regression

    if state.regression_result is not None:
        summary = from_regression(state.regression_result, state.records)
    else:
        summary = from_records(state.records, "pytest", required=config.option.harness_require_all or state.required)
    try:
        ci_pages.write(config.option, summary, state.records, log=state.pages_written.append)
    except HarnessError as exc:  # the test outcomes stand; the page that could not be written says why
        state.pages_written.append(f"ERROR {exc}")
