"""Adapter registry: entry points (group ``harness.adapters``) plus in-process registrations.

Entry points are resolved lazily, so listing names never imports an adapter module, and importing an
adapter module never imports its engine (engines load inside ``Adapter.load``).
"""

from __future__ import annotations

import difflib
import functools
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

from harness.errors import UnknownAdapter

if TYPE_CHECKING:
    from harness.adapters.base import Adapter

ENTRY_POINT_GROUP = "harness.adapters"

_registered: dict[str, type[Adapter]] = {}


def register_adapter(cls: type[Adapter]) -> type[Adapter]:
    """Class decorator for adapters defined in-process (tests, notebooks, plugins without packaging)."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"{cls.__qualname__} needs a non-empty string class attribute 'name'")
    existing = _registered.get(name)
    if existing is not None and existing is not cls:
        raise ValueError(f"adapter name {name!r} is already registered by {existing.__qualname__}")
    _registered[name] = cls
    return cls


def in_process() -> dict[str, type[Adapter]]:
    """Adapters registered with ``register_adapter`` (not through entry points)."""
    return dict(_registered)


def unregister_adapter(name: str) -> None:
    _registered.pop(name, None)


@functools.cache
def _entry_points() -> dict:
    """Scanned once per process: reading every installed distribution's metadata costs tens of ms, and a
    point asks several times. A package installed while a process runs is seen by the next process."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def names() -> list[str]:
    """Every adapter name known here, without importing any adapter."""
    return sorted(set(_entry_points()) | set(_registered))


def get(name: str) -> type[Adapter]:
    """Return the adapter class registered under ``name`` (imports its module, not its engine)."""
    if name in _registered:
        return _registered[name]
    eps = _entry_points()
    if name not in eps:
        close = difflib.get_close_matches(name, names(), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UnknownAdapter(f"unknown adapter {name!r}{hint} (known: {', '.join(names()) or 'none'})")
    cls = eps[name].load()
    if getattr(cls, "name", None) != name:
        raise UnknownAdapter(
            f"entry point {name!r} -> {eps[name].value} names a class whose name is "
            f"{getattr(cls, 'name', None)!r}; they must agree"
        )
    return cls
