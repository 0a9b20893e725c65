"""Speed of the results history on a year of synthetic nights: ``history add``, ``history check`` and
the trend report, and the database's size.

Nights carry real record files (five timed rounds per point, 2 % night-to-night CV, 0.5 % between
rounds); a few points get a 5 % ms/token step seven nights before the end, which the check must find.

    python benchmarks/history_speed.py [--nights 365] [--points 200] [--db URL] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from harness.records.record import Record

TOKENS, ROUNDS = 16, 5
STEPPED = ("p000", "p050", "p100", "p150", "p199")  # points whose ms/token steps up 5 %


def _point_record(night: int, point: str, ttft_ms: float, tpot_ms: float, energy: float, rng) -> Record:
    """A record whose metrics are consistent with its rounds (10 catalogue metrics)."""
    scale = 1 + 0.005 * rng.standard_normal(ROUNDS)
    rounds = [
        {
            "prompt_index": 0,
            "prompt_tokens": 64,
            "batch_size": 1,
            "ttft_s": ttft_ms * s / 1e3,
            "gaps_s": [tpot_ms * s / 1e3] * (TOKENS - 1),
            "e2e_s": (ttft_ms + tpot_ms * (TOKENS - 1)) * s / 1e3,
        }
        for s in scale
    ]
    tpot, ttft = tpot_ms * float(np.median(scale)), ttft_ms * float(np.median(scale))
    e2e = ttft + tpot * (TOKENS - 1)
    metrics = {
        "ttft_ms": ttft,
        "ttft_ms_p90": ttft * 1.01,
        "e2e_ms": e2e,
        "tpot_ms": tpot,
        "ms_per_token_p50": tpot,
        "ms_per_token_p90": tpot * 1.02,
        "prefill_tokens_per_s": 64e3 / ttft,
        "decode_tokens_per_s": 1e3 / tpot,
        "throughput_tokens_per_s": TOKENS * 1e3 / e2e,
        "energy_per_token_mj": energy,
    }
    return Record(
        scenario="nightly",
        point_id=point,
        point={"adapter": "hf", "device": "cpu"},
        status="ok",
        metrics=metrics,
        samples={"rounds": rounds},
        correctness={"verdict": "pass", "kl_ratio": 1.0},
        adapter={"engine": "transformers", "engine_version": "5.0.0", "device": "cpu"},
        environment={"hostname": "bench-host", "git": {"commit": f"{night:08x}" + "0" * 32}},
        started_at=(datetime(2025, 1, 1, 2, tzinfo=timezone.utc) + timedelta(days=night)).isoformat(),
    )


def generate(work: Path, nights: int, points: int) -> list[Path]:
    rng = np.random.default_rng(0)
    base = {f"p{i:03d}": (rng.uniform(50, 500), rng.uniform(5, 80), rng.uniform(10, 200)) for i in range(points)}
    paths = []
    for night in range(nights):
        out = work / f"night{night:03d}" / "nightly"
        out.mkdir(parents=True, exist_ok=True)
        for point, (ttft, tpot, energy) in base.items():
            noise = 1 + 0.02 * rng.standard_normal(3)
            step = 1.05 if point in STEPPED and night >= nights - 7 else 1.0
            record = _point_record(night, point, ttft * noise[0], tpot * noise[1] * step, energy * noise[2], rng)
            (out / f"{point}.json").write_text(json.dumps(record.to_dict()))  # no fsync: not what is measured
        paths.append(out.parent)
    return paths


def _history(*argv) -> int:
    from harness.cli import history as cli

    parser = argparse.ArgumentParser()
    cli.add_parser(parser.add_subparsers(dest="command"))
    return cli.run(parser.parse_args(["history", *map(str, argv)]))


def _timed(label: str, timings: dict, fn, *args):
    start = time.perf_counter()
    value = fn(*args)
    timings[label] = round(time.perf_counter() - start, 2)
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=365)
    parser.add_argument("--points", type=int, default=200)
    parser.add_argument("--db", default=None, help="SQLAlchemy URL (default: a SQLite file in the work directory)")
    parser.add_argument("--all-points", action="store_true", help="also time a figure for every point")
    parser.add_argument("--work", default=None, help="directory for records, database and figures (default: temp)")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="history-speed-"))
    db = args.db or f"sqlite:///{work / 'history.sqlite'}"
    timings: dict[str, float] = {}
    paths = _timed("generate_records_s", timings, generate, work / "records", args.nights, args.points)
    import contextlib
    import io

    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        _timed("add_year_but_last_night_s", timings, _history, "add", *paths[:-1], "--db", db)
        _timed("add_last_night_s", timings, _history, "add", paths[-1], "--db", db)  # the nightly cost
        _timed("add_last_night_again_s", timings, _history, "add", paths[-1], "--db", db)  # stores nothing
        code = _timed("check_s", timings, _history, "check", "--db", db)
    regressions = [line for line in log.getvalue().splitlines() if line.startswith("REGRESSION")]
    found = sorted({line.split()[1].split("::")[1] for line in regressions if " tpot_ms " in line})
    from harness.report.trends import trend_figures

    report = _timed("trend_report_s", timings, trend_figures, db, work / "trends")
    if args.all_points:
        everything = _timed(
            "trend_report_all_points_s", timings, lambda: trend_figures(db, work / "trends-all", all_points=True)
        )
        timings["trend_pngs_all_points"] = len(everything.figures)
    size = os.path.getsize(work / "history.sqlite") if args.db is None else None
    print(
        json.dumps(
            {
                "nights": args.nights,
                "points": args.points,
                "metrics_per_point": 10,
                "values": args.nights * args.points * 10,
                "db": db.split("@")[-1],
                "db_size_mb": None if size is None else round(size / 2**20, 1),
                **timings,
                "check_exit": code,
                "regressions": len(regressions),
                "stepped_points_found": f"{len(found)}/{len(STEPPED)}",
                "found_match_injected": found == sorted(p for p in STEPPED if int(p[1:]) < args.points),
                "trend_pngs": len(report.figures),
                "open_change_points": len(report.open_changes),
                "work": str(work),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
