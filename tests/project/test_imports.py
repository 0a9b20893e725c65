"""The ``harness`` package has no import circles, and importing its front doors loads no engine.

The graph is built statically from every module's ``import`` statements, those inside functions
included (a lazy import still ties two modules together); those under ``if TYPE_CHECKING:`` are left out of
the layer graph and counted in the circle check (a type two modules share belongs below both).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import harness

ROOT = Path(harness.__file__).resolve().parent
ENGINES = ("torch", "transformers", "openvino", "openvino_genai", "nncf", "optimum", "llama_cpp", "pandas")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(node: ast.AST, typing: bool = False):
    """Import statements under ``node``, skipping ``if TYPE_CHECKING:`` bodies unless ``typing``."""
    for child in ast.iter_child_nodes(node):
        typing_only = isinstance(child, ast.If) and _is_type_checking(child.test) and not typing
        for statement in child.orelse if typing_only else [child]:
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                yield statement
            yield from _imports(statement, typing)


def import_graph(typing: bool = False) -> dict[str, set[str]]:
    """Module -> the harness modules it imports (``typing``: those under ``if TYPE_CHECKING:`` too)."""
    files = {module_name(path): path for path in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path)), typing):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
                continue
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:  # `from harness import gate` imports the module harness.correctness.gate
                targets.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base)
        graph[name] = {t for t in targets if t in files and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (as a chain that returns to its start) per strongly connected component."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(node: str) -> None:  # Tarjan
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    found = []
    for component in components:
        start = min(component)
        path, seen = [start], {start}
        while True:  # walk inside the component until a module repeats
            nxt = min(t for t in graph[path[-1]] if t in component)
            if nxt in seen:
                found.append(path[path.index(nxt) :] + [nxt])
                break
            path.append(nxt)
            seen.add(nxt)
    return found


def test_the_graph_sees_lazy_imports_and_skips_type_checking_ones():
    graph = import_graph()
    assert "harness.run.planning" in graph["harness.cli.app"]  # imported inside a function
    assert "harness.scenario.sweep" not in graph["harness.adapters.base"]  # under `if TYPE_CHECKING:`
    assert "harness.scenario.sweep" in import_graph(typing=True)["harness.adapters.base"]
    assert "harness.adapters.hf.moe_capacity" in graph["harness.adapters.hf.expert_routing"]


def test_cycle_finder_reports_the_chain():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(chain) for chain in found)


def test_no_import_cycles_through_typing_only_imports_either():
    found = cycles(import_graph(typing=True))
    assert not found, "import cycles (typing-only imports counted):\n" + "\n".join(" -> ".join(c) for c in found)


def test_front_doors_import_no_engine():
    code = (
        "import sys, harness, harness.cli.app, harness.sdk, harness.cli.options, harness.run.planning\n"
        f"print(','.join(m for m in {ENGINES!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
