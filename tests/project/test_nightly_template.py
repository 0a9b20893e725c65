"""The nightly CI template validates, names real markers, and its local dry run passes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "ci" / "github" / "nightly.yml"


def test_workflow_validates_against_the_github_workflow_schema():
    checker = shutil.which("check-jsonschema") or str(Path(sys.executable).parent / "check-jsonschema")
    if not Path(checker).exists():
        pytest.skip("check-jsonschema not installed: pip install -e '.[test]'")
    result = subprocess.run(
        [checker, "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_checker_rejects_a_broken_workflow(tmp_path):
    checker = shutil.which("check-jsonschema") or str(Path(sys.executable).parent / "check-jsonschema")
    if not Path(checker).exists():
        pytest.skip("check-jsonschema not installed")
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text().replace("runs-on: [self-hosted, cpu]", "runs-onn: [self-hosted, cpu]", 1))
    result = subprocess.run(
        [checker, "--builtin-schema", "vendor.github-workflows", str(broken)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0


def test_every_device_job_selects_markers_the_harness_defines():
    from harness.adapters import registry
    from harness.scenario.markers import marker_name

    known = {marker_name(n) for n in registry.names()}
    for name in registry.names():
        known |= {marker_name(d) for d in registry.get(name).devices}
    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    assert jobs["device"]["needs"] == "references" and jobs["report"]["needs"] == "device"
    entries = jobs["device"]["strategy"]["matrix"]["include"]
    assert {e["label"] for e in entries} == {"intel-npu", "amd-npu", "apple-ane", "nvidia-gpu", "cpu"}
    for entry in entries:
        words = set(re.findall(r"[a-z_][a-z0-9_]*", entry["marker"])) - {"and", "or", "not"}
        assert words <= known, f"{entry['label']}: unknown markers {words - known}"
    shards = [e["shard"] for e in entries if e["label"] == "cpu"]
    assert sorted(shards) == ["1/2", "2/2"]


def test_local_dry_run_two_shards_merge_report_and_gate(tmp_path):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        ["bash", str(ROOT / "ci" / "dry-run.sh"), str(tmp_path)], capture_output=True, text=True, timeout=900, env=env
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "regression check vs nightly: PASS; 6 point(s) compared" in result.stdout
    shard_ids = [{p.stem for p in (tmp_path / "night1" / f"shard{i}").rglob("*.json")} for i in (1, 2)]
    assert shard_ids[0] and shard_ids[1] and not shard_ids[0] & shard_ids[1]
    assert (tmp_path / "report1" / "index.html").exists() and (tmp_path / "report2" / "points.csv").exists()
