"""How long `harness report` and `harness gate` take on many records (default 10,000).

Writes synthetic records with the real schema (rounds of per-token gaps, gate results, generated text)
into a temporary directory, then times the report and the regression check the way a user runs them (through
``harness.cli.app.main``), several times each, and prints medians.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.cli.app import main  # noqa: E402
from harness.records import store
from tests.records import record  # noqa: E402  (the same synthetic records the tests use)

QUANTS = ["none", "int8_sym", "int8_asym", "int4_sym", "int4_asym"]


def write_records(directory: Path, count: int, seed: int) -> None:
    for i in range(count):
        scenario, rest = divmod(i, 200)
        quant = QUANTS[rest % len(QUANTS)]
        seq = 128 * 2 ** (rest // len(QUANTS) % 5)
        prompt = 32 * 2 ** (rest // 25 % 8)
        verdict = ("pass", "drift", "fail")[i % 3] if quant != "none" else "pass"
        store.write(
            record(
                f"openvino-CPU-{quant}-seq{seq}-prompt{prompt}",
                scenario=f"s{scenario:03d}",
                adapter="openvino",
                device="CPU",
                quantization=quant,
                max_seq_len=seq,
                prompt_len=prompt,
                tpot_ms=30 + seq / 100,
                ttft_ms=prompt * 2.0,
                seed=seed + i,
                verdict=verdict,
                energy_per_token_mj=20 + seq / 50,
            ),
            directory,
        )


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    if code not in (0, 1):
        raise SystemExit(f"harness {' '.join(argv)} exited {code}")
    return time.perf_counter() - start


def run(count: int, repeats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        start = time.perf_counter()
        write_records(tmp / "base", count, seed=0)
        write_records(tmp / "new", count, seed=10**6)
        print(
            f"wrote 2 x {count} records in {time.perf_counter() - start:.1f} s "
            f"({sum(p.stat().st_size for p in (tmp / 'new').rglob('*.json')) / count / 1024:.1f} KiB each)"
        )
        main(["baseline", "save", str(tmp / "base"), "--name", "b", "--baselines-dir", str(tmp / "baselines")])
        report = [timed(["report", str(tmp / "new"), "-o", str(tmp / f"report{r}")]) for r in range(repeats)]
        regression_check = [
            timed(["gate", str(tmp / "new"), "--baseline", "b", "--baselines-dir", str(tmp / "baselines")])
            for _ in range(repeats)
        ]
        print(
            f"harness report, {count} records: median {statistics.median(report):.1f} s "
            f"(runs: {', '.join(f'{t:.1f}' for t in report)})"
        )
        print(
            f"harness gate, {count} vs {count} records: median {statistics.median(regression_check):.1f} s "
            f"(runs: {', '.join(f'{t:.1f}' for t in regression_check)})"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    run(args.records, args.repeats)
