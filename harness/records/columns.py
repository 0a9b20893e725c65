"""A record as flat columns: the one flattening used by ``results.load`` (pandas), the report's tables,
the pytest-benchmark ``extra_info`` and the regression check's per-round figures.

Also the one home of the time split's parts and their labels (``TIME_SPLIT``), read by the run-end
table, the report's table and its plot."""

from __future__ import annotations

from typing import Optional

from harness.records import metrics
from harness.records.accuracy import Accuracy
from harness.records.correctness import Correctness
from harness.records.gate_class_columns import gate_class_columns
from harness.records.precision import is_quantized
from harness.records.record import Record
from harness.records.samples import Interval, Launch, TimeSplit

# Where a point's wall time went (record.time_split), in the order the parts happen; the timed part is
# what the figures measure, so the tables and the plot single it out.
TIME_SPLIT: tuple[tuple[str, str], ...] = (
    ("process_start_s", "process start"),
    ("imports_s", "imports"),
    ("conversion_s", "model conversion"),
    ("resolve_s", "tokenizer + prompts"),
    ("load_s", "model load"),
    ("warmup_s", "warm-up"),
    ("canary_s", "machine-speed canary"),
    ("timed_s", "timed (measured inference)"),
    ("gate_s", "correctness gate"),
    ("accuracy_s", "task accuracy"),
    ("other_s", "other"),
)
TIMED = "timed_s"
TIME_PREFIX = "time_"  # flat column of a part: time_load_s, ...


def round_values(record: Record) -> dict[str, list[float]]:
    """Per-round TTFT, ms/token and end-to-end figures (ms): the spread a regression must exceed."""
    if record.samples.rounds_ms is not None:  # records rebuilt from pytest-benchmark JSON keep only these
        return record.samples.rounds_ms
    out: dict[str, list[float]] = {"ttft_ms": [], "tpot_ms": [], "e2e_ms": []}
    for r in record.samples.rounds:
        out["ttft_ms"].append(r.ttft_s * 1e3)
        out["e2e_ms"].append(r.e2e_s * 1e3)
        if r.gaps_s:
            out["tpot_ms"].append((r.e2e_s - r.ttft_s) / len(r.gaps_s) * 1e3)
    return out


def accuracy_columns(accuracy: Optional[Accuracy]) -> dict:
    """``accuracy.<task>.<metric>`` (+ ``.stderr`` and ``.delta``) for every scored metric, and ``.flip_rate``
    where its 0/1 outcomes were paired with the reference's (McNemar's discordant pairs over items)."""
    out: dict[str, Optional[float]] = {}
    if accuracy is None:
        return out
    for task, scores in (accuracy.tasks or {}).items():
        deltas = (accuracy.delta or {}).get(task, {})
        paired = (accuracy.paired or {}).get(task, {})
        for metric, value in scores.items():
            if metric.endswith("_stderr") or metric == "items":
                continue
            out[f"accuracy.{task}.{metric}"] = value
            out[f"accuracy.{task}.{metric}.stderr"] = scores.get(f"{metric}_stderr")
            out[f"accuracy.{task}.{metric}.delta"] = deltas.get(metric)
            if metric in paired and paired[metric].flip_rate is not None:
                out[f"accuracy.{task}.{metric}.flip_rate"] = paired[metric].flip_rate
    return out


def ok_launches(record: Record) -> Optional[int]:
    """How many launches the figures rest on (``recorded_launches``: a record from before launches were
    recorded is one launch); None for a skipped point, where nothing ran, and a gate-only record, which times none."""
    from harness.records.record import recorded_launches

    if record.status == "skipped" or record.correctness_only:
        return None
    return sum(launch.status == "ok" for launch in recorded_launches(record))


def has_interval(interval: Optional[Interval]) -> bool:
    """A confidence interval worth showing: from two or more launches, both ends known."""
    return interval is not None and interval.launches >= 2 and interval.low is not None and interval.high is not None


