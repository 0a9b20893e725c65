"""``-k``: which sweep points a run keeps, with pytest's expression language over the points' names.

An expression is pytest's ``-k`` grammar: words joined by ``and``, ``or``, ``not`` and parentheses. A word
matches a point (``scenario::id``) by pytest's rule, a case-insensitive substring, with two refinements so
that a word names what it looks like it names: a word that is some point's whole id matches that id only,
and a word that is a whole dash-separated part of some point's id (``f16``, ``cpu``, ``prompt32``) matches
points having that part, so ``-k f16`` no longer also runs the ``bf16`` points. ``-k`` given several times
keeps the points any of them selects. Pure: no I/O, no pytest import.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence, Union

from harness.errors import UsageError

_TOKEN = re.compile(r"\s*(\(|\)|[\w:+\-.\[\]\\/]+)")
_KEYWORDS = ("and", "or", "not")


@dataclass(frozen=True)
class Word:
    text: str


@dataclass(frozen=True)
class Not:
    operand: "Node"


@dataclass(frozen=True)
class Both:
    left: "Node"
    right: "Node"


@dataclass(frozen=True)
class Either:
    left: "Node"
    right: "Node"


Node = Union[Word, Not, Both, Either]


def _tokens(text: str, option: str) -> list[str]:
    out, at = [], 0
    while at < len(text):
        if text[at:].strip() == "":
            break
        found = _TOKEN.match(text, at)
        if not found:
            raise UsageError(f"{option} {text!r}: unexpected character {text[at:].lstrip()[0]!r} at column {at + 1}")
        out.append(found.group(1))
        at = found.end()
    return out


def parse(text: str, option: str = "-k") -> Node:
    """The expression tree of one ``-k`` (or ``option``) value; a UsageError quoting it when it is not an
    expression."""
    tokens = _tokens(text, option)
    if not tokens:
        raise UsageError(f"{option} {text!r}: expected an expression (words joined by and, or, not, parentheses)")
    position = 0

    def peek() -> str | None:
        return tokens[position] if position < len(tokens) else None

    def take() -> str:
        nonlocal position
        position += 1
        return tokens[position - 1]

    def fail(expected: str):
        got = peek()
        return UsageError(f"{option} {text!r}: expected {expected}, got {'the end' if got is None else repr(got)}")

    def either() -> Node:
        node = both()
        while peek() == "or":
            take()
            node = Either(node, both())
        return node

    def both() -> Node:
        node = negated()
        while peek() == "and":
            take()
            node = Both(node, negated())
        return node

    def negated() -> Node:
        token = peek()
        if token == "not":
            take()
            return Not(negated())
        if token == "(":
            take()
            node = either()
            if peek() != ")":
                raise fail("')'")
            take()
            return node
        if token is None or token in (")", *_KEYWORDS):
            raise fail("a word")
        return Word(take())

    tree = either()
    if peek() is not None:
        raise fail("and, or or the end")
    return tree


def _parts(point_id: str) -> set[str]:
    return set(point_id.lower().split("-"))


def selector(expressions: Sequence[str], names: Iterable[tuple[str, str]]) -> Callable[[str, str], bool]:
    """``(scenario name, point id) -> kept`` for the ``-k`` values ``expressions`` (any of them), ``names``
    being every (scenario, point id) of the run: they decide which words are whole ids or id parts."""
    trees = [parse(text) for text in expressions]
    names = list(names)
    ids = {point_id.lower() for _, point_id in names}
    parts = set().union(*(_parts(point_id) for _, point_id in names)) if names else set()

    def word(text: str, scenario: str, point_id: str) -> bool:
        text, point_id = text.lower(), point_id.lower()
        if text in ids:
            return point_id == text
        if text in parts:
            return text in _parts(point_id)
        return text in f"{scenario}::{point_id}".lower()

    return lambda scenario, point_id: any(holds(tree, lambda text: word(text, scenario, point_id)) for tree in trees)


def holds(node: Node, word: Callable[[str], bool]) -> bool:
    """The expression's truth, ``word`` saying whether each of its words holds."""
    if isinstance(node, Word):
        return word(node.text)
    if isinstance(node, Not):
        return not holds(node.operand, word)
    if isinstance(node, Both):
        return holds(node.left, word) and holds(node.right, word)
    return holds(node.left, word) or holds(node.right, word)
