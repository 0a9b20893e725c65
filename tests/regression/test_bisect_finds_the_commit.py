"""``harness bisect`` on a repository of a few commits, one of which makes the engine slower: the build command
copies the commit's speed knob where the fake engine reads it, and ``git bisect run`` with the regression check's
verdict names that commit and the change's interval."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.tiny_scenario import tiny

ROOT = Path(__file__).resolve().parents[2]

# `harness` with the knob engine registered (no real engine runs); git bisect run calls it for each step.
SHIM = f"""#!/bin/sh
exec {sys.executable} -c 'import sys
from harness.adapters import registry
from tests.fakes import KnobAdapter
registry.register_adapter(KnobAdapter)
from harness.cli.app import main
sys.exit(main())' "$@"
"""

# Per-token sleep of each commit: the third commit makes every token five times slower.
SPEEDS = ("0.01", "0.01", "0.05", "0.05")


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _repository(tmp_path: Path) -> tuple[Path, list[str]]:
    repo = tmp_path / "engine"
    repo.mkdir()
    _git(repo, "init", "--quiet", "-b", "main")
    _git(repo, "config", "user.email", "test@example.com")
    _git(repo, "config", "user.name", "test")
    (repo / "bench.yaml").write_text(
        tiny(name="bench", sweep={"adapter": ["fake-knob"]}, generation={"max_new_tokens": 4})
    )
    commits = []
    for i, speed in enumerate(SPEEDS):
        (repo / "speed.txt").write_text(speed)
        (repo / "notes.txt").write_text(f"change {i}\n")
        _git(repo, "add", "-A")
        _git(repo, "commit", "--quiet", "-m", f"commit {i}: step {speed} s")
        commits.append(_git(repo, "rev-parse", "HEAD"))
    return repo, commits


def _env(tmp_path: Path) -> dict:
    (tmp_path / "bin").mkdir()
    shim = tmp_path / "bin" / "harness"
    shim.write_text(SHIM)
    shim.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{tmp_path / 'bin'}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["HARNESS_FAKE_KNOB"] = str(tmp_path / "built-speed")
    return env


def test_bisect_names_the_commit_that_slowed_the_engine_with_its_interval(tmp_path):
    repo, commits = _repository(tmp_path)
    env = _env(tmp_path)
    command = [
        "harness", "bisect", "--good", commits[0], "--bad", commits[-1], "engine/bench.yaml", "-k", "fake-knob",
        "--build", f'cp speed.txt "{env["HARNESS_FAKE_KNOB"]}"', "--launches", "6", "--max-regression", "tpot=10%",
        "--reference-dir", str(tmp_path / "references"), "--work", str(tmp_path / "work"), "--repo", "engine",
    ]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"first bad commit: {commits[2]} commit 2: step 0.05 s" in done.stdout
    different = [line for line in done.stdout.splitlines() if line.strip().startswith("DIFFERENT bench::")]
    assert different and all("(worse)" in line and "[95% CI +" in line for line in different), done.stdout
    assert _git(repo, "rev-parse", "HEAD") == commits[-1]  # git bisect reset: the repository is back on main
    assert _git(repo, "branch", "--show-current") == "main"
    assert (tmp_path / "work" / "steps" / f"{commits[2]}.json").is_file()  # each step's verdict stays in --work
