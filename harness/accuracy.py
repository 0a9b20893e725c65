"""Task accuracy through lm-evaluation-harness: a point's adapter scored on the scenario's ``accuracy``
tasks, beside the HF reference on the same tasks (computed once per model and task set, then reused).

Shipped tasks (``harness/tasks``, offline): ``harness_cloze`` (LAMBADA style) and ``harness_choice``
(PIQA / HellaSwag style). Any standard lm-eval task name also works where its dataset is cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Optional

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


def evaluate(lm, tasks: list[str], limit: Optional[int], num_fewshot: int,
             bootstrap_iters: int = DEFAULT_BOOTSTRAP) -> dict[str, dict[str, float]]:
    """``{task: {metric: value, metric_stderr: value}}`` for an lm-eval LM."""
    _offline()
    import logging

    from lm_eval import simple_evaluate

    logging.getLogger("lm_eval").setLevel(logging.ERROR)
    manager = task_manager(tasks)
    unknown = [name for name in tasks if name not in manager.all_tasks]
    if unknown:
        raise ValueError(f"accuracy.tasks: {', '.join(map(repr, unknown))} unknown: not shipped "
                         f"({', '.join(sorted(SHIPPED))}) and not an lm-eval task, group or tag")
    quiet = os.environ.get("TQDM_DISABLE")
    os.environ["TQDM_DISABLE"] = "1"  # lm-eval's per-task bars would interleave with the sweep's progress
    try:
        out = simple_evaluate(model=lm, tasks=list(tasks), num_fewshot=num_fewshot, limit=limit,
                              task_manager=manager, log_samples=False, bootstrap_iters=bootstrap_iters,
                              verbosity="ERROR")
    finally:
        if quiet is None:
            os.environ.pop("TQDM_DISABLE", None)
        else:
            os.environ["TQDM_DISABLE"] = quiet
    return {task: {**_metrics(values), "items": int(values.get("sample_len", 0))}
            for task, values in out["results"].items()}


def _metrics(values: dict) -> dict[str, float]:
    """lm-eval's ``"acc,none"`` / ``"acc_stderr,none"`` keys as ``acc`` / ``acc_stderr``."""
    metrics = {}
    for key, value in values.items():
        name, _, _filter = key.partition(",")
        if name not in ("alias", "sample_len") and isinstance(value, (int, float)):
            metrics[name] = float(value)
    return metrics


def delta(point: dict, reference: dict) -> dict[str, dict[str, float]]:
    """Point minus reference for every metric both have (stderrs excluded)."""
    return {task: {m: point[task][m] - reference[task][m] for m in point[task]
                   if not m.endswith("_stderr") and m != "items" and m in reference.get(task, {})}
            for task in point if task in reference}


def _tasks_sha() -> str:
    digest = hashlib.sha256()
    for path in sorted(TASKS_DIR.iterdir()):
        if path.suffix in (".jsonl", ".yaml", ".py"):
            digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()


def reference(model, tasks: list[str], limit: Optional[int], num_fewshot: int, dtype: str,
              threads: Optional[int], store: Path, log=lambda message: None, compute=None) -> dict:
    """The HF ``dtype`` model's scores on ``tasks``, cached under ``store`` by everything they depend on.

    Computed under a lock beside the file, so runners sharing ``store`` compute it once (the others
    wait, then read); ``compute()`` (injectable for tests) returns the scores."""
    import lm_eval

    from harness.io import compute_once, read_json, write_json_atomic

    key = json.dumps({"model": model.checksum, "tasks": sorted(tasks), "limit": limit, "fewshot": num_fewshot,
                      "dtype": dtype, "task_data": _tasks_sha(), "lm_eval": lm_eval.__version__}, sort_keys=True)
    path = Path(store) / f"accuracy-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"
    start = time.perf_counter()

    def compute_scores():
        if compute is not None:
            return compute()
        from harness.lm_eval_model import HarnessLM
        from harness.reference import eos_ids, hf_engine

        with hf_engine(model, dtype, threads) as engine:
            tokenizer = model.tokenizer()
            lm = HarnessLM.from_adapter(engine, tokenizer, eos_ids(model, tokenizer), f"{model.name}:hf-{dtype}")
            return evaluate(lm, tasks, limit, num_fewshot)

    def write(target: Path, scores) -> None:
        write_json_atomic(target, {"key": json.loads(key), "scores": scores, "compute_s": time.perf_counter() - start})

    scores, reused = compute_once(path, lambda p: read_json(p)["scores"] if p.exists() else None, compute_scores, write)
    if reused:
        log(f"accuracy reference: reused {path}")
    else:
        log(f"accuracy reference: computed in {time.perf_counter() - start:.1f} s, stored at {path}")
    return scores
