"""``harness lm-eval --install-hook`` writes the ``.pth`` file into the environment it runs in, so that every
interpreter that environment starts carries the hook that registers the ``harness`` model when lm-eval loads
its models: the plain ``lm_eval --model harness`` then finds it (run by tests/accuracy/test_task_accuracy.py in
the suite's environment, which ``scripts/setup.sh`` gave the hook)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOOKED = "import sys; print(any(getattr(f, 'harness_lm_eval_hook', False) for f in sys.meta_path))"


def test_install_hook_writes_the_pth_that_hooks_every_interpreter_of_the_environment(tmp_path):
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120)
    python = env / "bin" / "python"
    # the harness and its dependencies from the suite's environment, by path (no .pth of that one is read)
    paths = {"PYTHONPATH": os.pathsep.join([str(ROOT), sysconfig.get_paths()["purelib"]])}

    def run(*argv: str) -> str:
        done = subprocess.run(
            [str(python), *argv], env={**os.environ, **paths}, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip()

    assert run("-c", HOOKED) == "False"
    written = run("-m", "harness.cli", "lm-eval", "--install-hook")
    site = Path(run("-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"))
    assert written == f"wrote {site / 'harness-lm-eval.pth'}" and (site / "harness-lm-eval.pth").is_file()
    assert run("-c", HOOKED) == "True"
