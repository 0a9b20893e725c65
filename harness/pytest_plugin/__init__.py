"""pytest plugin: every scenario YAML becomes one test per sweep point, timed with pytest-benchmark.

Hooks only, here: the items (which files are scenarios, one test per point, a record as pytest's outcome)
live in ``items``, the session's state and its end-of-session regression check in ``session``; loading,
running and recording in ``harness.scenario.schema``, ``harness.run.runner`` and ``harness.records.store``.
``pytest scenarios/ --benchmark-json out.json`` writes one benchmark per point whose stats are seconds per
generated token and whose ``extra_info`` holds every harness metric.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import pytest

from harness.cli.ci_pages import add_bmf_option, add_markdown_option
from harness.cli.options import (
    add_budget_option,
    add_gate_prompts_option,
    add_require_option,
    add_run_options,
    check_outputs,
    runner_from,
)
from harness.cli.regression_options import add_baseline_options, add_regression_options
from harness.pytest_plugin.items import NIGHTLY, NIGHTLY_HELP, PointItem, ScenarioFile, is_scenario
from harness.pytest_plugin.session import (
    HELD,
    PREFIX,
    RUNNER,
    SESSION,
    check_options,
    phase_lines,
    regression_check,
    write_ci_pages,
)
from harness.scenario.markers import marker_name


def pytest_addoption(parser):
    group = parser.getgroup("harness", "LLM inference harness")
    add_run_options(group.addoption, prefix=PREFIX)
    add_require_option(group.addoption, prefix=PREFIX)
    add_budget_option(group.addoption, prefix=PREFIX)
    add_gate_prompts_option(group.addoption, prefix=PREFIX)
    add_regression_options(group.addoption, prefix=PREFIX, required=False)
    add_baseline_options(group.addoption, prefix=PREFIX)
    add_markdown_option(group.addoption, prefix=PREFIX)
    add_bmf_option(group.addoption, prefix=PREFIX)
    parser.addini(
        "harness_scenarios",
        type="paths",
        default=[],
        help="scenario files, folders or globs (relative to the ini file) that pytest collects "
        "without being named on the command line",
    )


def pytest_configure(config):
    from harness.errors import UsageError

    def warn(message: str) -> None:  # an old option spelling: one line in pytest's warnings summary
        config.issue_config_time_warning(pytest.PytestDeprecationWarning(message), stacklevel=2)

    try:  # the regression check's settings, the shard and the CI pages' files are checked before anything runs
        config.stash[SESSION] = check_options(config.option, warn)
        from harness.cli import ci_pages

        ci_pages.check(config.option, prefix=PREFIX)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[RUNNER] = runner_from(config.option, check=False)  # outputs: pytest_collection_finish
    from harness.adapters import registry

    for name in registry.names():
        config.addinivalue_line("markers", f"{marker_name(name)}: points run by the {name} adapter")
    config.addinivalue_line("markers", f"{NIGHTLY}: {NIGHTLY_HELP}")


def pytest_sessionstart(session):
    """Sweep what killed runs left in the results directory. Interruptions need nothing more here: each
    point's worker group is killed by ``harness.run.launchers.worker_process`` on KeyboardInterrupt, or by the worker's
    reaper when pytest itself is terminated (``harness.run.lifecycle``)."""
    from harness.run import lifecycle

    if RUNNER in session.config.stash:
        lifecycle.sweep_stale(session.config.stash[RUNNER].settings.results_dir)


def pytest_collect_file(file_path: Path, parent):
    if file_path.suffix in (".yaml", ".yml") and is_scenario(file_path, parent.config):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


def _wants_several_launches(runner, scenario) -> bool:
    return runner.planned_launches(scenario) > 1 or scenario.measurement.target_rel_ci is not None


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    """With several launches, time the selected points as ``harness run`` does — launch k of every point
    before launch k+1 of any, so the machine's drift spreads over all points — before the items report
    their records one by one. With one launch each item runs its own point, as it comes."""
    items = [item for item in session.items if isinstance(item, PointItem)]
    if not items or session.config.option.collectonly or RUNNER not in session.config.stash:
        return None
    runner = session.config.stash[RUNNER]
    if not any(_wants_several_launches(runner, item.harness_point[0]) for item in items):
        return None
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"harness: timing {len(items)} point(s), launches interleaved across them")
    pairs = [item.harness_point for item in items]
    for item, record in zip(items, runner.run_pairs(pairs, progress=False, lines=phase_lines(session.config))):
        item.harness_record = record
    return None  # pytest's own loop now runs the items, which report the records


@pytest.hookimpl(trylast=True)  # after -k/-m: shard what this runner selected, as `harness run -k` does
def pytest_collection_modifyitems(session, config, items):
    """``--harness-shard I/N``: keep this machine's share of the points (same split as ``harness run``)."""
    shard = config.stash[SESSION].shard
    if shard is None:
        return
    from harness.run.shard import select

    points = [item for item in items if isinstance(item, PointItem)]
    kept = {id(pair[1]) for pair in select([item.harness_point for item in points], shard)}
    dropped = [item for item in points if id(item.harness_point[1]) not in kept]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in dropped]


