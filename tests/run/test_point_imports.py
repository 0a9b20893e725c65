"""A point pays only for the imports it uses (issue #41): ``harness run`` of a llama.cpp point imports neither
torch nor transformers, a run of one launch a point neither scipy (its interval and drift check need none) nor
scikit-learn, and an ``hf`` point's load leaves scikit-learn out (transformers' generation code imports it, for
a feature the harness switches off; scipy it still gets from transformers' model code). Each run is a fresh
interpreter running ``harness run`` in process (``--isolation none``), so its ``sys.modules`` holds everything
the run and its point imported; the first run of each fills the model cache (converting may import anything),
the second is the one checked."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.tiny_scenario import tiny

CHECKED = ("torch", "transformers", "scipy", "sklearn", "statsmodels", "pandas")
PROBE = """
import json, sys
from harness.cli.app import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "loaded": [m for m in %r if m in sys.modules]}))
""" % (CHECKED,)


def loaded_by_run(tmp_path, adapter: str) -> list[str]:
    path = tmp_path / f"{adapter}.yaml"
    path.write_text(
        tiny(
            generation={"max_new_tokens": 3}, measurement={"min_rounds": 2, "threads": 1}, sweep={"adapter": [adapter]}
        )
    )
    argv = [sys.executable, "-c", PROBE, "run", str(path), "--isolation", "none", "--no-progress", "--no-energy"]
    for run in ("fills the cache", "checked"):
        done = subprocess.run(
            [*argv, "--results", str(tmp_path / f"{adapter}-{run}")], capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["code"] == 0, found
    return found["loaded"]


def test_a_llamacpp_point_imports_no_torch_transformers_or_statistics(tmp_path):
    pytest.importorskip("llama_cpp")
    assert loaded_by_run(tmp_path, "llamacpp") == []


def test_an_hf_point_imports_no_scikit_learn(tmp_path):
    pytest.importorskip("transformers")
    loaded = loaded_by_run(tmp_path, "hf")
    # scipy is transformers' own: its model code imports its losses, one of which imports scipy.optimize
    assert [m for m in loaded if m != "scipy"] == ["torch", "transformers"], loaded