def interval_columns(record: Record) -> dict:
    """``<metric>_ci_low``, ``<metric>_ci_high`` (95 % over launches) and ``<metric>_cv`` (launch to
    launch) for every launch-level metric (None where not measured), and ``launches``."""
    out: dict = {"launches": ok_launches(record)}
    names = [*metrics.LAUNCH, *sorted(set(record.samples.intervals) - set(metrics.LAUNCH))]
    for name in names:
        interval = record.samples.intervals.get(name)
        shown = interval if has_interval(interval) else None
        out[f"{name}_ci_low"] = shown.low if shown else None
        out[f"{name}_ci_high"] = shown.high if shown else None
        out[f"{name}_cv"] = interval.cv if interval is not None and interval.launches >= 2 else None
    return out


def _launch_name(launch: Launch, record: Record) -> str:
    return f"launch {launch.index + 1}/{len(record.samples.launches)}"


def failed_launches(record: Record) -> list[str]:
    return [
        f"{_launch_name(launch, record)} {launch.status}: {launch.reason or 'no reason given'}"
        for launch in record.samples.launches
        if launch.status != "ok"
    ]


def drift_flags(record: Record) -> list[str]:
    """Figures that trended within a launch (throttling, a neighbour starting), as the drift check flagged them."""
    return [
        f"{_launch_name(launch, record)}: "
        + (drift.why or f"{drift.metric} drifts {drift.slope_per_round:+.1%} per round")
        for launch in record.samples.launches
        for drift in launch.drift
        if drift.flagged
    ]


def excluded_launches(record: Record) -> list[str]:
    """Launches kept in the record but excluded from the significance test as disturbed (their canary moved,
    the machine was busy: ``Launch.excluded``): one line for the point, with the count and each reason once
    (launches sharing a reason listed together). None for a record of one launch: no significance test
    reads it, so the exclusion changes nothing."""
    launches = record.samples.launches
    excluded = [launch for launch in launches if launch.excluded]
    if not excluded or len(launches) < 2:
        return []
    by_reason: dict[str, list[str]] = {}
    for launch in excluded:
        by_reason.setdefault(str(launch.excluded), []).append(str(launch.index + 1))
    reasons = "; ".join(
        f"launch{'es' if len(which) > 1 else ''} {', '.join(which)}: {why}" for why, which in by_reason.items()
    )
    return [f"{len(excluded)} of {len(launches)} launches excluded from the significance test as disturbed ({reasons})"]


def canary_ratio(record: Record) -> Optional[float]:
    """The median over launches of the machine-speed canary's ratio to the run's calibration (1.0: as fast
    as at the start of the run); None when no launch ran the canary. TPOT is not divided by it:
    benchmarks/canary.py found no steady gain in launch-to-launch spread from doing so."""
    import statistics

    ratios = [launch.canary.ratio for launch in record.samples.launches if launch.canary is not None]
    return round(statistics.median(ratios), 4) if ratios else None


def machine_noise(record: Record) -> list[str]:
    """Launches whose machine state (harness.measure.machine_state) says the machine was busy: its ``noisy``
    reason. A launch excluded for it says so in ``excluded_launches`` instead, except in a record of one launch,
    where that says nothing: a figure taken on a busy machine must still say so."""
    out = []
    launches = record.samples.launches
    for launch in launches:
        noisy = None if launch.excluded and len(launches) >= 2 else launch.machine.get("noisy")
        if noisy:
            reason = noisy if isinstance(noisy, str) else "the machine state flagged it"
            out.append(f"{_launch_name(launch, record)}: noisy machine: {reason}")
    return out


def warnings(record: Record) -> list[str]:
    """Why a point's figures are suspect: failed launches, drift, disturbed launches, a noisy machine."""
    return [*failed_launches(record), *drift_flags(record), *excluded_launches(record), *machine_noise(record)]


def time_split_columns(split: Optional[TimeSplit]) -> dict:
    """``time_<part>`` seconds for every part of the time split (None when the record has none)."""
    return {f"{TIME_PREFIX}{field}": (getattr(split, field) if split else None) for field, _ in TIME_SPLIT}


