from __future__ import annotations

import itertools
import multiprocessing.sharedctypes  # noqa: F401 - before any inline run too: tests/project/test_inline_runs.py
import os
import shutil
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy  # noqa: F401 - imported before any pytester inline run, which cannot re-import numpy
import pytest
import scipy.stats  # noqa: F401 - likewise: launch statistics load numpy.fft through it
from hypothesis import settings

from harness.models import sources
from harness.models.gguf_convert import GEMMA_CHAT_TEMPLATE
from harness.scenario.schema import ModelSpec
from tests import tiers

pytest_plugins = ["pytester"]

# pytester points HOME at a temporary directory; keep every test on the one real model cache.
os.environ.setdefault("HARNESS_CACHE_DIR", str(sources.cache_dir()))
# The suite's own runs never append to the CI job's page (tests that check it set their own file).
os.environ.pop("GITHUB_STEP_SUMMARY", None)
# Hypothesis: no per-example deadline in any test. Its default (200 ms) times the machine, not the property:
# on a loaded 2-core CI machine a slow example fails a correct test. Each test still sets its example budget.
settings.register_profile("harness", deadline=None)
settings.load_profile("harness")


@pytest.fixture(scope="session")
def cache_dir() -> Path:
    """The real model cache (``$HARNESS_CACHE_DIR`` or ~/.cache/harness): conversions are reused."""
    return sources.cache_dir()


@pytest.fixture(scope="session")
def _calibrations(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("canary-calibrations")


@pytest.fixture(autouse=True)
def calibration_file(_calibrations, monkeypatch) -> Path:
    """Each test's own stored canary calibration (``harness.measure.calibration_store``): a test that injects
    canary readings never leaves them in the real cache, nor reuses another test's. Subprocess runs use the
    real cache, with real readings."""
    from harness.measure import calibration_store

    where = _calibrations / f"calibration-{next(_COUNTER)}.json"
    monkeypatch.setattr(calibration_store, "path", lambda cache_dir=None: where)
    return where


_COUNTER = itertools.count()


@pytest.fixture(scope="session")
def tiny_llama(cache_dir):
    return sources.resolve(ModelSpec(source="tiny-llama"), cache_dir)


@pytest.fixture(scope="session")
def wide_llama(tiny_llama, tmp_path_factory):
    """tiny-llama with 256-wide rows (``tests/kquant_gguf.py``): wide enough for K-quants and int4 groups of 128."""
    from tests.kquant_gguf import wide_llama

    return wide_llama(tiny_llama.hf_dir, tmp_path_factory.mktemp("wide") / "wide-llama")


@pytest.fixture(scope="session")
def chat_model(tiny_llama, tmp_path_factory):
    """tiny-llama with a chat template (Gemma's turn format), as an HF directory source."""
    path = tmp_path_factory.mktemp("model") / "tiny-llama-chat"
    shutil.copytree(tiny_llama.hf_dir, path, ignore=shutil.ignore_patterns("harness-*"))
    (path / "chat_template.jinja").write_text(GEMMA_CHAT_TEMPLATE, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def reference_dir(tmp_path_factory) -> Path:
    """One gate-reference store for the whole run: tests that are not about computing a reference pass it
    (``--reference-dir``, ``RunSettings(reference_dir=...)``), so each reference (model, prompts, settings) is
    computed once per run, not once per test or module. A test that edits a model under its old name, or
    counts computations, keeps a store of its own."""
    return tmp_path_factory.mktemp("references")


@pytest.fixture(scope="session", autouse=True)
def default_reference_store(reference_dir) -> Iterator[Path]:
    """Runs built without a reference directory (``RunSettings()``) keep their references in the session's
    store (``$HARNESS_REFERENCE_DIR``, read by ``harness.run.settings.default_reference_dir``; worker processes
    inherit it), never in ``results/references`` under the working directory, where a checkout's old files
    would decide tests."""
    before = os.environ.get("HARNESS_REFERENCE_DIR")
    os.environ["HARNESS_REFERENCE_DIR"] = str(reference_dir)
    yield reference_dir
    if before is None:
        os.environ.pop("HARNESS_REFERENCE_DIR", None)
    else:
        os.environ["HARNESS_REFERENCE_DIR"] = before


@pytest.fixture
def write_scenario(tmp_path):
    """Write a scenario YAML under tmp_path/scenarios/ and return its path."""

    def write(text: str, name: str = "scenario.yaml") -> Path:
        path = tmp_path / "scenarios" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
        return path

    return write


TINY_SCENARIO = """
model: tiny-llama
prompts: ["The river", "A bakery on the corner"]
generation: {max_new_tokens: 6}
measurement: {warmup_rounds: 1, min_rounds: 2, threads: 2}
sweep:
  adapter: [hf]
  device: [cpu]
"""


def registered(classes):
    """Register adapter classes for the duration of a fixture: ``yield from registered(classes)``."""
    from harness.adapters import registry

    for cls in classes:
        registry.register_adapter(cls)
    yield classes
    for cls in classes:
        registry.unregister_adapter(cls.name)


@pytest.fixture
def fake_adapters(tiny_llama):
    """Register the fake adapters for one test."""
    from tests.fakes import ALL

    yield from registered(ALL)


# Tiers: tests/tiers.py holds the table; here it is applied and the unit tier's guard is put around each
# unit test file's import and each unit test's setup and call. Not its teardown: the last test of a run also
# tears down the session's fixtures (a database server, workers), which other tiers' tests started.
TESTS = Path(__file__).parent


def _tier_entry(path: Path) -> tiers.Tier | None:
    return tiers.TABLE.get(path.relative_to(TESTS).as_posix()) if path.is_relative_to(TESTS) else None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        entry = _tier_entry(item.path)
        if entry is None:  # not a file of this suite, or not in the table (tests/project/test_tiers.py fails)
            continue
        function = getattr(item, "originalname", item.name)
        item.add_marker(entry.of(function))
        if entry.is_slow(function):
            item.add_marker("slow")


def _guarded(item_or_file: str, unit: bool):
    if not unit:
        return (yield)
    violations: list[str] = []
    try:
        with tiers.guard(violations):
            result = yield
    except BaseException as error:
        if violations:
            raise tiers.TierViolation(_moved(item_or_file, violations)) from error
        raise
    if violations:
        raise tiers.TierViolation(_moved(item_or_file, violations))
    return result


def _moved(where: str, violations: list[str]) -> str:
    return f"{where} is in the unit tier but {'; '.join(dict.fromkeys(violations))}: give it the engine or acceptance tier in tests/tiers.py"


def _is_unit(item) -> bool:
    return item.get_closest_marker("unit") is not None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    return (yield from _guarded(item.nodeid, _is_unit(item)))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    return (yield from _guarded(item.nodeid, _is_unit(item)))


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    """A unit file's own imports are guarded too: an engine imported at its top fails its collection."""
    entry = _tier_entry(collector.path) if isinstance(collector, pytest.Module) else None
    if entry is None or entry.default != "unit":
        return (yield)
    violations: list[str] = []
    with tiers.guard(violations):
        report = yield
    if violations and report.passed:  # the import was refused but something swallowed the refusal
        report.outcome, report.longrepr = "failed", _moved(collector.nodeid, violations)
    return report
