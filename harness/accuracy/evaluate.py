"""Task accuracy through lm-evaluation-harness: a point's adapter scored on the scenario's ``accuracy``
tasks, beside the HF reference on the same tasks (computed once per model and task set, then reused).

Shipped tasks (``harness/accuracy/tasks``, offline): ``harness_cloze`` (LAMBADA style) and ``harness_choice``
(PIQA / HellaSwag style). Any standard lm-eval task name also works where its dataset is cached.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import numbers
import os
import time
from pathlib import Path
from typing import NamedTuple, Optional

from harness.records.record import TaskOutcomes

TASKS_DIR = Path(__file__).resolve().parent / "tasks"
DEFAULT_BOOTSTRAP = 200  # perplexity's stderr is bootstrapped; lm-eval's 100000 takes minutes


def unavailable() -> Optional[str]:
    """Why task accuracy cannot run here (lm-eval missing), or None."""
    from importlib.util import find_spec

    if find_spec("lm_eval") is None:
        return "lm-eval is not installed: pip install -e '.[accuracy]'"
    return None


def _offline() -> None:
    # nothing here may reach a dataset hub: local JSON and already-cached datasets only
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


SHIPPED = frozenset(path.stem for path in TASKS_DIR.glob("*.yaml"))


def task_manager(tasks=()):
    """Shipped tasks, plus lm-eval's own index only when a task needs it (indexing all of them takes seconds)."""
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASKS_DIR), include_defaults=not set(tasks) <= SHIPPED)


class Evaluation(NamedTuple):
    scores: dict[str, dict[str, float]]  # {task: {metric: value, metric_stderr: value, items: n}}
    outcomes: Optional[dict[str, TaskOutcomes]]  # per-document outcomes (None: a reference stored without)


class Reference(NamedTuple):
    """The HF reference's scores; ``outcomes`` is None in a file stored before per-item outcomes were kept
    (``why_unpaired`` says so)."""

    scores: dict[str, dict[str, float]]
    outcomes: Optional[dict[str, TaskOutcomes]]
    path: Path

    @property
    def why_unpaired(self) -> Optional[str]:
        if self.outcomes is not None:
            return None
        return (
            f"the stored accuracy reference {self.path} predates per-item outcomes: delete it to recompute it with them"
        )


@contextlib.contextmanager
def _pools_without_fork():
    """lm-eval bootstraps some metrics' stderr (perplexity) in a ``multiprocessing.Pool``. Forked from this
    process, whose torch and tokenizer threads may hold locks at that moment, a pool worker can block
    forever on one (seen: a ``SemLock`` in a forked worker, the sweep hung). Pools made inside this block
    start their workers from a fork server instead, which forks from a clean single-threaded process."""
    import multiprocessing

    before = multiprocessing.get_start_method(allow_none=True)
    multiprocessing.set_start_method("forkserver", force=True)
    try:
        yield
    finally:
        multiprocessing.set_start_method(before, force=True)


def evaluate(
    lm, tasks: list[str], limit: Optional[int], num_fewshot: int, bootstrap_iters: int = DEFAULT_BOOTSTRAP
) -> Evaluation:
    """An lm-eval LM's scores on ``tasks`` and its per-document outcomes."""
    _offline()
    import logging

    from lm_eval import simple_evaluate

    logging.getLogger("lm_eval").setLevel(logging.ERROR)
    manager = task_manager(tasks)
    unknown = [name for name in tasks if name not in manager.all_tasks]
    if unknown:
        raise ValueError(
            f"accuracy.tasks: {', '.join(map(repr, unknown))} unknown: not shipped "
            f"({', '.join(sorted(SHIPPED))}) and not an lm-eval task, group or tag"
        )
    quiet = os.environ.get("TQDM_DISABLE")
    os.environ["TQDM_DISABLE"] = "1"  # lm-eval's per-task bars would interleave with the sweep's progress
    try:
        with _pools_without_fork():
            out = simple_evaluate(
                model=lm,
                tasks=list(tasks),
                num_fewshot=num_fewshot,
                limit=limit,
                task_manager=manager,
                log_samples=True,
                bootstrap_iters=bootstrap_iters,
                verbosity="ERROR",
            )
    finally:
        if quiet is None:
            os.environ.pop("TQDM_DISABLE", None)
        else:
            os.environ["TQDM_DISABLE"] = quiet
    scores = {
        task: {**_metrics(values), "items": int(values.get("sample_len", 0))} for task, values in out["results"].items()
    }
    return Evaluation(scores, outcomes(out))


