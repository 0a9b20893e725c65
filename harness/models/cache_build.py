"""Building a cache entry once: into a temporary directory renamed into place when complete, under a lock so
builders take turns, with a killed build's leftovers removed (and said), and each build's seconds told to
whoever times them (a point's clock counts them as conversion). Model checkpoints (``harness.models.sources``)
and every engine's converted artefacts are built through it."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Callable, Iterator, Optional


class NotBuilt(Exception):
    """Raised inside ``no_builds`` where something would be built."""


_no_builds: ContextVar[bool] = ContextVar("harness_no_builds", default=False)


def may_build() -> None:
    """Raise ``NotBuilt`` inside ``no_builds``: every builder asks before it starts."""
    if _no_builds.get():
        raise NotBuilt


@contextmanager
def no_builds() -> Iterator[None]:
    """Inside, a build is refused (``NotBuilt``): a look at what is in the cache already."""
    token = _no_builds.set(True)
    try:
        yield
    finally:
        _no_builds.reset(token)


def build_once(target: Path, build: Callable[[Path], None], marker: str) -> bool:
    """Build the directory ``target`` unless ``target/marker`` exists; True when built now.

    The build goes into a temporary directory beside ``target`` that is renamed into place when complete,
    so a crash never leaves half an artefact under the name. Builders of one target take turns under a lock
    beside it (the second finds the first's result), and under it the leftovers of a killed build (its
    temporary directory, or a ``target`` without ``marker``) are removed with a note (``notes_to``), never used.
    """
    from harness.io import locked

    if (target / marker).exists():
        return False
    may_build()
    with locked(target):
        if (target / marker).exists():  # another process built it while this one waited
            return False
        _remove_leftovers(target)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}{_BUILDING}", dir=target.parent))
        outermost, start = _timed.get() is not None and not _inside.get(), time.perf_counter()
        inside = _inside.set(True)  # a build inside this one is part of its time
        try:
            build(tmp)
            os.rename(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        finally:  # a failed build's time too: it went to converting, not to loading
            _inside.reset(inside)
            if outermost:
                _timed.get()(time.perf_counter() - start)  # type: ignore[misc]
    return True


# Who hears how long each build took (``builds_timed``: a point's clock, whose time split counts them as
# conversion), and whether a build is running in this context (a nested build is counted in its outer one).
_timed: ContextVar[Optional[Callable[[float], None]]] = ContextVar("harness_build_time", default=None)
_inside: ContextVar[bool] = ContextVar("harness_inside_build", default=False)


@contextmanager
def builds_timed(hear: Callable[[float], None]) -> Iterator[None]:
    """Tell ``hear`` the seconds of every build ``build_once`` makes inside, failed ones included."""
    token = _timed.set(hear)
    try:
        yield
    finally:
        _timed.reset(token)


# Where build notes go: the point's log while a point runs (``notes_to``; a worker's reaches the parent with
# its record), else stderr.
_notes: ContextVar[Optional[Callable[[str], None]]] = ContextVar("harness_build_notes", default=None)


@contextmanager
def notes_to(log: Callable[[str], None]) -> Iterator[None]:
    """Send the notes of builds made inside (``build_once``'s removed leftovers) to ``log``."""
    token = _notes.set(log)
    try:
        yield
    finally:
        _notes.reset(token)


def _note(text: str) -> None:
    log = _notes.get()
    if log is None:
        print(text, file=sys.stderr)
    else:
        log(text)


_BUILDING = ".building-"  # a temporary build directory's name: .<target><_BUILDING><mkdtemp's 8 characters>


def _remove_leftovers(target: Path) -> None:
    """Under ``target``'s lock: what a killed build of it left, removed with a note (no build of it runs now)."""
    import re

    own = re.compile(rf"\.{re.escape(target.name)}({re.escape(_BUILDING)}|-)[a-z0-9_]{{8}}")  # `-`: older harnesses
    leftovers = [p for p in target.parent.iterdir() if own.fullmatch(p.name) and p.is_dir()]
    if target.exists():
        leftovers.append(target)  # there but incomplete: a copy cut short, or a build from before the lock
    for path in leftovers:
        _note(f"note: removing {path}, the unfinished build of an interrupted run; building it again")
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
