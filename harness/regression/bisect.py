"""``harness bisect``: find the commit that changed a point's figures with ``git bisect run`` and the regression
check's three-outcome verdict (``harness.regression.verdicts``).

The good commit is built and run once: its records are the baseline. At every commit ``git bisect`` tries, the
step (``harness bisect-step WORK``) runs the build command, then the same ``harness run`` of the selected points,
and judges them against that baseline with ``run_check``: DIFFERENT (or a point failed or lost) is bad, exit 1;
SAME is good, exit 0; UNKNOWN runs the points once more with twice the launches, and when still undecided tells
git to skip the commit (exit 125), as it does when the build fails. Every run shares one ``--reference-dir``, so
gate references are computed once. Each step writes its verdict under WORK/steps, and the first bad commit's is
printed with the change's interval."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

from harness.errors import UsageError
from harness.regression.thresholds import DEFAULT_THRESHOLDS, parse_thresholds

GOOD, BAD, SKIP = 0, 1, 125  # git bisect run's exit codes
DEFAULT_LAUNCHES = 5  # 5 vs 5 launches: Mann-Whitney reaches p = 0.004, enough among a few metrics' tests


@dataclass(frozen=True)
class BisectPlan:
    """What every step needs, written to WORK/plan.json for the step processes ``git bisect run`` starts."""

    repo: str
    good: str
    bad: str
    scenario: str  # absolute: inside the repository it follows each checkout
    build: str
    work: str
    select: list[str] = field(default_factory=list)
    launches: int = DEFAULT_LAUNCHES
    reference_dir: Optional[str] = None
    thresholds: str = DEFAULT_THRESHOLDS  # --max-regression: the metrics judged and their limits

    def save(self) -> None:
        Path(self.work).mkdir(parents=True, exist_ok=True)
        (Path(self.work) / "plan.json").write_text(json.dumps(asdict(self), indent=1))

    @classmethod
    def load(cls, work: str) -> BisectPlan:
        path = Path(work) / "plan.json"
        try:
            return cls(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError) as exc:
            raise UsageError(f"{path}: not a bisect plan written by harness bisect ({exc})") from None


@dataclass(frozen=True)
class StepVerdict:
    word: str  # same | different | unknown | skip (the build or the run failed)
    lines: list[str]  # what the regression check printed about it


@dataclass(frozen=True)
class BisectResult:
    first_bad: Optional[str]  # None: git bisect could not single one out (skipped commits)
    subject: str
    verdict: Optional[StepVerdict]
    log: str  # git bisect run's own output


def harness_command() -> list[str]:
    """The ``harness`` the user runs (on PATH), else this interpreter's."""
    found = shutil.which("harness")
    return [found] if found else [sys.executable, "-m", "harness.cli"]


