"""The launch-level test of the regression check as a small protocol, and the registry that names them.

A launch test compares one metric's launch values (each launch's median is one value) on the two sides of
a point and says how likely a worsening (and an improvement) is under no change. The check
(``harness.regression.check``) holds the false discovery rate over every test of a run with
Benjamini-Hochberg, calls the verdicts and writes the notes; a test only supplies the p-values and what its
launch counts can reach. ``--launch-test NAME`` (``--harness-launch-test`` under pytest) picks one by name.

A new statistic is one module with a class that meets ``LaunchTest`` plus one line in ``BUILT_IN`` (or a
``register(...)`` call from anywhere, e.g. a test module).
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from typing import Optional, Protocol, Sequence, Union

from harness.errors import UsageError

DEFAULT = "mann-whitney"


@dataclass(frozen=True)
class Comparison:
    """What a launch test says about one metric of one point: one-sided p-values under no change."""

    worse_p: float  # that the new values are worse than the baseline's
    better_p: float  # that they are better


@dataclass(frozen=True)
class Case:
    """One metric of one point: its launch values on each side and which way is better."""

    base: Sequence[float]
    new: Sequence[float]
    higher_is_better: bool


class LaunchTest(Protocol):
    """One statistic over launch values. Implementations are stateless; the registry builds one per name.
    Subclass it to inherit ``compare_many``; override that only to batch (a nightly check runs hundreds)."""

    name: str  # the registry key, as ``--launch-test`` takes it
    label: str  # as a finding names its p-value: "Mann-Whitney p=0.004"
    description: str  # as the check's closing note names the test: "one-sided Mann-Whitney U"
    min_launches: int  # ok launches a side it needs; with fewer the one-launch spread rule judges the metric

    def compare(self, base: Sequence[float], new: Sequence[float], higher_is_better: bool) -> Comparison:
        """The one-sided p-values of ``new`` against ``base``; ``higher_is_better`` says which way is worse."""
        ...

    def compare_many(self, cases: Sequence[Case]) -> list[Comparison]:
        """``compare`` of every case, in order (the check calls this once per run)."""
        return [self.compare(case.base, case.new, case.higher_is_better) for case in cases]

    def min_p(self, n_base: int, n_new: int) -> float:
        """The smallest p-value samples of these sizes can reach (the check's power notes)."""
        ...

    def detectable_change(
        self, cv: float, n_base: int, n_new: int, level: float, limit: float, higher_is_better: bool
    ) -> Optional[float]:
        """The worsening called different in 80 % of nights at these launches and launch-to-launch ``cv``, the
        test run at ``level`` with the threshold ``limit``; None when it cannot be told."""
        ...

    def launches_to_detect(
        self, cv: float, change: float, level: float, limit: float, higher_is_better: bool
    ) -> Optional[int]:
        """Launches a side that would show ``change`` different in 80 % of nights; None beyond the search."""
        ...


def launches_needed(test: LaunchTest, p: float) -> int:
    """Launches a side (equal on both) for ``test`` to be able to reach ``p`` at all."""
    n = max(2, test.min_launches)
    while test.min_p(n, n) > p:
        n += 1
    return n


# name -> "module:attribute", imported on first use (``harness gate --help`` imports no statistics library)
BUILT_IN: dict[str, str] = {
    "mann-whitney": "harness.regression.mann_whitney:MannWhitney",
}
_registered: dict[str, Union[str, type]] = dict(BUILT_IN)


def register(name: str, test: Union[str, type]) -> None:
    """Register a launch-test class (or its ``"module:attribute"``) under ``name``; a clash is refused."""
    if name in _registered and _registered[name] != test:
        raise ValueError(f"launch test {name!r} is already registered ({_registered[name]!r})")
    _registered[name] = test


def unregister(name: str) -> None:
    """Remove a registration made with ``register`` (tests registering a toy statistic clean up with it)."""
    if name in BUILT_IN:
        raise ValueError(f"launch test {name!r} is built in")
    _registered.pop(name, None)


def names() -> list[str]:
    return sorted(_registered)


def get(name: str, option: str = "--launch-test") -> LaunchTest:
    """The launch test registered as ``name``; an unknown name is a UsageError naming the option and the
    closest registered name."""
    found = _registered.get(name)
    if found is None:
        close = difflib.get_close_matches(name, names(), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UsageError(f"{option}: no launch test {name!r} (registered: {', '.join(names())}){hint}")
    if isinstance(found, str):
        module, _, attribute = found.partition(":")
        found = getattr(importlib.import_module(module), attribute)
    test = found()
    if test.name != name:
        raise ValueError(f"launch test registered as {name!r} calls itself {test.name!r}")
    return test