def gate_detail_columns(gate: Correctness) -> dict:
    """Per-phase KL, the KL distribution, the same-weights and dequantized-model verdicts, flat (#20)."""
    out: dict = {}
    for name in ("prefill", "decode"):
        phase = getattr(gate.phases, name, None) if gate.phases else None
        out[f"gate_{name}_kl_ratio"] = phase.kl_ratio if phase else None
        out[f"gate_{name}_verdict"] = phase.verdict if phase else None
    spread = gate.distribution.forward if gate.distribution else None
    for stat in ("median", "p90", "p99", "max"):
        out[f"gate_kl_{stat}"] = getattr(spread, stat) if spread else None
    same = gate.same_weights
    out["gate_same_weights_verdict"] = same.verdict if same else None
    out["gate_same_weights_kl_ratio"] = same.kl_ratio if same else None
    out["gate_model_verdict"] = same.model_verdict if same else None
    model = same.dequantized_model if same else None  # against transformers on the dequantized weights
    out["gate_dequantized_model_verdict"] = (model.verdict or f"skipped: {model.skipped}") if model else None
    out["gate_dequantized_model_kl_ratio"] = model.kl_ratio if model else None
    checks = gate.text_path.checks() if gate.text_path else {}
    for name in ("tokenizer", "chat_template", "free_text", "batch"):  # verdict, or "skipped: why"
        check = checks.get(name)
        out[f"gate_{name}"] = (check.verdict or f"skipped: {check.skipped}") if check is not None else None
    return out


def precision_columns(record: Record) -> dict:
    """``precision``: what the point ran at (the adapter's own word, e.g. a GGUF's ``q4_k_m``; else the
    quantization axis, or the model's dtype at ``none``), and ``quantization``: the axis value, or the
    adapter's precision where the axis says ``none`` but the model file itself is quantized."""
    axis = record.point.get("quantization")
    ran = record.engine.precision
    dtype = (record.settings.get("model") or {}).get("dtype")
    if ran is None:
        ran = axis if axis not in (None, "none") else dtype
    out = {"precision": ran}
    if axis == "none" and is_quantized(record.engine.precision):
        out["quantization"] = ran
    return out


def flatten(record: Record) -> dict:
    """One flat row for a record: identity, axes, metrics, the gate's summary, accuracy, provenance.
    Pandas, the report and pytest-benchmark all use it, so their columns cannot drift apart."""
    gate = record.correctness or Correctness()
    return {
        "scenario": record.scenario,
        "point_id": record.point_id,
        "status": record.status,
        "record_kind": record.kind,  # run | verify (gate only: no timing columns)
        "reason": record.reason,
        **record.point,
        **precision_columns(record),
        **record.metrics,
        "gate_verdict": gate.verdict,
        "gate_k": gate.k,
        "gate_mode": gate.mode,
        "gate_kl_mean": gate.kl_mean,
        "gate_kl_ratio": gate.kl_ratio,
        "gate_top1_match_rate": gate.top1_match_rate,
        "gate_divergence_index": gate.free_divergence_index,
        "gate_skipped": gate.skipped,
        "gate_reasons": "; ".join(gate.reasons) or None,
        **gate_detail_columns(gate),
        **gate_class_columns(gate),
        **accuracy_columns(record.accuracy),
        **interval_columns(record),
        "failed_launches": "; ".join(failed_launches(record)) or None,
        "drift_flags": "; ".join(drift_flags(record)) or None,
        "machine_noise": "; ".join(machine_noise(record)) or None,
        "excluded_launches": "; ".join(excluded_launches(record)) or None,
        "canary_ratio": canary_ratio(record),
        **time_split_columns(record.time_split),
        "model": record.model.name,
        "model_checksum": record.model.checksum,
        "engine": record.engine.name,
        "engine_version": record.engine.version,
        "emulated": record.engine.emulated,
        "host": record.environment.get("hostname"),
        "started_at": record.started_at,
    }
