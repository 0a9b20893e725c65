"""Option definitions shared by the ``harness`` command line and the pytest plugin (defined once: the
plugin adds them with the ``harness-`` prefix), and the helpers that read them."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Optional

from harness.run.launchers import LAUNCHERS

MAX_TIMEOUT_S = 7 * 24 * 3600.0  # a week: past that a point is hung, not slow
MIN_MEMORY_LIMIT_MB = 1024  # below this the worker cannot import an engine: every point would fail alike


VERIFY_RESULTS_HELP = (
    "write one gate-only record per point, DIR/<scenario>/<point id>.verify.json: the verdict, per-phase KL, "
    "same-weights and dequantized checks, diagnosis, the gated path and notes; no timing, never over a "
    "`harness run` record (report, export, gate and history add read it). Without --results no record is "
    "written (gate references still go to results/references, or --reference-dir)"
)


def bounded(kind: type, low: float, high: float | None, what: str):
    """An argparse type: a finite ``kind`` (int or float) in [low, high] (no upper end when ``high`` is
    None); the error says the range."""

    def show(value: float) -> str:
        return f"{value:,}" if kind is int else f"{value:g}"

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: expected {what}") from None
        if not math.isfinite(value) or value < low or (high is not None and value > high):
            span = f"at least {show(low)}" if high is None else f"between {show(low)} and {show(high)}"
            raise argparse.ArgumentTypeError(f"{text!r}: expected {what}, {span}")
        return value

    parse.__name__ = what  # argparse names the type in its messages
    return parse


def add_plan_options(add, prefix: str = "") -> None:
    """Options that shape how scenario files are planned: ``harness check``, ``run``, ``verify``, pytest."""
    from harness.scenario.sweep import DEFAULT_MAX_POINTS

    add(
        f"--{prefix}max-points",
        dest="harness_max_points",
        type=bounded(int, 1, 10**9, "a number of points"),
        default=DEFAULT_MAX_POINTS,
        metavar="N",
        help=f"refuse a scenario whose sweep expands to more than N points (default {DEFAULT_MAX_POINTS:,})",
    )


def add_require_option(add, prefix: str = "") -> None:
    """``--require-all``: a skipped point fails the run (``harness run``, ``verify`` and pytest; a scenario's
    ``require_all: true`` asks it for its own points)."""
    add(
        f"--{prefix}require-all",
        dest="harness_require_all",
        action="store_true",
        help="exit 1 when a selected point is skipped, whatever the cause (no such device or engine here, an "
        "engine that cannot run the model, a capability or length the point asks for): a nightly that lists "
        "the point wants its figure; default: skips are counted with their reasons and do not fail the run",
    )


def add_cache_option(add, prefix: str = "") -> None:
    """``--cache-dir``: the model and conversion cache (``harness run``, ``check`` and pytest)."""
    add(
        f"--{prefix}cache-dir",
        dest="harness_cache_dir",
        metavar="DIR",
        default=None,
        help="model/conversion cache (default: $HARNESS_CACHE_DIR or ~/.cache/harness)",
    )


def add_run_options(add, prefix: str = "", results_help: Optional[str] = None) -> None:
    """Options shared by ``harness run`` (no prefix) and the pytest plugin (prefix ``harness-``).
    ``results_help``: ``--results`` has no default (None: write no records) and this help (``harness verify``)."""
    from harness.scenario.fields import MAX_LAUNCHES

    add_plan_options(add, prefix)
    add(
        f"--{prefix}results",
        dest="harness_results",
        metavar="DIR",
        default="results" if results_help is None else None,
        help=results_help or "directory for result records (default: results)",
    )
    add_cache_option(add, prefix)
    add(
        f"--{prefix}reference-dir",
        dest="harness_reference_dir",
        metavar="DIR",
        default=None,
        help="store of HF references for the gate (default: <results>/references)",
    )
    add(
        f"--{prefix}refresh-reference",
        dest="harness_refresh_reference",
        action="store_true",
        help="recompute gate references even when a stored one matches",
    )
    add(
        f"--{prefix}isolation",
        dest="harness_isolation",
        choices=tuple(LAUNCHERS),
        default="worker",
        help="; ".join(
            f"{name}: {mode.help}" + (" (default)" if name == "worker" else "") for name, mode in LAUNCHERS.items()
        ),
    )
    add(
        f"--{prefix}launches",
        dest="harness_launches",
        type=bounded(int, 1, MAX_LAUNCHES, "a number of launches"),
        default=None,
        metavar="N",
        help="independent launches per point (fresh worker and engine load each), overriding the scenarios' "
        "measurement.launches",
    )
    add(
        f"--{prefix}recalibrate",
        dest="harness_recalibrate",
        action="store_true",
        help="take the machine-speed canary's calibration afresh (about 3 s) rather than reuse the one an "
        "earlier run stored for this machine in the cache dir (reused for 24 h after a one-reading check)",
    )
    add(
        f"--{prefix}timeout",
        dest="harness_timeout",
        type=bounded(float, 1, MAX_TIMEOUT_S, "seconds"),
        default=3600.0,
        metavar="SECONDS",
        help="per-point time limit with isolation (default 3600)",
    )
    add(
        f"--{prefix}trust-remote-code",
        dest="harness_trust_remote_code",
        action="store_true",
        help="confirm scenarios that set model.trust_remote_code (runs code shipped with the model)",
    )
    add(
        f"--{prefix}no-energy",
        dest="harness_no_energy",
        action="store_true",
        help="skip energy, CPU-time and roofline figures",
    )
    add(
        f"--{prefix}memory-limit-mb",
        dest="harness_memory_limit_mb",
        type=bounded(int, MIN_MEMORY_LIMIT_MB, None, "MiB"),
        default=None,
        metavar="MIB",
        help=f"per-point address-space limit with isolation, at least {MIN_MEMORY_LIMIT_MB} (a worker needs that to load an engine; default: none)",
    )
    add(
        f"--{prefix}shard",
        dest="harness_shard",
        metavar="I/N",
        default=None,
        help="run only this machine's share of the points (1-based; points sharing a converted model stay "
        "together); every runner must pass the same scenarios and filters. auto: read it from the scheduler "
        "(Slurm array, Kubernetes Indexed Job + HARNESS_SHARD_COUNT, GitLab/Buildkite parallel, or "
        "HARNESS_SHARD_INDEX/HARNESS_SHARD_COUNT; see docs/nightly-ci.md)",
    )


def budget_type(text: str):
    """An argparse type: ``90s``, ``45m``, ``2h`` (``harness.run.budget.parse_budget``)."""
    from harness.run.budget import parse_budget

    try:
        return parse_budget(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_budget_option(add, prefix: str = "") -> None:
    """``--budget``: the wall time a run may take (``harness run``, pytest's ``--harness-budget``)."""
    add(
        f"--{prefix}budget",
        dest="harness_budget",
        type=budget_type,
        default=None,
        metavar="DURATION",
        help="wall-time budget of the run (90s, 45m, 2h): once spent, no new point starts; each point not "
        "started is recorded as skipped ('budget 60m spent after N points'), --require-all fails it, --resume "
        "runs it; `harness plan` says what fits",
    )


def add_gate_prompts_option(add, prefix: str = "") -> None:
    """``--gate-prompts N``: the gate's first N shipped prompts instead of the scenarios' ``gate.prompts``
    (``harness plan`` lowers it to fit a budget)."""
    add(
        f"--{prefix}gate-prompts",
        dest="harness_gate_prompts",
        type=bounded(int, 1, 10**4, "a number of prompts"),
        default=None,
        metavar="N",
        help="gate prompts per point (the first N of the shipped set), overriding the scenarios' gate.prompts",
    )


def runner_from(options, check: bool = True, log=lambda message: None, **overrides):
    """A Runner with the run settings the shared options give (an argparse Namespace or pytest's option
    object), ``overrides`` replacing some (``RunSettings`` fields). ``check``: refuse unwritable output
    directories now (the pytest plugin checks once points are collected, so a session that runs no point
    never needs them)."""
    from harness.io import REFERENCE_DIR
    from harness.run.runner import Runner
    from harness.run.settings import Limits, RunSettings

    def path(value):
        return Path(value) if value else None

    results = path(options.harness_results) or Path("results")
    if check:
        check_outputs(options)
    chosen = dict(
        results_dir=results,
        cache_dir=path(options.harness_cache_dir),
        reference_dir=path(options.harness_reference_dir) or results / REFERENCE_DIR,
        refresh_reference=options.harness_refresh_reference,
        isolation=options.harness_isolation,
        launches=_launches(options.harness_launches),
        recalibrate=getattr(options, "harness_recalibrate", False),
        allow_remote_code=options.harness_trust_remote_code,
        energy=not options.harness_no_energy,
        limits=Limits(options.harness_timeout, options.harness_memory_limit_mb),
        budget=getattr(options, "harness_budget", None),  # only the commands that run sweeps offer these
        gate_prompts=getattr(options, "harness_gate_prompts", None),
    )
    return Runner(RunSettings(**{**chosen, **overrides}), log=log)


def _launches(value):
    from harness.errors import UsageError

    if value is not None and value < 1:
        raise UsageError(f"--launches: expected a whole number of at least 1, got {value}")
    return value


def check_outputs(options, prefix: str = "") -> None:
    """Every directory a run writes, checked before any point runs: a UsageError naming the option."""
    from harness.io import check_writable_dir

    check_writable_dir(options.harness_results or "results", f"--{prefix}results")
    if options.harness_reference_dir:
        check_writable_dir(options.harness_reference_dir, f"--{prefix}reference-dir")
    if options.harness_cache_dir:
        check_writable_dir(options.harness_cache_dir, f"--{prefix}cache-dir")


def remote_code_error(loaded, allowed: bool):
    """A scenario that asks to run the model's own code needs the command line's confirmation."""
    from harness.errors import ScenarioError

    if loaded.model.trust_remote_code and not allowed:
        return ScenarioError(
            loaded.path,
            "true runs code shipped with the model; confirm with --trust-remote-code "
            "(pytest: --harness-trust-remote-code)",
            field="model.trust_remote_code",
        )
    return None
