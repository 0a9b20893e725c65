"""lm-eval's output read back: each task's metrics under plain names, and its per-document outcomes (what
the paired verdicts of ``harness.accuracy.paired`` compare)."""

from __future__ import annotations

import numbers
from typing import Optional

from harness.records.accuracy import TaskOutcomes


def flat_metrics(values: dict) -> dict[str, float]:
    """lm-eval's ``"acc,none"`` / ``"acc_stderr,none"`` keys as ``acc`` / ``acc_stderr``."""
    metrics = {}
    for key, value in values.items():
        name, _, _filter = key.partition(",")
        if name not in ("alias", "sample_len") and isinstance(value, (int, float)):
            metrics[name] = float(value)
    return metrics


def outcomes(out: dict) -> dict[str, TaskOutcomes]:
    """Per-document outcomes from ``simple_evaluate(log_samples=True)``'s output, by task, in doc id order.

    Where a task applies several filters, the last one's values are kept, as ``flat_metrics`` keeps its score."""
    found = {}
    for task, samples in (out.get("samples") or {}).items():
        aggregation = _aggregations(out.get("configs", {}).get(task, {}), samples)
        by_metric: dict[str, dict[int, object]] = {}
        for sample in samples:
            for metric in sample.get("metrics", ()):
                by_metric.setdefault(metric, {})[int(sample["doc_id"])] = sample.get(metric)
        doc_ids = sorted({doc for docs in by_metric.values() for doc in docs})
        values, weights = {}, {}
        for metric, docs in by_metric.items():
            if sorted(docs) != doc_ids:
                continue
            column = [_as_pair(docs[doc]) for doc in doc_ids]
            if any(item is None for item in column) or len({weight is None for _, weight in column}) > 1:
                continue  # (gold, prediction) pairs and the like: no per-item number to pair
            values[metric] = [_compact(value) for value, _ in column]
            if any(weight is not None for _, weight in column):
                weights[metric] = [_compact(weight) for _, weight in column]
        better = out.get("higher_is_better", {}).get(task, {})
        found[task] = TaskOutcomes(
            doc_ids=doc_ids,
            values=values,
            weights=weights,
            aggregation=aggregation,
            higher_is_better={m: bool(b) for m, b in better.items() if b is not None},
        )
    return found


def _aggregations(config: dict, samples: list[dict]) -> dict[str, str]:
    """Each metric's lm-eval aggregation by its registered name: the task's ``metric_list``, else lm-eval's
    default for the metric."""
    from lm_eval.api.registry import AGGREGATION_REGISTRY, get_metric_aggregation

    registered = {id(function): name for name, function in AGGREGATION_REGISTRY.items()}

    def name_of(aggregation) -> str:
        return aggregation if isinstance(aggregation, str) else registered.get(id(aggregation), "")

    named = {
        entry["metric"]: name_of(entry["aggregation"])
        for entry in config.get("metric_list") or ()
        if isinstance(entry.get("metric"), str) and entry.get("aggregation") is not None
    }
    for metric in {m for sample in samples for m in sample.get("metrics", ())} - set(named):
        try:
            named[metric] = name_of(get_metric_aggregation(metric))
        except (KeyError, ValueError):
            named[metric] = ""
    return named


def _as_pair(value) -> Optional[tuple[float, Optional[float]]]:
    """``(value, weight)``: a number has no weight; weighted metrics log ``(log-likelihood, words or bytes)``."""

    def number(x):
        return isinstance(x, numbers.Real)  # numpy's and booleans included

    if number(value):
        return float(value), None
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(map(number, value)):
        return float(value[0]), float(value[1])
    return None


def _compact(value: float):
    return int(value) if float(value).is_integer() and abs(value) < 2**53 else value  # 0/1 stay short in JSON
