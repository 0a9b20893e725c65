"""Scenario files as pytest items: which YAML files are collected, one item per sweep point, and how a
point's record becomes pytest's outcome and pytest-benchmark's entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli.options import remote_code_error
from harness.pytest_plugin.session import RUNNER, SESSION, phase_lines
from harness.run.steps.launch_context import quiet
from harness.scenario.markers import point_markers

# The scenario marker the shipped CPU nightly selects (`pytest scenarios/ -m nightly`, docs/nightly-ci.md).
NIGHTLY = "nightly"
NIGHTLY_HELP = "scenarios a CPU runner can run in a nightly (scenario `markers: [nightly]`)"


def is_scenario(path: Path, config) -> bool:
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
    from harness.scenario.folders import has_sweep_key

    return has_sweep_key(path)


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
        if loaded.require_all:
            self.config.stash[SESSION].required.add(loaded.name)
        for point in expand(loaded):
            item = PointItem.from_parent(self, name=point.id, callobj=_point_test(loaded, point))
            item.harness_key = (loaded.name, point.id)
            item.harness_point = (loaded, point)
            for name in sorted(point_markers(loaded, point)):  # what `harness plan -m` selects by, too
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
        if ran is None:
            lines = phase_lines(request.config)
            phase = lines.for_scenario(scenario.name) if lines is not None else quiet
            try:
                ran = request.config.stash[RUNNER].run_point(scenario, point, on_phase=phase)
            finally:
                if lines is not None:
                    lines.idle()  # the point is done: its heartbeat stops
        record = ran
        request.config.stash[SESSION].records.append(record)
        required = request.config.option.harness_require_all or scenario.require_all
        report_to_benchmark(benchmark, record, node=request.node, required=required)

    return run_point


def report_to_benchmark(benchmark, record, node=None, required: bool = False) -> None:
    """Turn a record into pytest's outcome and pytest-benchmark's entry (seconds per generated token).

    pytest-benchmark times callables itself; our samples come from the engine's own token stream, so
    they go in through the fixture's stats object (one sample = one decode step). That uses two
    private members of the fixture (``_mode``, ``_make_stats``), pinned by the version range in
    pyproject.toml and covered by tests/pytest_plugin/test_points_as_tests.py.

    A point the scenario lists as a known failure (``record.known_failure``) is xfail when it fails and
    XPASS when it passes (a failure with the entry's ``strict``, or pytest's ``xfail_strict``); a skipped
    point fails when ``required`` (``--harness-require-all``, the scenario's ``require_all``).
    """
    benchmark._mode = "harness"  # marks the fixture as used, for every outcome
    from harness.records import benchmark_json
    from harness.records.columns import flatten
    from harness.records.verdict import DECIDED, FAILED, failure_reasons

    # the same columns as results.load's DataFrame, plus the record itself so reports and gates read this file
    benchmark.extra_info.update({**flatten(record), benchmark_json.KEY: benchmark_json.compact(record)})
    if record.status == "skipped":
        if required:
            pytest.fail(f"required point skipped (every selected point must run): {record.reason}", pytrace=False)
        pytest.skip(record.reason)
    gaps = [gap for r in record.samples.rounds for gap in r.gaps_s] or [r.ttft_s for r in record.samples.rounds]
    if gaps and not benchmark.disabled:  # before any outcome: a known failure's timings stay in the JSON
        stats = benchmark._make_stats(1)
        for gap in gaps:
            stats.update(gap)
    if record.status not in DECIDED:  # a status this harness does not decide on (not complete): never a pass
        pytest.fail(f"{record.status}: {record.reason}", pytrace=False)
    known = record.known_failure
    if known is not None and (record.status in FAILED or record.verdict_failed):
        pytest.xfail(f"known failure ({known.reason}): {chr(10).join(failure_reasons(record))}")
    if record.status in FAILED:
        detail = (record.failure and (record.failure.traceback or record.failure.output_tail)) or ""
        pytest.fail(f"{record.reason}\n{detail}".rstrip(), pytrace=False)
    if record.verdict_failed:  # timings are kept; the point still fails
        pytest.fail("\n".join(failure_reasons(record)), pytrace=False)
    if known is not None and node is not None:  # it passed: pytest says XPASS (XPASS(strict) fails)
        strict = {"strict": True} if known.strict else {}  # otherwise pytest's xfail_strict ini decides
        node.add_marker(pytest.mark.xfail(reason=f"known failure now passes: {known.reason}", **strict))
