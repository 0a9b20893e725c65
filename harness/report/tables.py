"""Report tables: pure functions from the records' DataFrame (``results.frame``) to smaller DataFrames."""

from __future__ import annotations

import pandas as pd

from harness.records import metric_names, metrics
from harness.records.columns import TIME_PREFIX, TIME_SPLIT
from harness.records.gate_verdicts import VERDICTS
from harness.scenario.sweep import ID_ORDER

VERDICT_ORDER = {word: rank for rank, word in enumerate(VERDICTS)}  # worst first
# Columns that tell points apart in a table or a plot's legend, in the order they are named (axes as in point ids).
IDENTITY = ["scenario", "host", "model", *ID_ORDER]
OUTPUT_TOKENS_FOR_OVERALL = 32  # "overall = first + 31 x next" is the Intel CPU runtime paper's 32-token summary


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    return df[name] if name in df else pd.Series([None] * len(df), index=df.index, dtype=object)


def ok_points(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["status"] == "ok"] if "status" in df else df.iloc[0:0]


def varying(df: pd.DataFrame, exclude: tuple[str, ...] = ()) -> list[str]:
    """Identity columns with more than one distinct value: the ones a label must mention."""
    return [c for c in IDENTITY if c in df and c not in exclude and df[c].astype(str).nunique(dropna=False) > 1]


def labels(df: pd.DataFrame, exclude: tuple[str, ...] = ()) -> pd.Series:
    """A short series label per row from the identity columns that vary (always engine:device)."""
    cols = [c for c in varying(df, exclude) if c not in ("adapter", "device")]
    base = _col(df, "adapter").astype(str) + ":" + _col(df, "device").astype(str)
    for c in cols:
        base = base + df[c].map(lambda v, c=c: _label_part(c, v))
    return base


def _label_part(column: str, value) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f" {value}" if column in ("model", "host", "scenario", "quantization") else f" {column}={value}"


def _verdict_summary(verdicts: pd.Series) -> str:
    counts = verdicts.dropna().value_counts()
    if counts.empty:
        return "-"
    return " / ".join(f"{counts[v]} {v}" for v in sorted(counts.index, key=lambda v: VERDICT_ORDER.get(v, 9)))


def overview(df: pd.DataFrame) -> pd.DataFrame:
    """Device x engine x model (x quantization): medians over the group's points and the gate's verdicts."""
    ok = ok_points(df)
    if ok.empty:
        return pd.DataFrame()
    keys = [c for c in ("host", "device", "adapter", "engine", "model", "quantization") if c in ok]
    ok = ok.assign(**{c: ok[c].fillna("-") for c in keys})
    shown = [c for c in metrics.HEADLINE if c in ok]
    grouped = ok.groupby(keys, sort=True, dropna=False)
    table = grouped[shown].median()
    table.insert(0, "points", grouped.size())
    table["gate"] = grouped["gate_verdict"].agg(_verdict_summary) if "gate_verdict" in ok else "-"
    return table.reset_index()


def engines(df: pd.DataFrame) -> pd.DataFrame:
    """One row per engine and device (and quantization when it varies), in the order they ran (the
    scenario's order: its first engine is the baseline): medians of TTFT and ms/token, speed-up relative
    to the first row, the gate and energy where measured."""
    ok = ok_points(df)
    if ok.empty or "tpot_ms" not in ok:
        return pd.DataFrame()
    if "started_at" in ok:
        ok = ok.sort_values("started_at", kind="stable", na_position="last")
    keys = [
        c for c in ("adapter", "device", "quantization") if c in ok and (c != "quantization" or ok[c].nunique() > 1)
    ]
    ok = ok.assign(**{c: ok[c].fillna("-") for c in keys})
    grouped = ok.groupby(keys, sort=False, dropna=False)
    table = grouped.agg(
        points=("point_id", "size"),
        **{c: (c, "median") for c in ("ttft_ms", "tpot_ms", "energy_per_token_mj") if c in ok},
    )
    if "engine" in ok:
        table.insert(0, "engine", grouped["engine"].first())
    first = table["tpot_ms"].dropna()
    table.insert(
        table.columns.get_loc("tpot_ms") + 1, "speedup", first.iloc[0] / table["tpot_ms"] if not first.empty else None
    )
    table["gate"] = grouped["gate_verdict"].agg(_verdict_summary) if "gate_verdict" in ok else "-"
    if "gate_kl_ratio" in ok:
        table["kl_over_floor"] = grouped["gate_kl_ratio"].median()
    if "energy_per_token_mj" in table and table["energy_per_token_mj"].isna().all():
        table = table.drop(columns="energy_per_token_mj")
    # A group of one point keeps that point's interval over launches (a median over points has none).
    for column in [f"{c}{end}" for c in ("ttft_ms", "tpot_ms") if c in table for end in ("_ci_low", "_ci_high")]:
        if column in ok and ok[column].notna().any():
            table[column] = grouped[column].agg(lambda s: s.iloc[0] if len(s) == 1 else None)
    if "launches" in ok and ok["launches"].notna().any():
        table["launches"] = grouped["launches"].min()  # the fewest launches behind any of the group's points
    return table.reset_index()


