"""The documentation site builds in strict mode, and the README front page stays short with working links."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
# [text](target) or ![alt](target); the target ends at whitespace or the closing parenthesis.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)")


def relative_links(markdown: str) -> list[str]:
    """Link targets that point into the repository (not URLs, not anchors within the page)."""
    return [t for t in LINK.findall(markdown) if not re.match(r"[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")]


# What mkdocs.yml needs: the import name of each package, and the package that provides it.
SITE_PACKAGES = {"mkdocs": "mkdocs", "material": "mkdocs-material", "mkdocstrings_handlers": "mkdocstrings-python"}
MISSING = [package for module, package in SITE_PACKAGES.items() if importlib.util.find_spec(module) is None]


@pytest.mark.skipif(bool(MISSING), reason=f"the docs site cannot be built here: {', '.join(MISSING)} not installed")
def test_site_builds_strict(tmp_path):
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (site / "index.html").is_file()
    for page in ("getting-started", "gate", "statistics", "architecture", "adapters"):
        assert (site / page / "index.html").is_file(), page
    sdk = (site / "sdk" / "index.html").read_text(encoding="utf-8")
    for name in ("Adapter", "register_adapter", "PointSkipped", "GenerationTrace"):
        assert f'id="harness.sdk.{name}"' in sdk, name  # the API reference is generated from the docstrings
    assert (site / "quickstart-report.png").is_file()


def test_readme_is_a_front_page():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < 220, f"README.md has {len(lines)} lines: move details into docs/"


def test_readme_links_resolve():
    targets = relative_links(README.read_text(encoding="utf-8"))
    assert targets, "README.md links nowhere"
    missing = [t for t in targets if not (ROOT / t.split("#", 1)[0]).exists()]
    assert not missing, f"README.md links to missing files: {missing}"
