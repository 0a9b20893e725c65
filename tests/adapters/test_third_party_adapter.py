"""An adapter shipped by another package is discovered through the entry point and runs a gated point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "numpy_adapter"

SCENARIO = """
model: tiny-llama
prompts: ["The river"]
generation: {max_new_tokens: 6}
measurement: {warmup_rounds: 0, min_rounds: 2, threads: 2}
gate: {k: 5, tokens: 6, prompts: ci}
sweep:
  adapter: [numpy]
  max_seq_len: [64]
"""


def installed_without_pip(site: Path) -> dict:
    """What ``pip install examples/numpy_adapter`` leaves behind: the module on the path and a
    dist-info with the entry point (written by hand, so the test touches no environment)."""
    dist = site / "harness_numpy_adapter-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: harness-numpy-adapter\nVersion: 0.1.0\n")
    (dist / "entry_points.txt").write_text("[harness.adapters]\nnumpy = harness_numpy_adapter:NumpyAdapter\n")
    path = os.pathsep.join([str(site), str(EXAMPLE), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}


def test_entry_point_adapter_is_listed_and_runs(tmp_path, tiny_llama):
    env = installed_without_pip(tmp_path / "site")
    devices = subprocess.run(
        [sys.executable, "-m", "harness.cli", "devices"], env=env, capture_output=True, text=True, timeout=120
    )
    assert "numpy:cpu" in devices.stdout and "available" in devices.stdout, devices.stderr
    scenario = tmp_path / "scenarios" / "third_party.yaml"
    scenario.parent.mkdir()
    scenario.write_text(SCENARIO)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "run",
            str(scenario),
            "--results",
            str(tmp_path / "results"),
            "--isolation",
            "none",
            "--no-progress",
            "--no-energy",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    record = json.loads((tmp_path / "results" / "third_party" / "numpy-cpu-bf16-seq64.json").read_text())
    assert record["status"] == "ok" and record["engine"]["name"] == "numpy"
    assert record["metrics"]["generated_tokens"] == 6
    assert record["correctness"]["verdict"] == "pass"