def correctness(df: pd.DataFrame) -> pd.DataFrame:
    """Per record: verdict, divergence position, top-1 match rate, KL; failures first. ``record_kind`` says
    which command gated it (run, or verify: gate only)."""
    if df.empty:
        return pd.DataFrame()
    cols = [
        "scenario",
        "point_id",
        "status",
        "record_kind",
        "gate_verdict",
        "gate_k",
        "gate_mode",
        "gate_divergence_index",
        "gate_top1_match_rate",
        "gate_kl_mean",
        "gate_kl_ratio",
        "gate_reasons",
        "gate_skipped",
        "reason",
    ]
    table = df[[c for c in cols if c in df]].copy()
    failed_run = table["status"].isin(["failed", "timeout"]).map({True: -1, False: 0})
    rank = _col(table, "gate_verdict").map(lambda v: VERDICT_ORDER.get(v, len(VERDICT_ORDER))) + failed_run
    return table.assign(_rank=rank).sort_values(["_rank", "scenario", "point_id"]).drop(columns="_rank")


def spread(df: pd.DataFrame) -> pd.DataFrame:
    """Per point: ms/token percentiles and coefficient of variation, noisiest first."""
    ok = ok_points(df)
    need = list(metrics.SPREAD)
    if ok.empty or not all(c in ok for c in need):
        return pd.DataFrame()
    table = ok[["scenario", "point_id", *need, *[c for c in ("ttft_ms", "ttft_ms_p90", "rounds") if c in ok]]].copy()
    table = table.dropna(subset=["ms_per_token_mean"])
    table["cv"] = table["ms_per_token_stddev"] / table["ms_per_token_mean"]
    table["p99_over_p50"] = table["ms_per_token_p99"] / table["ms_per_token_p50"]
    return table.sort_values("cv", ascending=False)


def first_next(df: pd.DataFrame) -> pd.DataFrame:
    """First-token and next-token latency per point, with overall = first + 31 x next for 32-token outputs."""
    ok = ok_points(df)
    if ok.empty or "ttft_ms" not in ok:
        return pd.DataFrame()
    cols = [
        c
        for c in (
            "scenario",
            "point_id",
            "adapter",
            "device",
            "quantization",
            "prompt_len",
            "beam_width",
            "generated_tokens",
            "ttft_ms",
            "tpot_ms",
        )
        if c in ok
    ]
    table = ok[cols].rename(columns={"ttft_ms": "first_token_ms", "tpot_ms": "next_token_ms"}).copy()
    is_32 = _col(table, "generated_tokens") == OUTPUT_TOKENS_FOR_OVERALL
    overall = table["first_token_ms"] + (OUTPUT_TOKENS_FOR_OVERALL - 1) * _col(table, "next_token_ms")
    table["overall_ms"] = overall.where(is_32)
    return table


