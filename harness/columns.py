"""A record as flat columns: the one flattening used by ``results.load`` (pandas), the report's tables,
the pytest-benchmark ``extra_info`` and the regression check's per-round figures."""

from __future__ import annotations

from typing import Optional

from harness.record import Accuracy, Correctness, Record


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
    """``accuracy.<task>.<metric>`` (+ ``.stderr`` and ``.delta``) for every scored metric."""
    out = {}
    if accuracy is None:
        return out
    for task, scores in (accuracy.tasks or {}).items():
        deltas = (accuracy.delta or {}).get(task, {})
        for metric, value in scores.items():
            if metric.endswith("_stderr") or metric == "items":
                continue
            out[f"accuracy.{task}.{metric}"] = value
            out[f"accuracy.{task}.{metric}.stderr"] = scores.get(f"{metric}_stderr")
            out[f"accuracy.{task}.{metric}.delta"] = deltas.get(metric)
    return out


def flatten(record: Record) -> dict:
    """One flat row for a record: identity, axes, metrics, the gate's summary, accuracy, provenance.
    Pandas, the report and pytest-benchmark all use it, so their columns cannot drift apart."""
    gate = record.correctness or Correctness()
    return {
        "scenario": record.scenario,
        "point_id": record.point_id,
        "status": record.status,
        "reason": record.reason,
        **record.point,
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
        **accuracy_columns(record.accuracy),
        "model": record.model.name,
        "model_checksum": record.model.checksum,
        "engine": record.adapter.get("engine"),
        "engine_version": record.adapter.get("engine_version"),
        "emulated": bool(record.adapter.get("emulated")),
        "host": record.environment.get("hostname"),
        "started_at": record.started_at,
    }
