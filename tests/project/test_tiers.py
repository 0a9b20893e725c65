"""The tier table (tests/tiers.py) covers every test file, names only tests that exist, and its guard
refuses what a unit test may not do."""

from __future__ import annotations

import ast
import builtins
import subprocess
from pathlib import Path

import pytest

from tests import tiers

TESTS = Path(tiers.__file__).parent


def _test_files() -> set[str]:
    return {p.relative_to(TESTS).as_posix() for p in TESTS.rglob("test_*.py") if "data" not in p.parts}


def test_every_test_file_has_a_tier_and_every_entry_is_a_test_file():
    files = _test_files()
    missing, stale = sorted(files - set(tiers.TABLE)), sorted(set(tiers.TABLE) - files)
    assert not missing, f"test files without a tier: add them to TABLE in tests/tiers.py: {missing}"
    assert not stale, f"TABLE in tests/tiers.py names files that do not exist: {stale}"


def test_every_tier_is_a_registered_tier_and_every_named_test_exists():
    problems = []
    for path, entry in tiers.TABLE.items():
        functions = {
            node.name
            for node in ast.walk(ast.parse((TESTS / path).read_text(encoding="utf-8")))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
        }
        for tier in (entry.default, *entry.differ.values()):
            if tier not in tiers.TIERS:
                problems.append(f"{path}: tier {tier!r} is not one of {tiers.TIERS}")
        for name in (*entry.differ, *(s for s in entry.slow if s != "*")):
            if name not in functions:
                problems.append(f"{path}: no test function {name}")
    assert not problems, "\n".join(problems)


def test_the_guard_refuses_a_process_and_an_engine_import_and_records_both():
    violations: list[str] = []
    before = subprocess.Popen._execute_child, builtins.__import__
    with tiers.guard(violations):
        with pytest.raises(tiers.TierViolation, match="starts a process"):
            subprocess.run(["true"], check=True)
        with pytest.raises(tiers.TierViolation, match="imports torch.nn"):
            import torch.nn  # noqa: F401
        with pytest.raises(tiers.TierViolation, match="imports transformers"):
            __import__("importlib").import_module("transformers")
    assert violations == ["starts a process (subprocess)", "imports torch.nn", "imports transformers"]
    assert (subprocess.Popen._execute_child, builtins.__import__) == before  # restored on exit


def test_the_guard_lets_the_rest_through():
    violations: list[str] = []
    with tiers.guard(violations):
        import json  # noqa: F401

        from harness.regression import check  # noqa: F401
    assert violations == []
