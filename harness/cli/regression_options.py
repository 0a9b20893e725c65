"""The regression check's options (``harness gate`` and the pytest plugin's ``--harness-baseline``), the
baseline store's, and ``--fail-on-unknown`` / ``--accept-difference``, with the one parser that turns them into
``RegressionSettings`` for both front ends (``regression_settings``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Callable, Optional

if TYPE_CHECKING:
    from harness.regression.settings import RegressionSettings


def add_baseline_options(add, prefix: str = "") -> None:
    add(
        f"--{prefix}baselines-dir",
        dest="harness_baselines_dir",
        metavar="DIR",
        default="baselines",
        help="where named baselines live (default: baselines)",
    )


def add_regression_options(add, prefix: str = "", required: bool = True) -> None:
    """Regression-check options, shared by ``harness gate`` and the pytest plugin (``--harness-baseline``)."""
    from harness.regression.thresholds import DEFAULT_FDR, DEFAULT_THRESHOLDS

    add(
        f"--{prefix}baseline",
        dest="harness_baseline",
        metavar="NAME",
        required=required,
        default=None,
        help="baseline name (see `harness baseline save`) or a path to its records",
    )
    shown = DEFAULT_THRESHOLDS.replace("%", "%%")  # argparse formats help with %
    add(
        f"--{prefix}max-regression",
        dest="harness_max_regression",
        metavar="METRIC=PCT,...",
        default=DEFAULT_THRESHOLDS,
        help=f"allowed worsening per metric (default {shown}), a floor: with launches "
        "on both sides a change must also be significant (Mann-Whitney U, Benjamini-Hochberg); with one "
        "launch it must exceed the larger per-round interquartile range",
    )
    add(
        f"--{prefix}fdr",
        dest="harness_fdr",
        type=float,
        default=DEFAULT_FDR,
        metavar="Q",
        help=f"false discovery rate over all of a run's launch-level tests (default {DEFAULT_FDR:g})",
    )
    from harness.regression import launch_test

    add(
        f"--{prefix}launch-test",
        dest="harness_launch_test",
        metavar="NAME",
        default=launch_test.DEFAULT,
        help=f"the launch-level test of each metric (default {launch_test.DEFAULT}; "
        f"registered: {', '.join(launch_test.names())})",
    )
    add_accept_option(add, prefix)
    add_unknown_option(add, prefix)
    add(
        regression_json_flag(prefix),
        dest="harness_regression_json",
        metavar="FILE",
        default=None,
        help="also write the outcome as JSON: verdict, exit code, problems, and every test's verdict, "
        "change, 95 %% interval and detectable change",
    )
    if prefix:  # pytest's old spelling, hidden, for one release: regression_settings warns and reads it
        add(f"--{prefix}gate-json", dest="harness_gate_json", default=None, help=argparse.SUPPRESS)


def regression_json_flag(prefix: str = "") -> str:
    """``harness gate --json``; under pytest ``--harness-regression-json`` (which of pytest's outputs it is)."""
    return f"--{prefix}regression-json" if prefix else "--json"


def regression_settings(options, prefix: str = "", warn: Optional[Callable[[str], None]] = None) -> RegressionSettings:
    """Every option the regression check reads, parsed once into ``RegressionSettings`` (``harness gate`` and
    the pytest plugin alike, before anything runs): a bad value is a UsageError naming the option as the
    front end spells it. An old spelling still given is read, and ``warn`` gets one line naming the new one."""
    from pathlib import Path

    from harness.errors import UsageError
    from harness.regression import launch_test
    from harness.regression.settings import RegressionSettings
    from harness.regression.thresholds import parse_thresholds

    json_path = options.harness_regression_json
    old = getattr(options, "harness_gate_json", None)  # only the pytest plugin defines the old spelling
    if old:
        new_flag = regression_json_flag(prefix)
        if warn is not None:
            warn(f"--{prefix}gate-json is deprecated and will be removed in the next release; use {new_flag}")
        if json_path and json_path != old:
            raise UsageError(f"--{prefix}gate-json {old} and {new_flag} {json_path}: give one ({new_flag})")
        json_path = old
    thresholds = parse_thresholds(options.harness_max_regression)
    fdr = regression_fdr(options, prefix)
    accept = accepted_differences(options, prefix)
    launch_test.get(options.harness_launch_test, f"--{prefix}launch-test")  # an unknown name fails here
    if json_path:
        if not options.harness_baseline:
            raise UsageError(
                f"{regression_json_flag(prefix)} {json_path}: needs --{prefix}baseline NAME (the check it reports)"
            )
        from harness.io import check_writable_file

        check_writable_file(json_path, regression_json_flag(prefix))
    return RegressionSettings(
        thresholds,
        fdr=fdr,
        accept=accept,
        fail_on_unknown=options.harness_fail_on_unknown,
        launch_test=options.harness_launch_test,
        baseline=options.harness_baseline,
        baselines_dir=Path(options.harness_baselines_dir),
        json_path=json_path,
    )


def add_accept_option(add, prefix: str = "") -> None:
    """``--accept-difference``: fingerprint fields whose difference the user accepts (gate and compare)."""
    from harness.records.fingerprint import FIELDS

    add(
        f"--{prefix}accept-difference",
        dest="harness_accept_difference",
        metavar="FIELD,...",
        default=None,
        help="compare records whose fingerprints differ in these fields anyway (otherwise such a pair is "
        f"incomparable, exit 3): {', '.join(FIELDS)}, or all",
    )


def add_unknown_option(add, prefix: str = "") -> None:
    """``--fail-on-unknown``: exit 4 on what was not decided (``harness run``, ``verify``, ``gate`` and pytest)."""
    add(
        f"--{prefix}fail-on-unknown",
        dest="harness_fail_on_unknown",
        action="store_true",
        help="exit 4 when nothing failed but something was not decided: a point whose gate is NOT JUDGED (its "
        "top-k checks passed, its KL tier had fewer teacher-forced positions than gate.min_positions), or, "
        "against a baseline, a launch-level comparison neither different nor the same (UNKNOWN); "
        "default: exit 0 and say so",
    )


def unknown_exit(records, fail_on_unknown: bool) -> int:
    """The exit status of runs where nothing failed: ``EXIT_INCONCLUSIVE`` when a point's gate is not judged
    and ``--fail-on-unknown`` asks to fail on that, else 0."""
    from harness.errors import EXIT_INCONCLUSIVE

    return EXIT_INCONCLUSIVE if fail_on_unknown and any(r.not_judged for r in records) else 0


def accepted_differences(options, prefix: str = "") -> frozenset[str]:
    from harness.errors import UsageError
    from harness.records.fingerprint import parse_accepted

    try:
        return parse_accepted(options.harness_accept_difference)
    except ValueError as exc:
        raise UsageError(str(exc).replace("--accept-difference", f"--{prefix}accept-difference")) from None


def regression_fdr(options, prefix: str = "") -> float:
    from harness.errors import UsageError

    fdr = options.harness_fdr
    if not 0 < fdr < 1:
        raise UsageError(f"--{prefix}fdr: expected a false discovery rate between 0 and 1 (e.g. 0.05), got {fdr}")
    return fdr
