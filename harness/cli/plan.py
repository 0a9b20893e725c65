"""``harness plan SCENARIO... --budget 60m``: what a run within the budget would do (``harness.run.budget_plan``),
a line per point, what is left out and why, and the ``harness run`` command that runs the plan. Runs nothing."""

from __future__ import annotations

import shlex
import sys

from harness.cli.options import add_plan_options, bounded, budget_type
from harness.cli.sweeps import KEEP_HELP, load_all, point_selector


def add_parser(commands) -> None:
    from harness.scenario.fields import MAX_LAUNCHES

    plan = commands.add_parser(
        "plan",
        help="which points, launches and gate prompts fit a time budget, from earlier records on this runner "
        "(or a stated estimate), and what each point could detect; runs nothing",
    )
    plan.add_argument(
        "scenarios",
        nargs="+",
        metavar="SCENARIO",
        help="scenario YAML files, or folders: the YAML files under them with a sweep: key, as pytest collects",
    )
    plan.add_argument(
        "--budget",
        dest="harness_budget",
        type=budget_type,
        required=True,
        metavar="DURATION",
        help="the wall time the run may take: 90s, 45m, 2h",
    )
    plan.add_argument(
        "--results",
        dest="harness_results",
        default="results",
        metavar="DIR",
        help="the results directory whose earlier records give each point's cost (default: results)",
    )
    plan.add_argument(
        "--min-launches",
        type=bounded(int, 1, MAX_LAUNCHES, "a number of launches"),
        default=1,
        metavar="N",
        help="the fewest launches a point may get to fit the budget (default 1)",
    )
    plan.add_argument(
        "--launches",
        dest="harness_launches",
        type=bounded(int, 1, MAX_LAUNCHES, "a number of launches"),
        default=None,
        metavar="N",
        help="launches per point, as harness run --launches (default: the scenarios')",
    )
    plan.add_argument("-k", dest="select", action="append", metavar="EXPRESSION", help=KEEP_HELP)
    plan.add_argument(
        "-m",
        dest="markers",
        metavar="MARKEXPR",
        default=None,
        help="plan only the points whose markers match, as pytest -m selects the plugin's items: the point's "
        "adapter, device and its scenario's markers: (-m nightly, -m 'nightly and not openvino')",
    )
    add_plan_options(plan.add_argument)


def run(args) -> int:
    from pathlib import Path

    plan = build(
        args.scenarios,
        args.harness_budget,
        Path(args.harness_results),
        launches=args.harness_launches,
        min_launches=args.min_launches,
        select=args.select,
        markers=args.markers,
        max_points=args.harness_max_points,
    )
    if plan is None:
        chosen = [f"-k {e!r}" for e in args.select or []] + ([f"-m {args.markers!r}"] if args.markers else [])
        print(f"ERROR no point matches {' '.join(chosen)}", file=sys.stderr)
        return 2
    if args.markers:  # harness run has no -m: the files of the points chosen, the points named if -m split one
        from harness.scenario.sweep import expand

        files = {p.scenario.path or p.scenario.name: p.scenario for p in plan.chosen}
        split = any(len(expand(s)) != sum(p.scenario is s for p in plan.points) for s in files.values())
        print("\n".join(lines(plan, list(files), name_points=split)))
    else:
        print("\n".join(lines(plan, args.scenarios)))
    return 0 if plan.chosen else 1


def build(
    paths,
    budget,
    results,
    launches=None,
    min_launches: int = 1,
    select=None,
    markers=None,
    max_points=None,
):
    """The plan ``harness plan`` prints (a ``harness.run.budget_plan.Plan``) for the scenario files ``paths``,
    the points ``select`` (``-k`` values) and ``markers`` (a ``-m`` expression) keep; None when none is kept."""
    from harness.run import budget_plan
    from harness.run.runner import Runner
    from harness.run.settings import RunSettings
    from harness.scenario.folders import scenario_files
    from harness.scenario.markers import marker_selector
    from harness.scenario.sweep import expand

    scenarios = load_all(scenario_files(list(paths)), allow_remote_code=True, max_points=max_points)  # runs nothing
    keep = point_selector(select, scenarios)
    marked = marker_selector(markers) if markers else None
    work = [
        (s, p)
        for s in scenarios
        for p in expand(s)
        if (keep is None or keep(s, p)) and (marked is None or marked(s, p))
    ]
    if not work:
        return None
    runner = Runner(RunSettings(results_dir=results, launches=launches))  # its launch planning only
    return budget_plan.make(work, budget, results, runner.planned_launches, min_launches, launches)


def lines(plan, scenario_paths, name_points: bool = False) -> list[str]:
    """The plan as the command prints it: the headline, a line per chosen point (cost, launches, gate prompts,
    where the cost comes from) with its detectable change below, then what was left out and why."""
    chosen, left = plan.chosen, plan.left_out
    launches = "each scenario's own launches" if plan.launches is None else f"{plan.launches} launch(es) a point"
    prompts = "" if plan.gate_prompts is None else f", {plan.gate_prompts} gate prompts a point"
    out = [
        f"plan for budget {plan.budget} ({plan.budget.seconds:.0f} s): {len(chosen)} of {len(plan.points)} point(s), "
        f"{launches}{prompts}, about {plan.seconds:.0f} s"
    ]
    for p in chosen:
        gate = f", gate prompts {p.gate_prompts}" if p.cost.gate_prompts else ""
        out.append(f"  {p.name}: about {p.seconds:.0f} s, launches {p.launches}{gate} ({p.cost.source})")
        out.append(f"      {p.detectable}")
    if left:
        out.append(f"left out ({len(left)}):")
        out += [f"  {p.name}: {p.left_out}" for p in left]
    if chosen:
        command = ["harness", "run", *scenario_paths, *plan.run_options(name_points)]
        out.append("run it with: " + " ".join(shlex.quote(part) for part in command))
    else:
        out.append("nothing fits: raise the budget or lower --min-launches")
    return out
