"""The layer order of ``harness`` (the import-linter contract in pyproject.toml, docs/architecture.md) holds."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(
    importlib.util.find_spec("importlinter") is None,
    reason="import-linter is not installed (pip install import-linter): the layer contract cannot be checked",
)
def test_layers_contract_is_kept():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(  # what `lint-imports` runs, with this checkout's harness first on the path
        [
            sys.executable,
            "-c",
            "from importlinter.cli import lint_imports; raise SystemExit(lint_imports(no_cache=True))",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
