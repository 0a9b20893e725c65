"""A point pays only for the imports it uses (issue #41): ``harness run`` of a llama.cpp point imports neither
torch nor transformers, a run of one launch a point neither scipy (its interval and drift check need none) nor
scikit-learn, and an ``hf`` point's load leaves scikit-learn out (transformers' generation code imports it, for
a feature the harness switches off; scipy it still gets from transformers' model code), a machine where Zeus
could read no energy counter never imports Zeus (nor the scikit-learn it brings), and the adapters' entry
points are read once a run. Each run is a fresh
interpreter running ``harness run`` in process (``--isolation none``), so its ``sys.modules`` holds everything
the run and its point imported. A run that built an artefact (``time_split.conversion_s``: a conversion may
import anything) filled the model cache and is run again; the run that built nothing is the one checked."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.measure import energy_presence
from tests.tiny_scenario import tiny

CHECKED = ("torch", "transformers", "scipy", "sklearn", "statsmodels", "pandas", "zeus")
PROBE = """
import importlib.metadata, json, sys
scans = []
def counted(**kwargs):
    scans.append(kwargs.get("group"))
    return scan(**kwargs)
scan, importlib.metadata.entry_points = importlib.metadata.entry_points, counted
from harness.cli.app import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "loaded": [m for m in %r if m in sys.modules],
                  "adapter_scans": scans.count("harness.adapters")}))
""" % (CHECKED,)


def loaded_by_run(tmp_path, adapter: str, *flags: str) -> dict:
    path = tmp_path / f"{adapter}.yaml"
    path.write_text(
        tiny(
            generation={"max_new_tokens": 3}, measurement={"min_rounds": 2, "threads": 1}, sweep={"adapter": [adapter]}
        )
    )
    argv = [sys.executable, "-c", PROBE, "run", str(path), "--isolation", "none", "--no-progress", *flags]
    for run in range(2):
        results = tmp_path / f"{adapter}-{run}"
        done = subprocess.run([*argv, "--results", str(results)], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        record = json.loads(next(results.rglob("*.json")).read_text())
        if not record["time_split"]["conversion_s"]:  # built nothing: this run's imports are the point's own
            break
    assert not record["time_split"]["conversion_s"], "the second run built an artefact again"
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["code"] == 0, found
    found["record"] = record
    return found


def test_a_llamacpp_point_imports_no_torch_transformers_or_statistics(tmp_path):
    pytest.importorskip("llama_cpp")
    found = loaded_by_run(tmp_path, "llamacpp", "--no-energy")
    assert found["loaded"] == []
    assert found["adapter_scans"] == 1  # the adapters' entry points, read once for the whole run


def test_a_machine_with_no_energy_counter_never_imports_zeus(tmp_path):
    """Zeus's import brings scikit-learn (seconds a process); where it could read nothing the record still
    says why each source is missing, from the checks made before it."""
    pytest.importorskip("llama_cpp")
    nothing = energy_presence.nothing_to_read()
    if nothing is None:
        pytest.skip("Zeus can read an energy counter here")
    found = loaded_by_run(tmp_path, "llamacpp")
    assert "zeus" not in found["loaded"] and "sklearn" not in found["loaded"], found["loaded"]
    unavailable = found["record"]["unavailable"]
    assert {name: unavailable[f"energy_{name}_j"] for name in nothing} == nothing
    assert found["record"]["metrics"]["energy_j"] is None


def test_an_hf_point_imports_no_scikit_learn(tmp_path):
    pytest.importorskip("transformers")
    loaded = loaded_by_run(tmp_path, "hf", "--no-energy")["loaded"]
    # scipy is transformers' own: its model code imports its losses, one of which imports scipy.optimize
    assert [m for m in loaded if m != "scipy"] == ["torch", "transformers"], loaded
