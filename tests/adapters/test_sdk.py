"""The adapter SDK (``harness.sdk``) is all a third-party adapter needs, and old import paths still work."""

from __future__ import annotations

import ast
from pathlib import Path

from harness import sdk

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "numpy_adapter" / "harness_numpy_adapter.py"
REPO = Path(__file__).resolve().parents[2]


def harness_imports(path: Path) -> set[str]:
    """Every ``harness`` module a file imports, at any depth."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "harness")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "harness":
            found.add(node.module)
    return found


def test_the_example_adapter_imports_only_the_sdk():
    assert harness_imports(EXAMPLE) == {"harness.sdk"}


def test_every_sdk_name_resolves():
    for name in sdk.__all__:
        assert getattr(sdk, name) is not None, name
    assert sdk.NumpyLlamaRunner.__name__ == "NumpyLlamaRunner"  # imported on first use
