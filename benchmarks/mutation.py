"""Mutation scores of the modules that decide verdicts (issue #28), with mutmut 3.

mutmut reads ``[tool.mutmut]`` in pyproject.toml (the files it may mutate and the fast, pure tests it
runs); this script asks it for the mutants of the functions below only, one module at a time, then
counts each module's results from mutmut's own records (``mutants/**/*.meta``):

    python benchmarks/mutation.py                 # every module (~20 min on 2 cores)
    python benchmarks/mutation.py kl significance # some of them
    python benchmarks/mutation.py --resume kl     # only kl's mutants without a result (a stopped run goes on)
    python benchmarks/mutation.py --rerun-survivors kl  # after new tests: only kl's survivors again
    python benchmarks/mutation.py --report        # count what the last runs left, run nothing
    python benchmarks/mutation.py --equivalent    # the equivalent mutants, by reason

Score = killed / (total - equivalent), where ``EQUIVALENT`` lists the surviving mutants that change no
behaviour, each with its reason (docs/benchmarks.md shows the table). ``--survivors`` prints the diff
of every survivor not listed there.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[1]

# module label -> (source file, mutant-name globs: mutmut names a mutant <module>.x_<function>__mutmut_<n>,
# a method <module>.x<Class>ǁ<method>__mutmut_<n>)
MODULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "correctness/kl": ("harness/correctness/kl.py", ("harness.correctness.kl.*",)),
    "correctness/gate (tiers: _conclude)": (
        "harness/correctness/gate.py",
        ("harness.correctness.gate.x__conclude__*",),
    ),
    # the per-prompt checks on step-wise logits: free-running, teacher-forced, top-1 only
    "correctness/stepwise": ("harness/correctness/stepwise.py", ("harness.correctness.stepwise.*",)),
    # the verdict (fail, drift, not judged, pass) from _conclude's fail and drift reasons
    "correctness/outcome (verdict: decide)": (
        "harness/correctness/outcome.py",
        ("harness.correctness.outcome.x_decide__*",),
    ),
    "correctness/positions": ("harness/correctness/positions.py", ("harness.correctness.positions.*",)),
    "correctness/same_weights (combine)": (
        "harness/correctness/same_weights.py",
        ("harness.correctness.same_weights.x_combine__*",),
    ),
    "regression/significance": ("harness/regression/significance.py", ("harness.regression.significance.*",)),
    "regression/mann_whitney": ("harness/regression/mann_whitney.py", ("harness.regression.mann_whitney.*",)),
    "regression/launch_findings": (
        "harness/regression/launch_findings.py",
        ("harness.regression.launch_findings.*",),
    ),
    "regression/thresholds": ("harness/regression/thresholds.py", ("harness.regression.thresholds.*",)),
    "regression/check": ("harness/regression/check.py", ("harness.regression.check.*",)),
    "regression/spread_rule": ("harness/regression/spread_rule.py", ("harness.regression.spread_rule.*",)),
    "regression/outcome": ("harness/regression/outcome.py", ("harness.regression.outcome.*",)),
    "regression/verdicts": ("harness/regression/verdicts.py", ("harness.regression.verdicts.*",)),
    "measure/launches (statistics, intervals)": (
        "harness/measure/launch_stats.py",
        tuple(
            f"harness.measure.launch_stats.x_{name}__*"
            for name in ("interval", "rel_half_width", "intervals", "_metrics")
        ),
    ),
    "measure/drift (trend test)": (
        "harness/measure/drift.py",
        ("harness.measure.drift.x__fewest_rounds__*", "harness.measure.drift.x_drift__*"),
    ),
    "history/changepoints": ("harness/history/changepoints.py", ("harness.history.changepoints.*",)),
    "history/check": ("harness/history/series_check.py", ("harness.history.series_check.*",)),
}

# Surviving mutants that change no behaviour: name -> why (one line each). "In practice": no input the
# harness produces reaches the difference (a float landing exactly on a line, a resample's seed where every
# seed gives the same percentile).
_DTYPE = "the values are floats already (records hold floats), so the dtype argument changes nothing"
_SCIPY_CASE = "scipy lower-cases this method/alternative name"
_BOOT = (
    "in practice: the percentile endpoints of seeded bootstrap medians land on the same data midpoints for any "
    "seed, method or resample count at launch counts (checked 5-40 values)"
)
_PERM = "C(n+m, n) <= 9999 splits up to 7 launches a side: the permutation test enumerates them all, no seed"
_RUPTURES = "ruptures' C PELT for the linear kernel ignores jump; its defaults are kernel='linear', min_size=2"
_SHIFT = "the squared-error cost of a split is unchanged by a constant added to every value"
_DOUBLING = "doubling from 64 or 256 passes through 512 and every later edge: the same bucket"
_NO_SPREAD = "without spread every log value is the first; check tests 2 launches a side at least"
_DECIDED = "check's verdicts.decide gives every test a verdict before a line is printed"
_FULL_FALSY = "topk_pairs tests `if full:`: None reads as False"
_FULL_IDS = "with full=True topk_pairs ranks the whole row and never reads the ids"
_FLOAT64 = "stored log-probabilities are Python floats (float64 already) and astype(None) is float64"
_GREEDY = (
    "free_running runs only on prompts whose reference is greedy (not on_own_text), where the reference token is "
    "ref_ids[0] at every step, so ref_token given, None or left out is the same"
)
_REASONED = (
    "in practice: every not-judged record the harness writes has a reason (decide gives its unjudged reason); "
    "only a hand-made record with none reaches the fallback"
)
EQUIVALENT: dict[str, str] = {
    "harness.correctness.stepwise.x__miss__mutmut_5": _FULL_FALSY,
    "harness.correctness.stepwise.x_free_running__mutmut_58": _FULL_FALSY,
    "harness.correctness.stepwise.x_free_running__mutmut_64": _FULL_IDS,
    "harness.correctness.stepwise.x_teacher_forced__mutmut_77": _FULL_IDS,
    "harness.correctness.stepwise.x_free_running__mutmut_27": _GREEDY,
    "harness.correctness.stepwise.x_free_running__mutmut_33": _GREEDY,
    "harness.correctness.stepwise.x_free_running__mutmut_12": "top_ids orders its k ids largest first, ties toward "
    "the lower id, for any k: the first of the top 2 is the top 1",
    "harness.correctness.stepwise.x_teacher_forced__mutmut_48": _FLOAT64,
    "harness.correctness.stepwise.x_teacher_forced__mutmut_50": _FLOAT64,
    "harness.correctness.stepwise.x_teacher_forced__mutmut_51": _FLOAT64,
    "harness.correctness.stepwise.x_teacher_forced__mutmut_56": "in practice: norms of top-M log-probability rows "
    "are far above 1e-30 (a log-probability of 0 everywhere cannot sum to 1 over M > 1 ids)",
    "harness.correctness.kl.x_spread__mutmut_8": _DTYPE,
    "harness.correctness.kl.x_spread__mutmut_10": _DTYPE,
    "harness.correctness.kl.x_judge__mutmut_6": "a tier without its paired test is skipped whatever its ratio",
    "harness.correctness.kl.x_paired_floor__mutmut_35": "the list is cut to len(d) after it: 2 more or fewer "
    "decode floors past the end change nothing",
    "harness.correctness.gate.x__conclude__mutmut_64": "without per-position KLs (top-1 mode) overall_test counts 0 "
    "positions, under min_positions (a positive int): None either way",
    "harness.correctness.positions.x_bucket_of__mutmut_10": _DOUBLING,
    "harness.correctness.positions.x_bucket_of__mutmut_11": _DOUBLING,
    "harness.regression.verdicts.x__judge__mutmut_44": "in practice: a Welch TOST p of exactly 0.05",
    "harness.regression.verdicts.x__needed__mutmut_3": "a change exactly at the limit is detected in about half the "
    "nights (never POWER) and is not inside it: None either way",
    "harness.regression.verdicts.x_line__mutmut_14": "a different test's change is past the limit (>= 0), never 0",
    "harness.regression.verdicts.x_line__mutmut_20": "ratio_interval gives both ends or neither",
    "harness.regression.verdicts.x_line__mutmut_3": _DECIDED,
    "harness.regression.verdicts.x_line__mutmut_5": _DECIDED,
    "harness.regression.mann_whitney.x_worse_p_values__mutmut_9": _SCIPY_CASE,
    "harness.regression.mann_whitney.x_worse_p_values__mutmut_11": _SCIPY_CASE,
    "harness.regression.mann_whitney.x_worse_p_values__mutmut_12": "without ties the permutation test's p is "
    "the exact table's; " + _PERM,
    "harness.regression.mann_whitney.x_worse_p_values__mutmut_16": _PERM,
    "harness.regression.mann_whitney.x_worse_p_values__mutmut_17": "scipy's default n_resamples is 9999; " + _PERM,
    "harness.regression.mann_whitney.x_worse_p_values__mutmut_18": _PERM,
    "harness.regression.mann_whitney.x_worse_p_values__mutmut_19": _PERM,
    "harness.regression.mann_whitney.x_worse_p_values__mutmut_20": _PERM,
    "harness.regression.mann_whitney.x_worse_p_values__mutmut_38": _DTYPE,
    "harness.regression.mann_whitney.x_worse_p_values__mutmut_40": _DTYPE,
    "harness.regression.mann_whitney.x_worse_p_values__mutmut_44": _DTYPE,
    "harness.regression.mann_whitney.x_worse_p_values__mutmut_46": _DTYPE,
    "harness.regression.mann_whitney.x_worse_p_values__mutmut_58": "scipy's method='auto' is exact without ties "
    "up to 8 values a side, where this branch runs",
    "harness.regression.mann_whitney.x_worse_p_values__mutmut_61": _SCIPY_CASE,
    "harness.regression.mann_whitney.x_worse_p_values__mutmut_69": "typing.cast does nothing at run time",
    "harness.regression.mann_whitney.x_worse_p_values__mutmut_73": "typing.cast does nothing at run time",
    "harness.regression.mann_whitney.x_worse_p_values__mutmut_74": "typing.cast does nothing at run time",
    "harness.regression.significance.x_fdr_adjust__mutmut_7": "BH-adjusted p-values do not depend on alpha",
    "harness.regression.significance.x_fdr_adjust__mutmut_11": "statsmodels lower-cases the method name",
    "harness.regression.significance.x_ratio_interval__mutmut_14": _DTYPE,
    "harness.regression.significance.x_ratio_interval__mutmut_16": _DTYPE,
    "harness.regression.significance.x_ratio_interval__mutmut_18": _DTYPE,
    "harness.regression.significance.x_ratio_interval__mutmut_20": _DTYPE,
    "harness.regression.significance.x_equivalence_p__mutmut_13": _DTYPE,
    "harness.regression.significance.x_equivalence_p__mutmut_15": _DTYPE,
    "harness.regression.significance.x_equivalence_p__mutmut_18": _DTYPE,
    "harness.regression.significance.x_equivalence_p__mutmut_20": _DTYPE,
    "harness.regression.significance.x_equivalence_p__mutmut_34": _NO_SPREAD,
    "harness.regression.significance.x_equivalence_p__mutmut_35": _NO_SPREAD,
    "harness.regression.significance.x_equivalence_p__mutmut_36": "in practice: no two launch values' log "
    "difference equals log1p(limit) to the last bit (none for 1-100 in steps of 0.01 at 5 %)",
    "harness.regression.spread_rule.x__iqr__mutmut_9": "n=4 is statistics.quantiles' default",
    "harness.measure.drift.x_drift__mutmut_27": "theilslopes' default x is arange(len(y)), the round index",
    "harness.measure.drift.x_drift__mutmut_29": "theilslopes' default x is arange(len(y)), the round index",
    "harness.measure.drift.x_drift__mutmut_51": "in practice: no exact Kendall p for 5-50 rounds equals 0.05",
    "harness.measure.drift.x_drift__mutmut_60": "only flagged trends are worded, and those have |total| > 0.05",
    "harness.measure.launch_stats.x_interval__mutmut_21": "'single launch' is the Interval's default method",
    "harness.measure.launch_stats.x_interval__mutmut_46": _BOOT,
    "harness.measure.launch_stats.x_interval__mutmut_49": "CONFIDENCE is scipy's default, 0.95",
    "harness.measure.launch_stats.x_interval__mutmut_50": _BOOT,
    "harness.measure.launch_stats.x_interval__mutmut_51": _BOOT,
    "harness.measure.launch_stats.x_interval__mutmut_53": _SCIPY_CASE,
    "harness.measure.launch_stats.x_interval__mutmut_54": _BOOT,
    "harness.history.changepoints.x_noise__mutmut_3": _DTYPE,
    "harness.history.changepoints.x_noise__mutmut_5": _DTYPE,
    "harness.history.changepoints.x_noise__mutmut_29": "two values have one difference, whose stdev is 0: the floor",
    "harness.history.changepoints.x__plausible__mutmut_4": "index 0 of the cumulative sums is never read (t >= 2)",
    "harness.history.changepoints.x__plausible__mutmut_7": "index 0 of the cumulative sums is never read (t >= 2)",
    "harness.history.changepoints.x__plausible__mutmut_26": "adds the same constant to every split's cost",
    "harness.history.changepoints.x__plausible__mutmut_27": "adds the same constant to every split's cost",
    "harness.history.changepoints.x__plausible__mutmut_42": "in practice: a cost difference exactly 6.0",
    "harness.history.changepoints.x_detect__mutmut_3": _DTYPE,
    "harness.history.changepoints.x_detect__mutmut_5": _DTYPE,
    "harness.history.changepoints.x_detect__mutmut_16": _SHIFT,
    "harness.history.changepoints.x_detect__mutmut_24": _RUPTURES,
    "harness.history.changepoints.x_detect__mutmut_25": _RUPTURES,
    "harness.history.changepoints.x_detect__mutmut_26": _RUPTURES,
    "harness.history.changepoints.x_detect__mutmut_27": _RUPTURES,
    "harness.history.changepoints.x_detect__mutmut_30": _RUPTURES,
    "harness.history.changepoints.x_detect__mutmut_34": "ruptures reshapes a 1-D signal to one column itself",
    "harness.history.changepoints.x_detect__mutmut_36": "numpy reads any negative size as 'the rest'",
    "harness.history.changepoints.x_recent_step__mutmut_3": _DTYPE,
    "harness.history.changepoints.x_recent_step__mutmut_5": _DTYPE,
    "harness.history.changepoints.x_recent_step__mutmut_38": "nights is fewer than MIN_SIZE = 2, so 1: "
    "times and over 1 agree",
    "harness.history.changepoints.x_recent_step__mutmut_48": "in practice: a step's gain exactly its penalty",
    "harness.history.changepoints.x_held__mutmut_7": "held's direction differs only for an improving change, "
    "which check() never reports (the step it may let recent_step find is an improvement too)",
    "harness.history.changepoints.x_held__mutmut_8": "only a change with equal medians before and after, in a "
    "metric without a direction, whose findings check() never reports",
    "harness.history.changepoints.x_last_level__mutmut_10": _DTYPE,
    "harness.history.changepoints.x_last_level__mutmut_12": _DTYPE,
    "harness.regression.check.x_check__mutmut_91": _REASONED,
    "harness.regression.check.x_check__mutmut_92": _REASONED,
    "harness.regression.launch_findings.x_decide__mutmut_34": "lone is read only when there are tests, never its value for none",
    "harness.history.series_check.x_findings__mutmut_36": "with MIN_SIZE = 2 the range holds the one night count either way",
    "harness.history.series_check.x_findings__mutmut_46": "held's direction differs only for an improving last change, and the "
    "step it then lets recent_step find is an improvement too, which check() drops as not open",
    "harness.history.series_check.x_check__mutmut_6": "a change needs 2 runs after it, so the newest run is never "
    "the first after one: since=1 finds nothing either way",
}

KILLED = {1, 3}  # mutmut: a failing test (1) or a pytest internal error (3)
NO_TEST = 33  # mutmut: no selected test reached the function (a test added since may)
SURVIVED = {0}


def _mutmut() -> str:
    found = Path(sys.executable).parent / "mutmut"
    return str(found) if found.exists() else "mutmut"


def run(labels: list[str], redo: frozenset[Optional[int]] = frozenset(), children: int = 0, nice: int = 10) -> None:
    """One mutmut call for the chosen modules: its stats pass (which test reaches which function) runs once.
    ``redo``: only the mutants whose result is one of these (None: no result yet; 0: survived; 33: no test),
    by name, since mutmut re-runs every mutant a glob names: a stopped run goes on where it stopped, and after
    new tests only the survivors run again (a kill stays a kill when tests are only added)."""
    names = [g for label in labels for g in MODULES[label][1]]
    if redo and (REPO / "mutants" / "mutmut-stats.json").exists():
        reached = json.loads((REPO / "mutants" / "mutmut-stats.json").read_text())["tests_by_mangled_function_name"]
        chosen = [
            name
            for label in labels
            for name, code in results(label).items()
            if code in redo and (code != 0 or name not in EQUIVALENT)
        ]
        # mutmut refuses a name whose function no test reached at its last stats pass; a glob of that function
        # lets it look again (a test added since) and mark the rest "no test"
        names = [n for n in chosen if reached.get(n.partition("__mutmut_")[0])]
        names += sorted({n.partition("__mutmut_")[0] + "__mutmut_*" for n in chosen if n not in names})
        if not names:
            return
    cmd = ["nice", "-n", str(nice), _mutmut(), "run", "--max-children", str(children or os.cpu_count() or 2), *names]
    shown = cmd if len(names) <= 4 else [*cmd[:6], f"<{len(names)} mutant names>"]
    print("$", " ".join(shown), flush=True)
    (REPO / "mutants").mkdir(exist_ok=True)
    with open(REPO / "mutants" / "run.log", "a") as log:  # mutmut's progress and any refusal (failing tests)
        subprocess.run(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, check=False)


def results(label: str) -> dict[str, int]:
    """mutant name -> mutmut's exit code, for this module's globs (None: not run yet)."""
    source, globs = MODULES[label]
    meta = REPO / "mutants" / (source + ".meta")
    if not meta.exists():
        return {}
    codes = json.loads(meta.read_text())["exit_code_by_key"]
    return {name: code for name, code in codes.items() if any(fnmatch.fnmatch(name, g) for g in globs)}


def row(label: str) -> str:
    codes = results(label)
    total = len(codes)
    killed = sum(code in KILLED for code in codes.values())
    survived = [name for name, code in codes.items() if code in SURVIVED]
    equivalent = [name for name in survived if name in EQUIVALENT]
    other = total - killed - len(survived)  # no tests, timeouts, not run
    scored = total - len(equivalent)
    score = f"{100 * killed / scored:.0f} %" if scored else "-"
    return (
        f"| {label} | {total} | {killed} | {len(survived) - len(equivalent)} | {len(equivalent)} | {other} | {score} |"
    )


def survivors(label: str) -> list[str]:
    return sorted(n for n, code in results(label).items() if code in SURVIVED and n not in EQUIVALENT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help="labels (or parts of them) of MODULES; default: all")
    parser.add_argument("--report", action="store_true", help="count the last runs' results, run nothing")
    parser.add_argument("--survivors", action="store_true", help="print each unexplained survivor's diff")
    parser.add_argument("--equivalent", action="store_true", help="list EQUIVALENT by reason, as Markdown")
    parser.add_argument("--resume", action="store_true", help="run only the mutants without a result yet")
    parser.add_argument("--rerun-survivors", action="store_true", help="run only the unexplained survivors again")
    parser.add_argument("--max-children", type=int, default=0, help="mutmut's parallel workers (default: CPUs)")
    parser.add_argument("--nice", type=int, default=10, help="niceness of the mutmut run (default 10)")
    args = parser.parse_args(argv)
    if args.equivalent:
        by_reason: dict[str, list[str]] = {}
        for name, why in EQUIVALENT.items():
            by_reason.setdefault(why, []).append(name.removeprefix("harness.").replace("__mutmut_", "#"))
        for why, names in by_reason.items():
            print(f"- {why}: " + ", ".join(f"`{n}`" for n in names))
        return 0
    chosen = [label for label in MODULES if not args.modules or any(m in label for m in args.modules)]
    if not args.report:
        redo = frozenset(({None, NO_TEST} if args.resume else set()) | ({0} if args.rerun_survivors else set()))
        run(chosen, redo, args.max_children, args.nice)
    print("| module | mutants | killed | survived | equivalent | no test / timeout | score |")
    print("|---|---|---|---|---|---|---|")
    for label in chosen:
        print(row(label))
    if args.survivors:
        for label in chosen:
            for name in survivors(label):
                shown = subprocess.run([_mutmut(), "show", name], cwd=REPO, capture_output=True, text=True)
                print(shown.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
