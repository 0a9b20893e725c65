"""Every name has one address: code imports a name from the module that defines it.

A re-export (module B imports a name from A so that others can import it from B) gives one thing two
addresses; after a module is split, the old address lives on and readers cannot tell which is the home.
Only the SDK (``harness.sdk``, the documented face for adapter authors), the deprecated alias
``harness.results`` and package ``__init__`` faces may hand out names they do not define.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import harness

PACKAGE = Path(harness.__file__).resolve().parent
REPO = PACKAGE.parent
FACES = {"harness.sdk", "harness.results"}
SCANNED = ("harness", "tests", "benchmarks", "scripts", "examples")


def _module_file(module: str) -> Path | None:
    base = REPO.joinpath(*module.split("."))
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


@cache
def _defined(module: str) -> frozenset[str]:
    """Names a module binds itself at top level (functions, classes, assignments, in ``if``/``try`` too)."""
    path = _module_file(module)
    assert path is not None, module
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return frozenset(names)


def second_addresses(path: Path, root: Path = REPO) -> list[str]:
    """``from harness.M import n`` where ``n`` is neither defined in M nor a submodule of M (M not a face)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("harness")):
            continue
        module = node.module or ""
        home = _module_file(module)
        if home is None or home.name == "__init__.py" or module in FACES:
            continue
        for alias in node.names:
            if alias.name in _defined(module) or _module_file(f"{module}.{alias.name}") is not None:
                continue
            found.append(
                f"{path.relative_to(root)}:{node.lineno}: {alias.name} imported from {module}, which does not define it"
            )
    return found


def python_files():
    for folder in SCANNED:
        yield from sorted((REPO / folder).rglob("*.py"))


def test_every_import_names_the_module_that_defines_the_name():
    found = [line for path in python_files() for line in second_addresses(path)]
    assert not found, "import each name from its home module:\n" + "\n".join(found)


def test_no_module_keeps_a_re_export_block():
    """A ``noqa: F401`` on a ``from harness...`` import outside the faces is a re-export in waiting."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts)
        if path.name == "__init__.py" or module in FACES:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith("from harness") and "noqa: F401" in line:
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_checker_sees_a_second_address(tmp_path):
    """The check itself can fail: an import through ``harness.correctness.gate`` of a name gate only imports."""
    importer = tmp_path / "probe.py"
    importer.write_text("from harness.correctness.gate import Reference\n", encoding="utf-8")
    assert second_addresses(importer, root=tmp_path) == [
        "probe.py:1: Reference imported from harness.correctness.gate, which does not define it"
    ]
