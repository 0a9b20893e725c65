"""Mutation scores of the modules that decide verdicts (issue #28), with mutmut 3.

mutmut reads ``[tool.mutmut]`` in pyproject.toml (the files it may mutate and the fast, pure tests it
runs); this script asks it for the mutants of the functions below only, one module at a time, then
counts each module's results from mutmut's own records (``mutants/**/*.meta``):

    python benchmarks/mutation.py                 # every module (~20 min on 2 cores)
    python benchmarks/mutation.py kl significance # some of them
    python benchmarks/mutation.py --report        # count what the last runs left, run nothing

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

REPO = Path(__file__).resolve().parents[1]

# module label -> (source file, mutant-name globs: mutmut names a mutant <module>.x_<function>__mutmut_<n>,
# a method <module>.x<Class>ǁ<method>__mutmut_<n>)
MODULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "correctness/kl": ("harness/correctness/kl.py", ("harness.correctness.kl.*",)),
    "correctness/gate (tiers: _conclude)": (
        "harness/correctness/gate.py",
        ("harness.correctness.gate.x__conclude__*",),
    ),
    "correctness/same_weights (combine)": (
        "harness/correctness/same_weights.py",
        ("harness.correctness.same_weights.x_combine__*",),
    ),
    "regression/significance": ("harness/regression/significance.py", ("harness.regression.significance.*",)),
    "regression/thresholds": ("harness/regression/thresholds.py", ("harness.regression.thresholds.*",)),
    "regression/check": ("harness/regression/check.py", ("harness.regression.check.*",)),
    "regression/spread_rule": ("harness/regression/spread_rule.py", ("harness.regression.spread_rule.*",)),
    "regression/outcome": ("harness/regression/outcome.py", ("harness.regression.outcome.*",)),
    "measure/launches (statistics, intervals)": (
        "harness/measure/launches.py",
        tuple(
            f"harness.measure.launches.x_{name}__*"
            for name in ("_fewest_rounds", "drift", "interval", "rel_half_width", "intervals", "_metrics")
        ),
    ),
    "history/changepoints": ("harness/history/changepoints.py", ("harness.history.changepoints.*",)),
    "history/check": ("harness/history/check.py", ("harness.history.check.*",)),
}

# Surviving mutants that change no behaviour: name -> why (kept to one line each).
EQUIVALENT: dict[str, str] = {}

KILLED = {1, 3}  # mutmut: a failing test (1) or a pytest internal error (3)
SURVIVED = {0}


def _mutmut() -> str:
    found = Path(sys.executable).parent / "mutmut"
    return str(found) if found.exists() else "mutmut"


def run(labels: list[str]) -> None:
    """One mutmut call for the chosen modules: its stats pass (which test reaches which function) runs once."""
    globs = [g for label in labels for g in MODULES[label][1]]
    cmd = ["nice", "-n", "10", _mutmut(), "run", "--max-children", str(os.cpu_count() or 2), *globs]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=REPO, stdout=subprocess.DEVNULL, check=False)


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
    args = parser.parse_args(argv)
    chosen = [label for label in MODULES if not args.modules or any(m in label for m in args.modules)]
    if not args.report:
        run(chosen)
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
