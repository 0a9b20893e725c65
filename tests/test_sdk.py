"""The adapter SDK (``harness.sdk``) is all a third-party adapter needs, and old import paths still work."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from harness import sdk

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "numpy_adapter" / "harness_numpy_adapter.py"
REPO = Path(__file__).resolve().parents[1]


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


def test_old_adapters_package_warns_and_gives_the_same_classes():
    code = (
        "import warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    from adapters.hf import HFAdapter as Old\n"
        "    from adapters.npu_reference import NumpyLlamaRunner as OldRunner\n"
        "from harness.adapters.hf import HFAdapter\n"
        "from harness.adapters.xrt.npu_reference import NumpyLlamaRunner\n"
        "assert Old is HFAdapter and OldRunner is NumpyLlamaRunner\n"
        "print(sorted({w.category.__name__ for w in caught}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "['DeprecationWarning']", out.stdout + out.stderr