def _git(repo: str, *args: str) -> str:
    done = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise UsageError(f"git {' '.join(args)} in {repo} failed: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout.strip()


def _run_points(plan: BisectPlan, results: Path, launches: int) -> Optional[str]:
    """Build, then ``harness run`` the selected points into ``results``; the failing step's words, or None."""
    built = subprocess.run(plan.build, shell=True, cwd=plan.repo, capture_output=True, text=True)
    if built.returncode != 0:
        return f"build command exited {built.returncode}: {(built.stderr or built.stdout).strip()[-500:]}"
    if results.exists():
        shutil.rmtree(results)
    command = [*harness_command(), "run", plan.scenario, "--results", str(results), "--launches", str(launches)]
    command += [arg for expression in plan.select for arg in ("-k", expression)]
    if plan.reference_dir:
        command += ["--reference-dir", plan.reference_dir]
    ran = subprocess.run([*command, "--no-progress"], cwd=plan.repo, capture_output=True, text=True)
    if not results.is_dir():
        return f"harness run exited {ran.returncode} without records: {ran.stderr.strip()[-500:]}"
    return None  # a failed point is in its record, and the check judges it


def judge(baseline: Path, candidate: Path, thresholds: str = DEFAULT_THRESHOLDS) -> StepVerdict:
    """The regression check of ``candidate`` against ``baseline`` as one word: different when any point failed,
    went missing or has a metric DIFFERENT (worse or better); same when every launch-level test is SAME."""
    from harness.records.store import iter_records
    from harness.regression.entry import run_check
    from harness.regression.settings import RegressionSettings
    from harness.regression.verdicts import DIFFERENT, SAME, UNKNOWN, line

    base = [record for _, record in iter_records([baseline])]
    new = [record for _, record in iter_records([candidate])]
    outcome = run_check(RegressionSettings(parse_thresholds(thresholds)), base, new).outcome
    lines = [str(finding) for finding in outcome.findings if finding.test is None] + [line(t) for t in outcome.tests]
    lines += [str(finding) for finding in outcome.incomparable]
    if any(f.test is None and f.kind != "regression" for f in outcome.findings):
        return StepVerdict(DIFFERENT, lines)
    if any(test.verdict == DIFFERENT for test in outcome.tests):
        return StepVerdict(DIFFERENT, lines)
    if outcome.tests and all(test.verdict == SAME for test in outcome.tests) and not outcome.incomparable:
        return StepVerdict(SAME, lines)
    return StepVerdict(UNKNOWN, lines or ["no launch-level test: too few launches a side"])


def step(work: str) -> int:
    """One ``git bisect run`` step at the checked-out commit: 0 good, 1 bad, 125 skip."""
    from harness.regression.verdicts import DIFFERENT, SAME

    plan = BisectPlan.load(work)
    commit = _git(plan.repo, "rev-parse", "HEAD")
    verdict = _step_verdict(plan, commit)
    steps = Path(work) / "steps"
    steps.mkdir(exist_ok=True)
    (steps / f"{commit}.json").write_text(json.dumps(asdict(verdict)))
    print(f"{commit[:12]}: {verdict.word.upper()}", *verdict.lines, sep="\n  ")
    return BAD if verdict.word == DIFFERENT else GOOD if verdict.word == SAME else SKIP


def _step_verdict(plan: BisectPlan, commit: str) -> StepVerdict:
    from harness.regression.verdicts import UNKNOWN

    baseline = Path(plan.work) / "good"
    for launches in (plan.launches, 2 * plan.launches):  # UNKNOWN: add launches once, then skip
        results = Path(plan.work) / "runs" / f"{commit}-{launches}"
        failed = _run_points(plan, results, launches)
        if failed:
            return StepVerdict("skip", [failed])
        verdict = judge(baseline, results, plan.thresholds)
        if verdict.word != UNKNOWN:
            return verdict
    return verdict


def bisect(plan: BisectPlan, step_command: list[str]) -> BisectResult:
    """Run the good commit for the baseline, then ``git bisect run`` the steps (``step_command`` WORK, a process
    that calls ``step``); the repository is left where it was (``git bisect reset``)."""
    if _git(plan.repo, "status", "--porcelain", "--untracked-files=no"):
        raise UsageError(f"{plan.repo}: the working tree has uncommitted changes; commit or stash them first")
    good, bad = (
        _git(plan.repo, "rev-parse", plan.good + "^{commit}"),
        _git(plan.repo, "rev-parse", plan.bad + "^{commit}"),
    )
    plan.save()
    _git(plan.repo, "bisect", "start", bad, good)
    try:
        first_try = _git(plan.repo, "rev-parse", "HEAD")  # bisect's first commit to test
        _git(plan.repo, "checkout", "--quiet", good)
        failed = _run_points(plan, Path(plan.work) / "good", plan.launches)
        if failed:
            raise UsageError(f"the good commit {plan.good} ({good[:12]}) gives no baseline: {failed}")
        _git(plan.repo, "checkout", "--quiet", first_try)
        done = subprocess.run(
            ["git", "-C", plan.repo, "bisect", "run", *step_command, plan.work],
            capture_output=True,
            text=True,
        )
        log = done.stdout + done.stderr
        first = None
        if "is the first bad commit" in log:
            first = _git(plan.repo, "rev-parse", "refs/bisect/bad")
            if not (Path(plan.work) / "steps" / f"{first}.json").is_file():  # git named it untested (--bad)
                _git(plan.repo, "checkout", "--quiet", first)
                step(plan.work)
    finally:
        subprocess.run(["git", "-C", plan.repo, "bisect", "reset"], capture_output=True)
    if first is None:
        return BisectResult(None, "", None, log)
    subject = _git(plan.repo, "log", "-1", "--format=%s", first)
    found = Path(plan.work) / "steps" / f"{first}.json"
    verdict = StepVerdict(**json.loads(found.read_text())) if found.is_file() else None
    return BisectResult(first, subject, verdict, log)


def command_line(
    good: Optional[str], bad: Optional[str], scenario: str, point: str, metric: str, limit: float
) -> Optional[str]:
    """The ``harness bisect`` command for one point's commit range (``harness history check`` prints it), or
    None when a side's commit is unknown or both are the same. The scenario file is named as the shipped
    ones are (scenarios/NAME.yaml), the metric judged is the finding's at its threshold, and the build command
    is the user's to fill in."""
    import shlex

    if not good or not bad or good == bad:
        return None
    return (
        f"harness bisect --good {good[:12]} --bad {bad[:12]} {shlex.quote(f'scenarios/{scenario}.yaml')} "
        f"-k {shlex.quote(point)} --max-regression {metric}={limit * 100:g}% --build 'YOUR BUILD COMMAND'"
    )
