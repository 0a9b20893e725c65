"""Does the machine-speed canary (harness.measure.canary) track slow phases, and does dividing TPOT by it
make launches agree better? One tiny point, launched again and again in fresh isolated workers (as
`harness run` does), every other launch with busy loops spinning beside it (a real slowdown the engine
cannot see); per launch its median TPOT and the canary's ratio to the run's calibration.

    python benchmarks/canary.py [--model tiny-llama] [--adapter hf] [--launches 12] [--busy 2] [--json out.json]

Prints the correlation of canary ratio with launch TPOT (Pearson and Spearman), the medians of each in
quiet and busy launches, and the launch-to-launch CV of raw vs canary-normalised TPOT (TPOT / ratio) over
all launches and over the quiet ones.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from harness.run import planning
from harness.run.runner import Runner
from harness.run.settings import RunSettings
from harness.scenario.sweep import expand

SPIN = "import time\nend = time.time() + 600\nwhile time.time() < end: pass"


def scenario(model: str, adapter: str, tokens: int, rounds: int):
    loaded = planning.loads(
        f"""
model: {model}
prompts: ["The river bank was quiet that morning"]
generation: {{max_new_tokens: {tokens}}}
measurement: {{warmup_rounds: 1, min_rounds: {rounds}, threads: 1, disturbed_reruns: 0}}
sweep: {{adapter: [{adapter}], device: [cpu]}}
""",
        "<benchmark>",
        "canary",
    )
    (point,) = expand(loaded)
    return loaded, point


def busy_loops(count: int) -> list[subprocess.Popen]:
    loops = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(count)]
    time.sleep(0.3)
    return loops


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.fmean(values) if len(values) > 1 else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny-llama")
    parser.add_argument("--adapter", default="hf")
    parser.add_argument("--launches", type=int, default=12)
    parser.add_argument("--busy", type=int, default=os.cpu_count() or 2, help="busy loops beside every other launch")
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", default=None, help="write the per-launch rows here")
    args = parser.parse_args()
    from scipy import stats

    loaded, point = scenario(args.model, args.adapter, args.tokens, args.rounds)
    runner = Runner(RunSettings(results_dir=None, isolation="worker", energy=False))
    rows = []
    try:
        for i in range(args.launches):
            busy = args.busy if i % 2 else 0
            loops = busy_loops(busy)
            try:
                record = runner.run_point(loaded, point)
            finally:
                for loop in loops:
                    loop.kill()
                    loop.wait()
                runner.launcher.close()  # the next launch: a fresh worker, a fresh load
            if record.status != "ok" or not record.samples.launches:
                print(f"launch {i}: {record.status}: {record.reason} (left out)", flush=True)
                continue
            (launch,) = record.samples.launches
            if launch.canary is None or launch.medians.get("tpot_ms") is None:
                raise SystemExit(f"launch {i}: no canary or no TPOT in an ok launch")
            rows.append(
                {
                    "launch": i,
                    "busy_loops": busy,
                    "tpot_ms": launch.medians["tpot_ms"],
                    "canary_ratio": launch.canary.ratio,
                    "ratio_before": launch.canary.ratio_before,
                    "ratio_after": launch.canary.ratio_after,
                    "noisy": launch.machine.get("noisy"),
                    "excluded": launch.excluded,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    finally:
        runner.close()
    calibration = runner.caches.canary
    tpot = [r["tpot_ms"] for r in rows]
    ratio = [r["canary_ratio"] for r in rows]
    quiet = [r for r in rows if not r["busy_loops"]]
    loud = [r for r in rows if r["busy_loops"]]
    print(f"\n{args.model} on {args.adapter}, {len(rows)} launches ({len(loud)} with {args.busy} busy loops beside)")
    print(f"calibration: {calibration.seconds * 1e3:.1f} ms ({calibration.workload})")
    print(f"Pearson r(canary ratio, TPOT) = {stats.pearsonr(ratio, tpot)[0]:.2f}")
    print(f"Spearman rho(canary ratio, TPOT) = {stats.spearmanr(ratio, tpot)[0]:.2f}")
    for name, part in (("quiet", quiet), ("busy", loud)):
        if part:
            print(
                f"{name}: median TPOT {statistics.median(r['tpot_ms'] for r in part):.2f} ms, median canary ratio "
                f"{statistics.median(r['canary_ratio'] for r in part):.2f}, excluded {sum(bool(r['excluded']) for r in part)}"
                f" of {len(part)}"
            )
    for name, part in (("all launches", rows), ("quiet launches", quiet)):
        raw = [r["tpot_ms"] for r in part]
        normalised = [r["tpot_ms"] / r["canary_ratio"] for r in part]
        print(f"{name}: CV raw TPOT {cv(raw):.1%}, canary-normalised {cv(normalised):.1%}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"calibration": calibration.model_dump(), "launches": rows}, handle, indent=1)


if __name__ == "__main__":
    main()
