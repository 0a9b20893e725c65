"""The shipped scheduler templates (ci/kubernetes, ci/slurm): their own shell commands, run as the scheduler
would run them (its variables set, one process per shard), split the points into disjoint shards that
``harness merge`` puts back together as the whole set, and their last step gates the merged records.
``--shard auto`` is read from each scheduler's variables (harness.run.shard_env)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.errors import UsageError
from harness.records import store
from harness.run.shard import parse_shard
from tests.tiny_scenario import tiny

ROOT = Path(__file__).resolve().parents[2]
KUBERNETES = ROOT / "ci" / "kubernetes" / "nightly-indexed-job.yaml"
SLURM = ROOT / "ci" / "slurm"

# `harness` as the templates call it, with the test suite's fake engines registered (no real engine runs).
SHIM = f"""#!/bin/sh
exec {sys.executable} -c 'import sys
from harness.adapters import registry
from tests.fakes import ALL
for cls in ALL:
    registry.register_adapter(cls)
from harness.cli.app import main
sys.exit(main())' "$@"
"""


@pytest.mark.parametrize(
    "env, expected",
    [
        ({"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "4", "SLURM_ARRAY_TASK_COUNT": "3"}, (2, 3)),
        (
            {
                "SLURM_ARRAY_TASK_ID": "4",
                "SLURM_ARRAY_TASK_MIN": "0",
                "SLURM_ARRAY_TASK_STEP": "2",
                "SLURM_ARRAY_TASK_COUNT": "3",
            },
            (3, 3),
        ),
        ({"JOB_COMPLETION_INDEX": "0", "HARNESS_SHARD_COUNT": "4"}, (1, 4)),
        ({"CI_NODE_INDEX": "2", "CI_NODE_TOTAL": "2"}, (2, 2)),
        ({"BUILDKITE_PARALLEL_JOB": "2", "BUILDKITE_PARALLEL_JOB_COUNT": "3"}, (3, 3)),
        ({"HARNESS_SHARD_INDEX": "1", "HARNESS_SHARD_COUNT": "2", "CI_NODE_INDEX": "2", "CI_NODE_TOTAL": "2"}, (1, 2)),
    ],
    ids=["slurm", "slurm-step", "kubernetes", "gitlab", "buildkite", "explicit-first"],
)
def test_shard_auto_reads_each_schedulers_variables(env, expected):
    shard = parse_shard("auto", env)
    assert (shard.index, shard.count) == expected and shard.source


@pytest.mark.parametrize(
    "env, message",
    [
        ({}, "no scheduler's shard variables are set; expected one of HARNESS_SHARD_INDEX+HARNESS_SHARD_COUNT"),
        ({"JOB_COMPLETION_INDEX": "0"}, "HARNESS_SHARD_COUNT is not set"),
        ({"CI_NODE_INDEX": "0", "CI_NODE_TOTAL": "2"}, "CI_NODE_INDEX=0 (GitLab parallel, 1-based) is not a shard"),
        ({"BUILDKITE_PARALLEL_JOB": "x", "BUILDKITE_PARALLEL_JOB_COUNT": "2"}, "BUILDKITE_PARALLEL_JOB='x'"),
    ],
)
def test_shard_auto_refuses_missing_or_impossible_variables_naming_them(env, message):
    with pytest.raises(UsageError, match="--shard auto: ") as found:
        parse_shard("auto", env)
    assert message in str(found.value)


def _commands(text: str) -> list[str]:
    """The template's `harness ...` commands: its shell lines that call harness, continuations joined."""
    lines = text.replace("\\\n", " ").splitlines()
    return [line.strip() for line in lines if line.strip().startswith("harness ")]


@pytest.fixture
def workdir(tmp_path, fake_adapters):
    """A checkout as the templates expect one: scenarios/ with points in several model groups, `harness` on
    PATH (the shim), and the environment a scheduler's job starts with."""
    (tmp_path / "scenarios").mkdir()
    sweep = {"adapter": ["fake", "fake-truncating", "fake-failing"], "prompt_len": [16, 32]}
    for name in ("alpha", "beta"):
        (tmp_path / "scenarios" / f"{name}.yaml").write_text(tiny(name=name, sweep=sweep))
    (tmp_path / "bin").mkdir()
    shim = tmp_path / "bin" / "harness"
    shim.write_text(SHIM)
    shim.chmod(0o755)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("SLURM_", "JOB_COMPLETION", "CI_NODE", "BUILDKITE", "HARNESS_SHARD"))
    }
    env["PATH"] = f"{tmp_path / 'bin'}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return tmp_path, env


