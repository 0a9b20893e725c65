"""How much of a sweep's wall time is measured inference, cold (empty caches) and warm, with persistent
workers and with a process per point, side by side in one run.

    python benchmarks/sweep_efficiency.py [--isolation worker point none] [--engines hf llamacpp]

A 12-point sweep over three engines on the default model (hf bf16; openvino fp and int8_sym;
llamacpp on the model's GGUF) x prompt lengths 16/32/64, 16 new tokens, 2 timed rounds, no gate.
Cold: a fresh cache directory (GGUF -> bf16 conversion, OpenVINO export and compression included).
Warm: the same sweep again on that cache. "Inference share" = the timed rounds' end-to-end time
summed over points / wall time of the sweep. The records' time split (harness.records.record.TimeSplit) says
where the rest went.

Each warm sweep runs twice, side by side: "warm, calibrating" takes the machine-speed canary's calibration
afresh (``--recalibrate``, what every run did before issue #41) and "warm, reused" reuses the one the
earlier sweep stored for this machine (``harness.measure.calibration_store``). ``--engines hf llamacpp``
keeps the 6 points issue #41 measured (36 % measured share warm, calibrating every run).

``--against DIR`` compares two versions of the harness side by side in one run: DIR is another checkout
(``git worktree add /tmp/before <commit>``); after one unmeasured warm sweep of each (each stores its own
calibration), ``--pairs`` warm, reused sweeps run alternately with DIR's harness and this one, each in a fresh
interpreter, on the same cache (``--cache DIR`` reuses a warm model cache and skips the cold sweep).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.run import planning
from harness.run.runner import Runner
from harness.run.settings import RunSettings
from harness.scenario.sweep import expand

SWEEP = """
model: gemma3-270m
generation: {max_new_tokens: 16}
measurement: {warmup_rounds: 1, min_rounds: 2, threads: 2}
sweep:
  adapter: [hf]
  device: [cpu]
  prompt_len: [16, 32, 64]
include:
  - {adapter: openvino, device: CPU, prompt_len: 16}
  - {adapter: openvino, device: CPU, prompt_len: 32}
  - {adapter: openvino, device: CPU, prompt_len: 64}
  - {adapter: openvino, device: CPU, quantization: int8_sym, prompt_len: 16}
  - {adapter: openvino, device: CPU, quantization: int8_sym, prompt_len: 32}
  - {adapter: openvino, device: CPU, quantization: int8_sym, prompt_len: 64}
  - {adapter: llamacpp, device: cpu, prompt_len: 16}
  - {adapter: llamacpp, device: cpu, prompt_len: 32}
  - {adapter: llamacpp, device: cpu, prompt_len: 64}
