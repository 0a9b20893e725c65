"""Run every benchmark of the harness itself, one after another, and print each one's table.

    python benchmarks/run_all.py [--quick]

Takes about 20-30 minutes on a 2-core machine (--quick skips the slowest: isolation and the cold
sweep). Each benchmark also runs alone: see the README's "Benchmarks of the harness" table.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS = [
    ("timing overhead, hf", ["timing_overhead.py"], False),
    ("timing overhead, openvino", ["openvino_timing.py"], False),
    ("timing overhead, llamacpp", ["llamacpp_timing.py"], False),
    ("run-to-run precision, hf", ["run_precision.py", "--adapter", "hf"], False),
    ("run-to-run precision, llamacpp", ["run_precision.py", "--adapter", "llamacpp"], False),
    ("report and gate on 10,000 records", ["report_speed.py"], False),
    ("sweep efficiency, 12 points, 3 engines", ["sweep_efficiency.py"], True),
    ("isolation overhead", ["isolation_overhead.py"], True),
    ("energy tracking overhead", ["energy_overhead.py"], True),
    ("gate reference cost", ["reference_cost.py"], True),
    ("accuracy scoring, one pass vs stepwise", ["accuracy_scoring.py"], False),
    ("regression check power, A/A and A/B nights, old and new rule", ["regression_power.py"], True),
    ("machine-speed canary vs launch TPOT, busy loops beside", ["canary.py"], True),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the slowest benchmarks")
    args = parser.parse_args()
    failed = 0
    for title, command, slow in BENCHMARKS:
        if slow and args.quick:
            continue
        print(f"\n## {title}\n", flush=True)
        result = subprocess.run([sys.executable, str(HERE / command[0]), *command[1:]], cwd=HERE.parent)
        failed += result.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