def _shell(command: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    done = subprocess.run(["/bin/sh", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _ids(results: Path) -> list[tuple[str, str]]:
    return sorted((r.scenario, r.point_id) for _, r in store.iter_records([results]))


def _everything(root: Path) -> list[tuple[str, str]]:
    from harness.run import planning
    from harness.scenario.sweep import expand

    loaded = [planning.load(path) for path in sorted((root / "scenarios").glob("*.yaml"))]
    return sorted((s.name, p.id) for s in loaded for p in expand(s))


def test_the_slurm_array_shards_are_disjoint_and_merge_to_every_point(workdir):
    root, env = workdir
    (run,) = _commands((SLURM / "nightly-array.sbatch").read_text())
    assert "--shard auto" in run
    shards = []
    for task in (1, 2, 3, 4):  # --array=1-4: shards 1/4 .. 4/4 from SLURM_ARRAY_TASK_ID - MIN
        array = {"SLURM_ARRAY_TASK_ID": str(task), "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "4"}
        done = _shell(run, root, {**env, **array})
        assert f"shard {task}/4 from Slurm job array" in done.stderr
        shards.append(_ids(root / "results" / f"shard-{task}") if (root / "results" / f"shard-{task}").exists() else [])
    flat = [point for shard in shards for point in shard]
    assert len(flat) == len(set(flat)) and sorted(flat) == _everything(root)
    assert sum(1 for shard in shards if shard) == 3  # three model groups (one per adapter) over four tasks
    merge, gate = _commands((SLURM / "merge-and-gate.sbatch").read_text())
    assert merge.startswith("harness merge ") and gate.startswith("harness gate ")
    _shell(merge, root, env)
    assert _ids(root / "results" / "merged") == _everything(root)
    save = "harness baseline save results/merged --name nightly --baselines-dir results/baselines"
    _shell(save, root, env)
    done = subprocess.run(["/bin/sh", "-c", gate], cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (root / "results" / "merged" / "summary.md").read_text().startswith("## ")


def test_the_kubernetes_indexed_jobs_shards_are_disjoint_and_merge_to_every_point(workdir):
    root, env = workdir
    docs = [doc for doc in yaml.safe_load_all(KUBERNETES.read_text()) if doc]
    shard_jobs = [doc for doc in docs if doc["metadata"]["labels"]["harness/step"] == "shards"]
    (gate_job,) = [doc for doc in docs if doc["metadata"]["labels"]["harness/step"] == "gate"]
    requests = [doc["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] for doc in shard_jobs]
    assert {"nvidia.com/gpu": 1} in requests and {"npu.intel.com/accel": 1} in requests
    # This test's scenarios have neither GPU nor NPU points: each Job selects a part of the fake ones instead.
    select = {"harness-nightly-gpu": "not failing", "harness-nightly-npu": "failing"}
    ran = []
    for job in shard_jobs:
        spec = job["spec"]
        container = spec["template"]["spec"]["containers"][0]
        job_env = {entry["name"]: entry["value"] for entry in container["env"]}
        assert job["spec"]["completionMode"] == "Indexed" and job_env["HARNESS_SHARD_COUNT"] == str(spec["completions"])
        (command,) = container["args"]
        assert "--shard auto" in command and "$JOB_COMPLETION_INDEX" in command
        for index in range(spec["completions"]):  # Kubernetes sets JOB_COMPLETION_INDEX in each pod
            pod_env = {**env, **job_env, "JOB_COMPLETION_INDEX": str(index)}
            pod_env["HARNESS_SELECT"] = select[job["metadata"]["name"]]
            _shell(command, root, pod_env)
        kind = job["metadata"]["name"].rsplit("-", 1)[1]
        for shard in sorted((root / "results" / kind).glob("shard-*")):
            ran += _ids(shard)
    assert len(ran) == len(set(ran)) and sorted(ran) == _everything(root)
    (gate,) = gate_job["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "harness merge" in gate and "harness gate" in gate
    merge, check = gate.split(" && ")
    _shell(merge, root, env)
    assert _ids(root / "results" / "merged") == _everything(root)
    _shell("harness baseline save results/merged --name nightly --baselines-dir results/baselines", root, env)
    done = subprocess.run(["/bin/sh", "-c", check], cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (root / "results" / "merged" / "summary.md").is_file()
