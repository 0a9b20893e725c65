"""pytest plugin: every scenario YAML becomes one test per sweep point, timed with pytest-benchmark.

Hooks only: loading, running and recording live in ``harness.scenario``, ``harness.runner`` and
``harness.results``. ``pytest scenarios/ --benchmark-json out.json`` writes one benchmark per point
whose stats are seconds per generated token and whose ``extra_info`` holds every harness metric.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.cli import add_run_options, remote_code_error, runner_from
from harness.runner import Runner

RUNNER = pytest.StashKey[Runner]()


def pytest_addoption(parser):
    group = parser.getgroup("harness", "LLM inference harness")
    add_run_options(group.addoption, prefix="harness-")


def pytest_configure(config):
    config.stash[RUNNER] = runner_from(config.option)
    from harness import registry

    for name in registry.names():
        config.addinivalue_line("markers", f"{marker_name(name)}: points run by the {name} adapter")


def marker_name(text: str) -> str:
    return re.sub(r"\W", "_", text).lower()


def pytest_collect_file(file_path: Path, parent):
    if file_path.suffix in (".yaml", ".yml") and _is_scenario(file_path, parent.config):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


def _is_scenario(path: Path, config) -> bool:
    if "scenarios" in path.parts:
        return True
    given = {Path(str(arg).split("::")[0]).resolve() for arg in config.args}
    return path.resolve() in given


class ScenarioFile(pytest.File):
    def collect(self):
        from harness import scenario
        from harness.errors import ScenarioErrors
        from harness.sweep import expand

        try:
            loaded = scenario.load(self.path)
        except ScenarioErrors as exc:
            raise self.CollectError(str(exc)) from None
        problem = remote_code_error(loaded, self.config.option.harness_trust_remote_code)
        if problem:
            raise self.CollectError(str(problem))
        for point in expand(loaded):
            item = PointItem.from_parent(self, name=point.id, callobj=_point_test(loaded, point))
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
        record = request.config.stash[RUNNER].run_point(scenario, point)
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
    pyproject.toml and covered by tests/test_pytest_plugin.py.
    """
    benchmark._mode = "harness"  # marks the fixture as used, for every outcome
    benchmark.extra_info.update({
        "scenario": record.scenario,
        "point_id": record.point_id,
        "status": record.status,
        "model": record.model.get("name"),
        "model_checksum": record.model.get("checksum"),
        **record.point,
        **record.metrics,
    })
    if record.status == "skipped":
        pytest.skip(record.reason)
    gate_failed = record.correctness.get("verdict") == "fail"
    known = known_failure(scenario, record) if record.status in ("failed", "timeout") or gate_failed else None
    if known is not None:
        pytest.xfail(f"known failure ({known.reason}): {record.reason or record.correctness.get('reasons')}")
    if record.status in ("failed", "timeout"):
        detail = record.details.get("traceback") or record.details.get("output_tail") or ""
        pytest.fail(f"{record.reason}\n{detail}".rstrip(), pytrace=False)
    if not benchmark.disabled:
        gaps = [gap for r in record.samples["rounds"] for gap in r["gaps_s"]] or [
            r["ttft_s"] for r in record.samples["rounds"]
        ]
        stats = benchmark._make_stats(1)
        for gap in gaps:
            stats.update(gap)
    if record.correctness.get("verdict") == "fail":  # timings are kept; the point still fails
        pytest.fail(record.correctness["report"], pytrace=False)
