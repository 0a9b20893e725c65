"""Scenario files found in a folder: the YAML files under it with a top-level ``sweep:`` key, as the pytest
plugin collects a folder named on its command line (``pytest scenarios/``), so ``harness plan scenarios/``
plans the same files. The key is read from the bytes, so a broken scenario is still found (and reported)."""

from __future__ import annotations

import re
from pathlib import Path

SWEEP_KEY = re.compile(rb"""^["']?sweep["']?[ \t]*:""", re.MULTILINE)
SUFFIXES = (".yaml", ".yml")


def has_sweep_key(path: Path) -> bool:
    """``path`` is a regular file, no larger than a scenario may be, with a top-level ``sweep:`` key."""
    from harness.io import read_regular_file
    from harness.scenario.yaml_load import MAX_BYTES

    try:
        head = read_regular_file(path, MAX_BYTES)
    except (OSError, ValueError):  # unreadable, not a regular file, or larger: data, not a scenario
        return False
    return SWEEP_KEY.search(head) is not None


def scenario_files(paths: list[str]) -> list[str]:
    """``paths`` with each folder replaced by the scenario files under it (sorted); files stay as given."""
    out: list[str] = []
    for given in paths:
        folder = Path(given)
        if not folder.is_dir():
            out.append(given)
            continue
        found = sorted(p for p in folder.rglob("*") if p.suffix in SUFFIXES and p.is_file() and has_sweep_key(p))
        out += [str(p) for p in found]
    return out
