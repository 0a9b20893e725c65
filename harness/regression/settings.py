"""What the regression check reads, as one frozen object: built once from ``harness gate``'s options or the
pytest plugin's (``harness.cli.regression_options.regression_settings``), then passed whole to
``harness.regression.entry.run_check`` and on to ``check`` and ``confirm``. Pure data, no parsing."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from harness.regression import launch_test
from harness.regression.thresholds import DEFAULT_FDR, Threshold


@dataclass(frozen=True)
class RegressionSettings:
    thresholds: Sequence[Threshold]  # which metric may worsen by how much (--max-regression); kept as a tuple
    fdr: float = DEFAULT_FDR  # false discovery rate over every launch-level test of a run (--fdr)
    accept: frozenset[str] = frozenset()  # fingerprint fields whose difference is accepted (--accept-difference)
    fail_on_unknown: bool = False  # exit 4 on an inconclusive test or a not-judged point (--fail-on-unknown)
    launch_test: str = launch_test.DEFAULT  # the registered launch test's name (--launch-test)
    baseline: Optional[str] = None  # a saved baseline's name or a path to records (--baseline)
    baselines_dir: Path = field(default=Path("baselines"))  # where named baselines live (--baselines-dir)
    json_path: Optional[str] = None  # also write the result as JSON (--json; pytest --harness-regression-json)

    def __post_init__(self) -> None:
        object.__setattr__(self, "thresholds", tuple(self.thresholds))