def _metrics(values: dict) -> dict[str, float]:
    """lm-eval's ``"acc,none"`` / ``"acc_stderr,none"`` keys as ``acc`` / ``acc_stderr``."""
    metrics = {}
    for key, value in values.items():
        name, _, _filter = key.partition(",")
        if name not in ("alias", "sample_len") and isinstance(value, (int, float)):
            metrics[name] = float(value)
    return metrics


def outcomes(out: dict) -> dict[str, TaskOutcomes]:
    """Per-document outcomes from ``simple_evaluate(log_samples=True)``'s output, by task, in doc id order.

    Where a task applies several filters, the last one's values are kept, as ``_metrics`` keeps its score."""
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


def delta(point: dict, reference: dict) -> dict[str, dict[str, float]]:
    """Point minus reference for every metric both have (stderrs excluded)."""
    return {
        task: {
            m: point[task][m] - reference[task][m]
            for m in point[task]
            if not m.endswith("_stderr") and m != "items" and m in reference.get(task, {})
        }
        for task in point
        if task in reference
    }


def _tasks_sha() -> str:
    digest = hashlib.sha256()
    for path in sorted(TASKS_DIR.iterdir()):
        if path.suffix in (".jsonl", ".yaml", ".py"):
            digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()


def reference(
    model,
    tasks: list[str],
    limit: Optional[int],
    num_fewshot: int,
    dtype: str,
    threads: Optional[int],
    store: Path,
    log=lambda message: None,
    compute=None,
    refresh: bool = False,
) -> Reference:
    """The HF ``dtype`` model's scores and per-document outcomes on ``tasks``, cached under ``store`` by
    everything they depend on.

    Computed under a lock beside the file, so runners sharing ``store`` compute it once (the others
    wait, then read); ``compute()`` (injectable for tests) returns an ``Evaluation``. A file stored before
    outcomes were kept still loads (``Reference.outcomes`` is None); ``refresh`` recomputes it."""
    import lm_eval

    from harness.io import compute_once, write_json_atomic

    key = json.dumps(
        {
            "model": model.checksum,
            "tasks": sorted(tasks),
            "limit": limit,
            "fewshot": num_fewshot,
            "dtype": dtype,
            "task_data": _tasks_sha(),
            "lm_eval": lm_eval.__version__,
        },
        sort_keys=True,
    )
    path = Path(store) / f"accuracy-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"
    start = time.perf_counter()

    def compute_scores() -> Evaluation:
        if compute is not None:
            return compute()
        from harness.accuracy.lm_eval_model import HarnessLM
        from harness.correctness.reference import eos_ids, hf_engine

        with hf_engine(model, dtype, threads) as engine:
            tokenizer = model.tokenizer()
            lm = HarnessLM.from_adapter(engine, tokenizer, eos_ids(model, tokenizer), model.engine_name(f"hf-{dtype}"))
            return evaluate(lm, tasks, limit, num_fewshot)

    def write(target: Path, found: Evaluation) -> None:
        outcomes = {task: o.model_dump(mode="json") for task, o in found.outcomes.items()}
        write_json_atomic(
            target,
            {
                "key": json.loads(key),
                "scores": found.scores,
                "outcomes": outcomes,
                "compute_s": time.perf_counter() - start,
            },
        )

    found, reused = compute_once(path, _read, compute_scores, write, refresh=refresh)
    if reused:
        log(f"accuracy reference: reused {path}")
    else:
        log(f"accuracy reference: computed in {time.perf_counter() - start:.1f} s, stored at {path}")
    return Reference(found.scores, found.outcomes, path)


def _read(path: Path) -> Optional[Evaluation]:
    """A stored reference, or None when there is none; ``outcomes`` None in a file that has none."""
    from pydantic import TypeAdapter, ValidationError

    from harness.io import read_json
    from harness.records.record import describe_errors

    if not path.exists():
        return None
    data = read_json(path)
    stored = data.get("outcomes")
    try:
        found = None if stored is None else TypeAdapter(dict[str, TaskOutcomes]).validate_python(stored)
    except ValidationError as exc:
        raise ValueError(describe_errors(exc, f"{path}: outcomes")) from None
    return Evaluation(data["scores"], found)
