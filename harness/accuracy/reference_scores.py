"""The HF reference's task scores, computed once per model and task set under a lock, stored, then reused;
and a point's delta from it."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import NamedTuple, Optional

from harness.accuracy.evaluate import TASKS_DIR, Evaluation, evaluate
from harness.records.accuracy import TaskOutcomes


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
    wait, then read); ``compute()`` (injectable for tests) returns an ``Evaluation``. The file is sealed with
    a digest of its content (``harness.io.sealed``): one edited since, or stored before the digest, is
    refused in one line; ``refresh`` recomputes it."""
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
        from harness.io import sealed

        outcomes = {task: o.model_dump(mode="json") for task, o in found.outcomes.items()}
        stored = {
            "key": json.loads(key),
            "scores": found.scores,
            "outcomes": outcomes,
            "compute_s": time.perf_counter() - start,
        }
        write_json_atomic(target, sealed.seal(stored))

    found, reused = compute_once(path, _read, compute_scores, write, refresh=refresh)
    if reused:
        log(f"accuracy reference: reused {path}")
    else:
        log(f"accuracy reference: computed in {time.perf_counter() - start:.1f} s, stored at {path}")
    return Reference(found.scores, found.outcomes, path)


def _read(path: Path) -> Optional[Evaluation]:
    """A stored reference, or None when there is none; ``outcomes`` None in a file that has none."""
    from pydantic import TypeAdapter, ValidationError

    from harness.io import read_json, sealed
    from harness.records.record import describe_errors

    if not path.exists():
        return None
    data = sealed.check(path, read_json(path), "stored accuracy reference")  # edited scores are refused
    stored = data.get("outcomes")
    try:
        found = None if stored is None else TypeAdapter(dict[str, TaskOutcomes]).validate_python(stored)
    except ValidationError as exc:
        raise ValueError(describe_errors(exc, f"{path}: outcomes")) from None
    return Evaluation(data["scores"], found)
