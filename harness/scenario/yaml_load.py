"""Bounded, strict YAML for scenario files: what a hostile or careless file cannot do to a run.

Scenario files are small and hand-written, so anything that only a generated or hostile file needs
is refused with a ``ScenarioErrors`` naming the file and line (exit 2, no traceback), in well under
a second: bytes that are not UTF-8, files over ``MAX_BYTES``, anchors and aliases (a few lines of
aliases expand to billions of nodes: "billion laughs"), nesting deeper than ``MAX_DEPTH``, more than
``MAX_NODES`` nodes, and duplicate keys (YAML keeps the last one silently).

``read_text(path)`` and ``compose(text, path)`` replace ``Path.read_text`` and the
``yaml.compose``/``yaml.load`` pair; ``compose`` returns the node tree (for line numbers) and the data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import yaml
from yaml.composer import Composer
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode

from harness.errors import ScenarioError, ScenarioErrors
from harness.io import read_regular_file

try:  # libyaml scans in C; the composer below stays in Python so it can refuse as it goes
    from yaml.cyaml import CParser as _Parser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Parser(Reader, Scanner, Parser):  # type: ignore[no-redef]
        def __init__(self, stream):
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)


MAX_BYTES = 1024 * 1024  # scenario files are a few KiB; prompts that need more belong in a prompt file
MAX_DEPTH = 64
MAX_NODES = 20_000  # PyYAML builds ~100k values a second: this bounds a file's load time


class _Refused(Exception):
    def __init__(self, line: int | None, field: str | None, message: str):
        super().__init__(message)
        self.line, self.field, self.message = line, field, message


def _error(path: str, message: str, line: int | None = None, field: str | None = None) -> ScenarioErrors:
    return ScenarioErrors([ScenarioError(path, message, line, field)])


def read_text(path: str | Path) -> str:
    """The file's text; ScenarioErrors when it cannot be read, is too large or is not UTF-8."""
    name = str(path)
    try:
        data = read_regular_file(path, MAX_BYTES)  # a FIFO or /dev/zero is refused at once, not read
    except OSError as exc:
        raise _error(name, f"cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        if "larger than" not in str(exc):
            raise _error(name, str(exc).removeprefix(f"{name}: ")) from None
        raise _error(
            name,
            f"file is larger than {MAX_BYTES // 1024} KiB; scenario files are small "
            "(put long prompt lists in a prompt file)",
        ) from None
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise _error(
            name, f"not UTF-8: byte 0x{data[exc.start]:02x} at byte offset {exc.start}; save the file as UTF-8", line
        ) from None


def compose(text: str, path: str = "<string>") -> tuple[Node | None, Any]:
    """(YAML node tree, plain data) of one document; ScenarioErrors naming file and line on refusal."""
    if len(text) > MAX_BYTES:
        raise _error(path, f"text is larger than {MAX_BYTES // 1024} KiB; scenario files are small")
    loader = None
    try:
        loader = _Loader(text)
        root = loader.get_single_node()
        return root, (None if root is None else loader.construct_document(root))
    except _Refused as exc:
        raise _error(path, exc.message, exc.line, exc.field) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else _line_at(text, getattr(exc, "position", None))
        problem = getattr(exc, "problem", None) or getattr(exc, "reason", None) or str(exc)
        if "nesting depth" in str(problem):  # libyaml >= 0.2.6 (PyYAML 6.0.3+) stops flow nesting itself
            raise _error(path, f"nested deeper than {MAX_DEPTH} levels", line) from None
        raise _error(path, f"invalid YAML: {problem}", line) from None
    finally:
        if loader is not None:
            loader.dispose()


def _line_at(text: str, position: int | None) -> int | None:
    return None if position is None else text.count("\n", 0, position) + 1


class _Loader(_Parser, Composer, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):
    """SafeLoader whose composer refuses anchors, aliases, depth, size and duplicate keys."""

    def __init__(self, text: str):
        _Parser.__init__(self, text)
        Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)
        self._path: list[Optional[str]] = []
        self._nodes = 0

    def get_single_node(self):  # CParser has its own; it would skip the checks below
        return Composer.get_single_node(self)

    def compose_node(self, parent, index):
        step = index.value if isinstance(index, ScalarNode) else str(index) if isinstance(index, int) else None
        self._path.append(step)
        try:
            self._check(self.peek_event(), len(self._path))
            return super().compose_node(parent, index)
        finally:
            self._path.pop()

    def _check(self, event, depth: int) -> None:
        line = event.start_mark.line + 1
        anchor = getattr(event, "anchor", None)  # an alias names one too
        if anchor is not None:
            kind = "alias *" if isinstance(event, AliasEvent) else "anchor &"
            raise _Refused(
                line,
                self._field(),
                f"YAML anchors and aliases are not allowed in scenario files "
                f"(found {kind}{anchor}); write the value out",
            )
        if depth > MAX_DEPTH:
            raise _Refused(line, None, f"nested deeper than {MAX_DEPTH} levels")
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise _Refused(line, self._field(), f"more than {MAX_NODES:,} YAML values; scenario files are small")

    def _field(self, *more: str) -> str | None:
        return ".".join(step for step in (*self._path, *more) if step is not None) or None

    def compose_mapping_node(self, anchor):
        node: MappingNode = super().compose_mapping_node(anchor)
        first: dict[tuple[str, str], ScalarNode] = {}
        for key, _ in node.value:
            if isinstance(key, ScalarNode) and (key.tag == "tag:yaml.org,2002:merge" or key.value == "<<"):
                # a merge key would fold keys in past the duplicate check below
                raise _Refused(
                    key.start_mark.line + 1,
                    self._field(),
                    "YAML merge keys (<<) are not allowed in scenario files; write the keys out",
                )
            if isinstance(key, ScalarNode):
                seen = first.setdefault((key.tag, key.value), key)
                if seen is not key:
                    raise _Refused(
                        key.start_mark.line + 1,
                        self._field(key.value),
                        f"duplicate key (first on line {seen.start_mark.line + 1}); YAML would silently keep the last",
                    )
        return node

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as exc:  # e.g. a date 2024-13-01, an int of 5,000 digits
            raise _Refused(
                node.start_mark.line + 1, None, f"cannot read {str(node.value)[:40]!r}: {str(exc).split(';')[0]}"
            ) from None
