"""False alarms of the regression check on pure noise: simulated nights where nothing changed, judged by
the launch-level check (Mann-Whitney U per point and metric, Benjamini-Hochberg across the run).

    python benchmarks/false_alarms.py [--nights 200] [--points 10] [--cv 0.08] [--launches 5] [--seed 19]

Each night draws a baseline and a candidate from the same distributions (``tests.records.noise_night``:
``--points`` points x TPOT and TTFT, launch-to-launch CV ``--cv``, ``--launches`` launches a side), so
every red night is a false alarm. Printed: the share of red nights with no threshold floor
(``tpot=0%,ttft=0%``: the correction alone holds the rate), with the default thresholds, and without the
correction (any p <= 0.05), against the stated false discovery rate (0.05) plus a one-sided 99 % binomial
margin for the number of nights. Exits 1 when the floorless rate is past that bound or the default
thresholds are redder than no floor. The seeded fast version is a unit test:
tests/measure/test_launch_statistics.py::test_pure_noise_stays_green_at_the_stated_false_discovery_rate.
Pure computation: about 1 s a night on one core of the project's 2-core machine.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.regression.check import check  # noqa: E402
from harness.regression.settings import RegressionSettings  # noqa: E402
from harness.regression.thresholds import parse_thresholds  # noqa: E402
from tests.records import noise_night  # noqa: E402  (the same synthetic nights the test draws)

FDR = 0.05
FLOORLESS = parse_thresholds("tpot=0%,ttft=0%")
DEFAULT = parse_thresholds("tpot=5%,ttft=10%,energy_per_token=10%")


@dataclass(frozen=True)
class Alarms:
    """Red nights out of ``nights``: with no floor, with the default thresholds, and without the correction."""

    nights: int
    floorless: int
    default: int
    uncorrected: int

    @property
    def bound(self) -> float:
        """The stated FDR plus a one-sided 99 % binomial margin for this many nights."""
        return FDR + 2.33 * math.sqrt(FDR * (1 - FDR) / self.nights)

    @property
    def holds(self) -> bool:
        return self.floorless / self.nights <= self.bound and self.default <= self.floorless


def simulate(nights: int, seed: int, points: int = 10, cv: float = 0.08, launches: int = 5) -> Alarms:
    rng = random.Random(seed)
    floorless = default = uncorrected = 0
    for _ in range(nights):
        base, new = noise_night(rng, points, cv, launches)
        bare = check(base, new, RegressionSettings(FLOORLESS))
        floorless += not bare.passed
        default += not check(base, new, RegressionSettings(DEFAULT)).passed
        uncorrected += any(t.p_value is not None and t.p_value <= FDR for t in bare.tests)
    return Alarms(nights, floorless, default, uncorrected)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=200)
    parser.add_argument("--points", type=int, default=10)
    parser.add_argument("--cv", type=float, default=0.08)
    parser.add_argument("--launches", type=int, default=5)
    parser.add_argument("--seed", type=int, default=19)
    args = parser.parse_args()
    start = time.perf_counter()
    found = simulate(args.nights, args.seed, args.points, args.cv, args.launches)
    took = time.perf_counter() - start
    print(
        f"{found.nights} nights x {args.points} points x 2 metrics, CV {args.cv:.0%}, "
        f"{args.launches} vs {args.launches} launches, seed {args.seed} ({took:.0f} s)"
    )
    for label, red in (
        ("no floor (tpot=0%,ttft=0%)", found.floorless),
        ("default thresholds", found.default),
        ("uncorrected (any p <= 0.05)", found.uncorrected),
    ):
        print(f"  red nights, {label:<30} {red:>4} / {found.nights} = {red / found.nights:.1%}")
    print(f"  bound: FDR {FDR:g} + 99 % margin = {found.bound:.1%}: {'holds' if found.holds else 'VIOLATED'}")
    return 0 if found.holds else 1


if __name__ == "__main__":
    sys.exit(main())
