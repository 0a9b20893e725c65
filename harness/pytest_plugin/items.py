"""Scenario files as pytest items: which YAML files are collected, one item per sweep point, and how a
point's record becomes pytest's outcome and pytest-benchmark's entry."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.cli.options import remote_code_error
from harness.pytest_plugin.session import RUNNER, SESSION, phase_lines
from harness.run.steps.launch_context import quiet


def marker_name(text: str) -> str:
    return re.sub(r"\W", "_", text).lower()


# A top-level ``sweep:`` key; read from the bytes so that a broken scenario is still found (and reported).
_SWEEP_KEY = re.compile(rb"""^["']?sweep["']?[ \t]*:""", re.MULTILINE)


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
        report_to_benchmark(benchmark, record, scenario)

    return run_point


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
    pyproject.toml and covered by tests/pytest_plugin/test_points_as_tests.py.
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