def launches(df: pd.DataFrame) -> pd.DataFrame:
    """Per point measured over launches: how many, each launch-level metric with its 95 % interval and
    launch-to-launch cv, the canary's ratio, and the launches' warnings (failed launches, drift, launches
    excluded as disturbed, a noisy machine). Empty when every point is a single launch without warnings."""
    ok = ok_points(df)
    notes = ["failed_launches", "drift_flags", "excluded_launches", "machine_noise"]
    if ok.empty or "launches" not in ok:
        return pd.DataFrame()
    warned = ok[[c for c in notes if c in ok]].notna().any(axis=1)
    ok = ok[(ok["launches"].fillna(0) >= 2) | warned]
    if ok.empty:
        return pd.DataFrame()
    cols = ["scenario", "point_id", "launches"]
    for name in metrics.LAUNCH:  # the metrics some point has an interval for
        ends = [f"{name}_ci_low", f"{name}_ci_high", f"{name}_cv"]
        if name in ok and all(c in ok for c in ends) and ok[ends[0]].notna().any():
            cols += [name, *ends]
    if "canary_ratio" in ok and ok["canary_ratio"].notna().any():
        cols.append("canary_ratio")
    table = ok[cols].copy()
    table["warnings"] = ok[[c for c in notes if c in ok]].apply(
        lambda row: "; ".join(str(v) for v in row if isinstance(v, str)) or None, axis=1
    )
    return table.sort_values(["scenario", "point_id"])


def time_split(df: pd.DataFrame) -> pd.DataFrame:
    """Per scenario (every status: a failed point spent time too): the seconds each part of the time split
    took, summed over its points and their launches, the total and the timed share. Points without a time
    split are left out (``time_split_missing`` counts them)."""
    columns = [f"{TIME_PREFIX}{field}" for field, _ in TIME_SPLIT]
    if df.empty or not all(c in df for c in columns):
        return pd.DataFrame()
    present = df[df[columns].notna().any(axis=1)]
    if present.empty:
        return pd.DataFrame()
    grouped = present.groupby("scenario", sort=True)
    table = grouped[columns].sum().rename(columns=lambda c: c.removeprefix(TIME_PREFIX))
    table.insert(0, "points", grouped.size())
    table["total_s"] = table[[field for field, _ in TIME_SPLIT]].sum(axis=1)
    table["timed_share"] = (table["timed_s"] / table["total_s"]).where(table["total_s"] > 0)
    return table.reset_index()


def time_split_missing(df: pd.DataFrame) -> int:
    """How many points carry no time split (records made before accounting, or by other tools)."""
    columns = [f"{TIME_PREFIX}{field}" for field, _ in TIME_SPLIT]
    if df.empty:
        return 0
    if not all(c in df for c in columns):
        return len(df)
    return int((~df[columns].notna().any(axis=1)).sum())


def metric_sources(df: pd.DataFrame) -> pd.DataFrame:
    """One row per catalogued metric some record measured: label, unit, better direction, source and
    definition, in the catalogue's order (``harness.records.metrics``)."""
    direction = {True: "higher", False: "lower", None: "-"}
    rows = [
        {
            "metric": m.name,
            "label": m.label or m.name,
            "unit": m.unit,
            "better": direction[m.higher_is_better],
            "source": m.source,
            "definition": m.description or "-",
        }
        for m in metrics.CATALOGUE
        if m.name in df and df[m.name].notna().any()
    ]
    return pd.DataFrame(rows)


def not_run(df: pd.DataFrame) -> pd.DataFrame:
    """Points that were skipped, failed or timed out, and why."""
    if df.empty:
        return pd.DataFrame()
    rest = df[df["status"] != "ok"]
    return rest[["scenario", "point_id", "status", "reason"]].sort_values(["status", "scenario", "point_id"])


def pareto_front(points: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    """Rows not dominated on (x, y), both lower-is-better in the metric catalogue, sorted by x."""
    if any(metric_names.get(name).higher_is_better is not False for name in (x, y)):
        raise ValueError(f"pareto_front({x}, {y}): both metrics must be lower-is-better")
    ordered = points.dropna(subset=[x, y]).sort_values([x, y])
    best, keep = float("inf"), []
    for idx, value in ordered[y].items():
        if value < best:
            keep.append(idx)
            best = value
    return ordered.loc[keep]
