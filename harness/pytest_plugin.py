"""pytest plugin: every scenario YAML becomes one test per sweep point, timed with pytest-benchmark.

Hooks only: loading, running and recording live in ``harness.scenario.schema``, ``harness.run.runner`` and
``harness.records.store``. ``pytest scenarios/ --benchmark-json out.json`` writes one benchmark per point
whose stats are seconds per generated token and whose ``extra_info`` holds every harness metric.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import pytest

from harness.cli.options import (
    accepted_differences,
    add_baseline_options,
    add_regression_options,
    add_run_options,
    add_unknown_option,
    check_outputs,
    regression_fdr,
    remote_code_error,
    runner_from,
)
from harness.run.runner import Runner

RUNNER = pytest.StashKey[Runner]()
SESSION = pytest.StashKey["SessionRecords"]()
HELD = pytest.StashKey[contextlib.ExitStack]()  # the results directory's lock, while the session runs points


class SessionRecords:
    """What the regression check needs at the end of a session: the records made, the points selected."""

    def __init__(self, thresholds, shard=None):
        self.thresholds = thresholds
        self.shard = shard
        self.records = []
        self.scenarios: set[str] = set()
        self.deselected: set[tuple[str, str]] = set()
        self.regression_lines: list[str] = []
        self.not_judged_lines: list[str] = []  # points whose gate is NOT JUDGED, and the closing line
        self.names: dict[str, str] = {}  # scenario name -> its file, across the session's files


def pytest_addoption(parser):
    group = parser.getgroup("harness", "LLM inference harness")
    add_run_options(group.addoption, prefix="harness-")
    add_regression_options(group.addoption, prefix="harness-", required=False)
    add_baseline_options(group.addoption, prefix="harness-")
    add_unknown_option(group.addoption, prefix="harness-")
    parser.addini(
        "harness_scenarios",
        type="paths",
        default=[],
        help="scenario files, folders or globs (relative to the ini file) that pytest collects "
        "without being named on the command line",
    )


def pytest_configure(config):
    from harness.errors import UsageError
    from harness.regression.check import parse_thresholds
    from harness.run.shard import parse_shard

    try:  # thresholds and the shard are checked before anything runs
        thresholds = parse_thresholds(config.option.harness_max_regression)
        regression_fdr(config.option, "harness-")
        accepted_differences(config.option, "harness-")
        shard = parse_shard(config.option.harness_shard) if config.option.harness_shard else None
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[SESSION] = SessionRecords(thresholds, shard)
    config.stash[RUNNER] = runner_from(config.option, check=False)  # outputs: pytest_collection_finish
    from harness.adapters import registry

    for name in registry.names():
        config.addinivalue_line("markers", f"{marker_name(name)}: points run by the {name} adapter")


def pytest_sessionstart(session):
    """Sweep what killed runs left in the results directory. Interruptions need nothing more here: each
    point's worker group is killed by ``harness.run.isolation`` on KeyboardInterrupt, or by the worker's
    reaper when pytest itself is terminated (``harness.run.lifecycle``)."""
    from harness.run import lifecycle

    if RUNNER in session.config.stash:
        lifecycle.sweep_stale(session.config.stash[RUNNER].results_dir)


def marker_name(text: str) -> str:
    return re.sub(r"\W", "_", text).lower()


def pytest_collect_file(file_path: Path, parent):
    if file_path.suffix in (".yaml", ".yml") and _is_scenario(file_path, parent.config):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


# A top-level ``sweep:`` key; read from the bytes so that a broken scenario is still found (and reported).
_SWEEP_KEY = re.compile(rb"""^["']?sweep["']?[ \t]*:""", re.MULTILINE)


def _is_scenario(path: Path, config) -> bool:
    """Scenario files are collected only where the user points pytest: a YAML file named on the command
    line, or a YAML with a top-level ``sweep:`` key under a folder named there or matching the
    ``harness_scenarios`` ini option. An installed plugin never reaches into other projects' YAML."""
    path = path.resolve()
    given = []
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        given = [(config.invocation_params.dir / str(arg).split("::")[0]).resolve() for arg in config.args]
    if path in given:
        return True
    places = [place for place in given if place.is_dir()] + list(config.getini("harness_scenarios"))
    if not any(_covers(Path(place), path) for place in places):
        return False
    from harness.io import read_regular_file
    from harness.scenario.yaml_load import MAX_BYTES

    try:
        head = read_regular_file(path, MAX_BYTES)
    except (OSError, ValueError):  # unreadable, not a regular file, or larger: data, not a scenario
        return False
    return _SWEEP_KEY.search(head) is not None


def _covers(place: Path, path: Path) -> bool:
    """``path`` is ``place``, lies under the folder ``place``, or matches the glob ``place``."""
    if any(char in str(place) for char in "*?["):
        return path.match(str(place.resolve()))  # the ini option's paths are absolute: the whole path matches
    place = place.resolve()
    return path == place or place in path.parents


class ScenarioFile(pytest.File):
    def collect(self):
        from harness.errors import ScenarioErrors
        from harness.run import planning
        from harness.scenario.sweep import expand

        state = self.config.stash[SESSION]
        try:
            loaded = planning.load(self.path, self.config.option.harness_max_points)
            planning.check_unique([loaded], state.names)  # two files, one name: one would overwrite the other
        except ScenarioErrors as exc:
            raise self.CollectError(str(exc)) from None
        problem = remote_code_error(loaded, self.config.option.harness_trust_remote_code)
        if problem:
            raise self.CollectError(str(problem))
        self.config.stash[SESSION].scenarios.add(loaded.name)
        for point in expand(loaded):
            item = PointItem.from_parent(self, name=point.id, callobj=_point_test(loaded, point))
            item.harness_key = (loaded.name, point.id)
            item.harness_point = (loaded, point)
            for label in (point.adapter, point.device, *loaded.markers):
                name = marker_name(label)
                self.config.addinivalue_line("markers", f"{name}: harness scenario marker")
                item.add_marker(name)
            yield item


class PointItem(pytest.Function):
    """A sweep point as a test: reported as ``file.yaml::point-id`` rather than by Python location."""

    def reportinfo(self):
        return self.path, None, self.name


def _point_test(scenario, point):
    def run_point(benchmark, request):
        ran = getattr(request.node, "harness_record", None)  # measured by the interleaved pass
        record = ran if ran is not None else request.config.stash[RUNNER].run_point(scenario, point)
        request.config.stash[SESSION].records.append(record)
        report_to_benchmark(benchmark, record, scenario)

    return run_point


def _wants_several_launches(runner, scenario) -> bool:
    return runner.launches_of(scenario) > 1 or scenario.measurement.target_rel_ci is not None


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
    for item, record in zip(items, runner.run_pairs([item.harness_point for item in items], progress=False)):
        item.harness_record = record
    return None  # pytest's own loop now runs the items, which report the records


def known_failure(scenario, record):
    for known in scenario.known_failures:
        if all(record.point.get(axis) == value for axis, value in known.match.items()):
            return known
    return None


def report_to_benchmark(benchmark, record, scenario) -> None:
    """Turn a record into pytest's outcome and pytest-benchmark's entry (seconds per generated token).

    pytest-benchmark times callables itself; our samples come from the engine's own token stream, so
    they go in through the fixture's stats object (one sample = one decode step). That uses two
    private members of the fixture (``_mode``, ``_make_stats``), pinned by the version range in
    pyproject.toml and covered by tests/test_pytest_plugin.py.
    """
    benchmark._mode = "harness"  # marks the fixture as used, for every outcome
    from harness.records import benchmark_json
    from harness.records.columns import flatten

    # the same columns as results.load's DataFrame, plus the record itself so reports and gates read this file
    benchmark.extra_info.update({**flatten(record), benchmark_json.KEY: benchmark_json.compact(record)})
    if record.status == "skipped":
        pytest.skip(record.reason)
    gaps = [gap for r in record.samples.rounds for gap in r.gaps_s] or [r.ttft_s for r in record.samples.rounds]
    if gaps and not benchmark.disabled:  # before any outcome: a known failure's timings stay in the JSON
        stats = benchmark._make_stats(1)
        for gap in gaps:
            stats.update(gap)
    known = known_failure(scenario, record) if record.status in ("failed", "timeout") or record.verdict_failed else None
    if known is not None:
        pytest.xfail(f"known failure ({known.reason}): {record.reason or _verdict_reasons(record)}")
    if record.status in ("failed", "timeout"):
        detail = (record.failure and (record.failure.traceback or record.failure.output_tail)) or ""
        pytest.fail(f"{record.reason}\n{detail}".rstrip(), pytrace=False)
    if record.verdict_failed:  # timings are kept; the point still fails
        pytest.fail(_verdict_reasons(record), pytrace=False)


def _verdict_reasons(record) -> str:
    lines = [record.correctness.report or "; ".join(record.correctness.reasons)] if record.verdict == "fail" else []
    if record.accuracy is not None and record.accuracy.verdict == "fail":
        lines.append("task accuracy below its non-inferiority margin: " + "; ".join(record.accuracy.failed_margins()))
    return "\n".join(lines)


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
    from harness.errors import HarnessError
    from harness.io import results_lock
    from harness.records.store import check_free_space

    results = config.stash[RUNNER].results_dir
    try:
        check_outputs(config.option, prefix="harness-")
        check_free_space(results, points, "--harness-results")
        held = contextlib.ExitStack()
        held.enter_context(results_lock(results, "--harness-results"))
        config.stash[HELD] = held
    except HarnessError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_deselected(items):
    if items:
        session = items[0].config.stash[SESSION]
        session.deselected |= {item.harness_key for item in items if isinstance(item, PointItem)}


def pytest_sessionfinish(session, exitstatus):
    """``--harness-baseline NAME``: check this session's records against a saved baseline."""
    config = session.config
    if RUNNER in config.stash:
        config.stash[RUNNER].close()  # the isolated worker kept for a next point
    if HELD in config.stash:
        config.stash[HELD].close()  # the results directory is free for the next run
    if SESSION not in config.stash:
        return
    from harness.cli.options import unknown_exit
    from harness.cli.output import not_judged_lines

    state = config.stash[SESSION]
    fail_on_unknown = config.option.harness_fail_on_unknown
    state.not_judged_lines = not_judged_lines(state.records)
    passed = session.exitstatus == pytest.ExitCode.OK
    if passed:  # 4 (as `harness run`) when a point is not judged
        session.exitstatus = unknown_exit(state.records, fail_on_unknown)
    name = config.option.harness_baseline
    if not name:
        return
    from pathlib import Path

    from harness.cli.output import regression_report
    from harness.errors import HarnessError
    from harness.regression import baseline
    from harness.regression.check import check, key

    try:  # an unreadable, empty or unrelated baseline is a usage error, never a pass
        base = baseline.load(name, Path(config.option.harness_baselines_dir))
        # Only points this session could have run: its scenarios, minus what -k/-m deselected.
        scope = {key(r) for r in base if r.scenario in state.scenarios} - state.deselected
        outcome = check(
            base,
            state.records,
            state.thresholds,
            scope=scope,
            fdr=regression_fdr(config.option, "harness-"),
            accept=accepted_differences(config.option, "harness-"),
        )
    except (HarnessError, ValueError, FileNotFoundError) as exc:
        state.regression_lines = [f"ERROR {exc}"]
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        return
    state.regression_lines = regression_report(outcome, name)
    if passed:
        # 1 when a point failed; 3 (as `harness gate`) when nothing failed but a fingerprint differs; 4 on
        # what is undecided with --harness-fail-on-unknown
        code = outcome.exit_status(fail_on_unknown)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED if outcome.findings else code or session.exitstatus


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    state = config.stash.get(SESSION, None)
    if state is not None and state.not_judged_lines:
        terminalreporter.section("harness correctness gate")
        for line in state.not_judged_lines:
            terminalreporter.line(line, yellow=True)
    if state is not None and state.regression_lines:
        terminalreporter.section("harness regression gate")
        for line in state.regression_lines:
            terminalreporter.line(line, red=line.startswith(("FAIL", "ERROR")), green="PASS" in line)