"""


ENGINES = ("hf", "openvino", "llamacpp")


def scenario_text(rounds: int, engines: tuple[str, ...], new_tokens: int = 16) -> str:
    """The sweep above with ``rounds`` timed rounds of ``new_tokens``, keeping the points of ``engines``."""
    text = SWEEP.replace("min_rounds: 2", f"min_rounds: {rounds}")
    lines = text.replace("max_new_tokens: 16", f"max_new_tokens: {new_tokens}").splitlines()
    kept = [line for line in lines if "{adapter:" not in line or any(f"adapter: {e}," in line for e in engines)]
    if "hf" not in engines:  # the sweep's own points are hf's: leave only the included ones
        kept = [line.replace("adapter: [hf]", f"adapter: [{engines[0]}]") for line in kept]
    return "\n".join(kept) + "\n"


def sweep(
    cache: Path,
    results: Path,
    isolation: str,
    rounds: int = 2,
    engines=ENGINES,
    recalibrate: bool = False,
    new_tokens: int = 16,
) -> tuple[float, float, int, dict, list]:
    """(wall s, measured inference s, points ok, time split summed over points, first-round ratios): a
    point's first timed round's end-to-end time over the median of its later ones (what its warm-up left)."""
    text = scenario_text(rounds, tuple(engines), new_tokens)
    loaded = planning.loads(text, "<sweep-efficiency>", "sweep_efficiency")
    settings = RunSettings(
        results_dir=results, cache_dir=cache, isolation=isolation, energy=False, recalibrate=recalibrate
    )
    runner = Runner(settings)
    start = time.perf_counter()
    records = runner.run([loaded], progress=False)
    wall = time.perf_counter() - start
    inference = sum(r.e2e_s for rec in records if rec.status == "ok" for r in rec.samples.rounds)
    split: dict[str, float] = {}
    for record in records:
        for name, seconds in (record.time_split.model_dump() if record.time_split else {}).items():
            split[name] = split.get(name, 0.0) + seconds
    first_round = [
        rec.samples.rounds[0].e2e_s / statistics.median(r.e2e_s for r in rec.samples.rounds[1:])
        for rec in records
        if rec.status == "ok" and len(rec.samples.rounds) > 1
    ]
    return wall, inference, sum(r.status == "ok" for r in records), split, first_round


def one_sweep(tree: Path, cache: Path, results: Path, isolation: str, rounds: int, engines, new_tokens: int) -> tuple:
    """A warm, reused sweep with the harness of ``tree`` (a checkout), in a fresh interpreter."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    argv = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--one",
        str(cache),
        str(results),
        isolation,
        str(rounds),
        str(new_tokens),
        *engines,
    ]
    # run outside both trees: `python -m` (workers, the canary) puts the working directory first on the path
    done = subprocess.run(argv, env=env, cwd=results.parent, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the sweep with {tree} failed: {done.stderr[-2000:]}")
    return tuple(json.loads(done.stdout.splitlines()[-1]))


def against(args) -> None:
    """``--against``: the same warm sweep, DIR's harness and this one alternately (see the docstring)."""
    here = Path(__file__).resolve().parents[1]
    trees = {"before": Path(args.against).resolve(), "after": here}
    isolation = args.isolation[0]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cache = Path(args.cache) if args.cache else tmp / "cache"
        if not args.cache:
            sweep(cache, tmp / "cold", isolation, args.rounds, args.engines, new_tokens=args.new_tokens)
        shape = (isolation, args.rounds, args.engines, args.new_tokens)
        for name, tree in trees.items():  # each stores its calibration (its canary code is its own key)
            one_sweep(tree, cache, tmp / f"unmeasured-{name}", *shape)
        runs = {name: [] for name in trees}
        for pair in range(args.pairs):
            for name, tree in trees.items():
                runs[name].append(one_sweep(tree, cache, tmp / f"{name}-{pair}", *shape))
    print(
        f"| harness | sweep | points ok | wall s | measured inference s | inference share | first round / later |"
        f"  ({isolation}, {args.rounds} rounds of {args.new_tokens} tokens)"
    )
    print("|---|---|---|---|---|---|---|")
    for name, done in runs.items():
        for pair, (wall, inference, ok, _, first) in enumerate(done):
            ratio = f"{statistics.median(first):.3f}" if first else "-"
            print(f"| {name} | {pair + 1} | {ok} | {wall:.1f} | {inference:.1f} | {inference / wall:.1%} | {ratio} |")
    names = list(dict.fromkeys(n for done in runs.values() for (*_, split, _) in done for n in split))
    print("\nwhere the time went (seconds, summed over points; mean of the sweeps):")
    print("| harness | " + " | ".join(n.removesuffix("_s") for n in names) + " |")
    print("|---|" + "---|" * len(names))
    for name, done in runs.items():
        means = [sum(split.get(n, 0.0) for *_, split, _ in done) / len(done) for n in names]
        print(f"| {name} | " + " | ".join(f"{value:.1f}" for value in means) + " |")


def main() -> None:
    if sys.argv[1:2] == ["--one"]:  # one_sweep's child: the sweep's figures as one JSON line
        cache, results, isolation, rounds, new_tokens, *engines = sys.argv[2:]
        figures = sweep(Path(cache), Path(results), isolation, int(rounds), engines, new_tokens=int(new_tokens))
        print(json.dumps(figures))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--isolation", nargs="+", choices=("worker", "point", "none"), default=["worker", "point"])
    parser.add_argument(
        "--rounds", type=int, default=2, help="timed rounds per point (the sweep above: 2, after 1 warm-up round)"
    )
    parser.add_argument(
        "--new-tokens",
        type=int,
        default=16,
        help="tokens each round generates (the sweep above: 16; a scenario's default: 32)",
    )
    parser.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES), help="engines' points to keep")
    parser.add_argument("--against", metavar="DIR", help="another checkout of the harness to compare with")
    parser.add_argument("--pairs", type=int, default=2, help="with --against: measured sweeps of each, alternating")
    parser.add_argument("--cache", metavar="DIR", help="with --against: a warm model cache (no cold sweep)")
    args = parser.parse_args()
    if args.against:
        against(args)
        return
    points = len(expand(planning.loads(scenario_text(2, tuple(args.engines)), "<s>", "s")))
    runs = {}
    warm = ("warm, calibrating", "warm, reused")  # before / after: the canary's calibration taken or reused
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for isolation in args.isolation:  # each mode its own cold cache, then warm on it
            for name in ("cold", *warm):
                runs[isolation, name] = sweep(
                    tmp / f"cache-{isolation}",
                    tmp / f"{isolation}-{name.replace(', ', '-')}",
                    isolation,
                    args.rounds,
                    args.engines,
                    recalibrate=name != "warm, reused",
                    new_tokens=args.new_tokens,
                )
    print("| isolation | run | points ok | wall s | measured inference s | inference share |")
    print("|---|---|---|---|---|---|")
    for (isolation, name), (wall, inference, ok, *_) in runs.items():
        print(f"| {isolation} | {name} | {ok}/{points} | {wall:.1f} | {inference:.1f} | {inference / wall:.1%} |")
    for isolation in args.isolation:
        cold, before, after = (runs[isolation, name] for name in ("cold", *warm))
        print(
            f"{isolation}: warm is {cold[0] / before[0]:.2f}x faster than cold; measured share warm "
            f"{before[1] / before[0]:.1%} calibrating -> {after[1] / after[0]:.1%} reusing the calibration"
        )
    names = list(next(iter(runs.values()))[3])
    print("\nwhere the warm sweeps' time went (seconds, summed over points):")
    print("| isolation | run | " + " | ".join(n.removesuffix("_s") for n in names) + " |")
    print("|---|---|" + "---|" * len(names))
    for isolation in args.isolation:
        for name in warm:
            split = runs[isolation, name][3]
            print(f"| {isolation} | {name} | " + " | ".join(f"{split.get(n, 0):.1f}" for n in names) + " |")


if __name__ == "__main__":
    main()
