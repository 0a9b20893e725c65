"""Task accuracy through lm-evaluation-harness: a point's adapter scored on the scenario's ``accuracy``
tasks, beside the HF reference on the same tasks (computed once per model and task set, then reused).

Shipped tasks (``harness/accuracy/tasks``, offline): ``harness_cloze`` (LAMBADA style) and ``harness_choice``
(PIQA / HellaSwag style). Any standard lm-eval task name also works where its dataset is cached.

This module runs lm-eval; ``outcomes.py`` reads its output back, ``reference_scores.py`` stores the HF reference's.
"""

from __future__ import annotations

import contextlib
import functools
import os
from pathlib import Path
from typing import NamedTuple, Optional

from harness.accuracy.outcomes import flat_metrics, outcomes
from harness.records.accuracy import TaskOutcomes

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
    return _task_manager(include_defaults=not set(tasks) <= SHIPPED)


@functools.lru_cache(maxsize=2)
def _task_manager(include_defaults: bool):
    # Built once per process: lm-eval's whole index takes about 5 s on 2 cores, and a run reads it twice (the
    # unknown-task check before any point, then the point's evaluation). The manager only reads its index.
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASKS_DIR), include_defaults=include_defaults)


class Evaluation(NamedTuple):
    scores: dict[str, dict[str, float]]  # {task: {metric: value, metric_stderr: value, items: n}}
    outcomes: Optional[dict[str, TaskOutcomes]]  # per-document outcomes (None: a reference stored without)


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
        task: {**flat_metrics(values), "items": int(values.get("sample_len", 0))}
        for task, values in out["results"].items()
    }
    return Evaluation(scores, outcomes(out))