def pytest_collection_finish(session):
    """Once points are collected, before any runs: the output directories are checked, the results
    directory must have room for the points' records, and the session holds it as ``harness run`` does
    (``harness.io.results_lock``) until it ends. A session that runs no point (an installed plugin in
    another project, ``--collect-only``) needs none of it."""
    points = sum(isinstance(item, PointItem) for item in session.items)
    config = session.config
    if not points or config.option.collectonly or RUNNER not in config.stash:
        return
    from harness.errors import HarnessError, WriteFailed
    from harness.io import results_lock
    from harness.records.store import check_free_space

    results = config.stash[RUNNER].settings.results_dir
    try:
        check_outputs(config.option, prefix=PREFIX)
        check_free_space(results, points, "--harness-results")
        held = contextlib.ExitStack()
        held.enter_context(results_lock(results, "--harness-results"))
        config.stash[HELD] = held
    except WriteFailed as exc:  # no room for the records, or the lock cannot be written: 2, as `harness run`
        sys.stderr.write(f"ERROR: {exc}\n")
        pytest.exit("harness: no point ran (the ERROR line says why)", returncode=exc.exit_code)
    except HarnessError as exc:  # pytest's usage error (4)
        raise pytest.UsageError(str(exc)) from None


def pytest_deselected(items):
    if items:
        session = items[0].config.stash[SESSION]
        session.deselected |= {item.harness_key for item in items if isinstance(item, PointItem)}


def pytest_sessionfinish(session, exitstatus):
    """The session's end: the check against ``--harness-baseline`` (``_session_checks``), then the CI pages
    (``--harness-markdown``, ``$GITHUB_STEP_SUMMARY``, ``--harness-bmf``) of a session that ran points."""
    config = session.config
    if RUNNER in config.stash:
        config.stash[RUNNER].close()  # the isolated worker kept for a next point
    if HELD in config.stash:
        config.stash[HELD].close()  # the results directory is free for the next run
    if SESSION not in config.stash:
        return
    from harness.cli.output import not_judged_lines
    from harness.cli.regression_options import unknown_exit
    from harness.records.verdict import account

    state = config.stash[SESSION]
    state.not_judged_lines = not_judged_lines(state.records)
    if state.records:  # the run's account, as `harness run` prints it: skips by reason, known failures fixed
        required = config.option.harness_require_all or state.required
        state.verdict_lines = account(state.records, required=required).lines()
    if session.exitstatus == pytest.ExitCode.OK:  # 4 (as `harness run`) when a point is not judged
        session.exitstatus = unknown_exit(state.records, config.option.harness_fail_on_unknown)
    try:
        _session_checks(session, state)
    finally:
        if state.records or state.regression_result is not None:
            write_ci_pages(config, state)


def _session_checks(session, state) -> None:
    """``--harness-baseline NAME``: check this session's records against a saved baseline, as ``harness
    gate`` does (``session.regression_check``). A session whose tests passed exits with the check's status."""
    if not state.regression.baseline:
        return
    from harness.errors import EXIT_INCONCLUSIVE, HarnessError

    try:
        code = regression_check(state)
    except (HarnessError, ValueError, FileNotFoundError) as exc:  # never a pass
        state.regression_lines = [*state.regression_lines, f"ERROR {exc}"]
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        return
    if code and session.exitstatus in (pytest.ExitCode.OK, EXIT_INCONCLUSIVE):  # a failure outranks "not judged"
        session.exitstatus = code  # 1 a point failed; 3 incomparable; 4 inconclusive (--harness-fail-on-unknown)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    state = config.stash.get(SESSION, None)
    if state is not None and state.verdict_lines:
        terminalreporter.section("harness verdict")
        for line in state.verdict_lines:
            terminalreporter.line(
                line, red=line.startswith(("FAILED", "REQUIRED", "NOT COMPLETE")), green=line.startswith("FIXED")
            )
    if state is not None and state.not_judged_lines:
        terminalreporter.section("harness correctness gate")
        for line in state.not_judged_lines:
            terminalreporter.line(line, yellow=True)
    if state is not None and state.regression_lines:
        terminalreporter.section("harness regression check")
        for line in state.regression_lines:
            terminalreporter.line(line, red=line.startswith(("FAIL", "ERROR")), green="PASS" in line)
    if state is not None and state.pages_written:
        terminalreporter.section("harness CI pages")
        for line in state.pages_written:
            terminalreporter.line(line, red=line.startswith("ERROR"))
