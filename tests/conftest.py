from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import numpy  # noqa: F401 - imported before any pytester inline run, which cannot re-import numpy
import pytest
import scipy.stats  # noqa: F401 - likewise: launch statistics load numpy.fft through it

from harness.models import sources
from harness.models.gguf_convert import GEMMA_CHAT_TEMPLATE
from harness.scenario.schema import ModelSpec

pytest_plugins = ["pytester"]

# pytester points HOME at a temporary directory; keep every test on the one real model cache.
os.environ.setdefault("HARNESS_CACHE_DIR", str(sources.cache_dir()))


@pytest.fixture(scope="session")
def cache_dir() -> Path:
    """The real model cache (``$HARNESS_CACHE_DIR`` or ~/.cache/harness): conversions are reused."""
    return sources.cache_dir()


@pytest.fixture(scope="session")
def tiny_llama(cache_dir):
    return sources.resolve(ModelSpec(source="tiny-llama"), cache_dir)


@pytest.fixture(scope="session")
def chat_model(tiny_llama, tmp_path_factory):
    """tiny-llama with a chat template (Gemma's turn format), as an HF directory source."""
    path = tmp_path_factory.mktemp("model") / "tiny-llama-chat"
    shutil.copytree(tiny_llama.hf_dir, path, ignore=shutil.ignore_patterns("harness-*"))
    (path / "chat_template.jinja").write_text(GEMMA_CHAT_TEMPLATE, encoding="utf-8")
    return path


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
    from .fakes import ALL

    yield from registered(ALL)
