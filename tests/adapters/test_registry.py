from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from harness.adapters import registry
from harness.adapters.base import Adapter
from harness.errors import UnknownAdapter


def test_every_entry_point_names_a_class_with_that_name():
    eps = entry_points(group=registry.ENTRY_POINT_GROUP)
    assert {"hf"} <= {ep.name for ep in eps}
    for ep in eps:
        cls = ep.load()
        assert issubclass(cls, Adapter) and cls.name == ep.name


def test_unknown_adapter_suggests_a_name():
    with pytest.raises(UnknownAdapter, match="did you mean 'hf'"):
        registry.get("hff")


def test_entry_points_are_scanned_once_per_process(monkeypatch):
    scans = []

    def counted(**kwargs):
        scans.append(kwargs)
        return entry_points(**kwargs)

    monkeypatch.setattr(registry, "entry_points", counted)
    registry._entry_points.cache_clear()
    try:
        assert "hf" in registry.names()
        assert registry.get("hf").name == "hf"
        with pytest.raises(UnknownAdapter):
            registry.get("hff")
        assert "hf" in registry.names()
        assert scans == [{"group": registry.ENTRY_POINT_GROUP}]
    finally:
        registry._entry_points.cache_clear()  # the next test's scan is the real one


def test_register_adapter_in_process_and_refuse_clashes():
    class Fake(Adapter):
        name = "fake-registry-test"
        devices = ("cpu",)

    try:
        registry.register_adapter(Fake)
        assert registry.get("fake-registry-test") is Fake
        assert "fake-registry-test" in registry.names()

        class Other(Fake):
            pass

        with pytest.raises(ValueError, match="already registered"):
            registry.register_adapter(Other)
    finally:
        registry.unregister_adapter("fake-registry-test")


def test_our_adapters_package_is_the_one_imported():
    import harness.adapters as adapters

    assert adapters.__doc__.startswith("Engine adapters shipped with the harness")


def test_core_import_loads_no_engine():
    code = (
        "import sys, harness, harness.cli.app, harness.scenario.schema, harness.run.runner, harness.adapters.registry\n"
        "from harness.adapters import registry; [registry.get(n) for n in registry.names()]\n"
        "heavy = [m for m in ('torch', 'transformers', 'openvino', 'openvino_genai', 'nncf', 'optimum', 'llama_cpp', 'pandas') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_cli_help_works_without_engines():
    out = subprocess.run([sys.executable, "-m", "harness.cli", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "devices" in out.stdout
