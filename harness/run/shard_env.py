"""``--shard auto``: this machine's shard read from the scheduler that started it.

Each scheduler names a job's place among its parallel siblings in its own variables, some 0-based, some
1-based; ``Shard`` is 1-based. Looked for in this order, the first whose index variable is set wins:

- ``HARNESS_SHARD_INDEX`` (1-based) and ``HARNESS_SHARD_COUNT``: set them yourself where the scheduler has no
  variables of its own, e.g. GitHub Actions' matrix (``env: {HARNESS_SHARD_INDEX: ${{ matrix.shard }},
  HARNESS_SHARD_COUNT: 4}``).
- Slurm job arrays: ``SLURM_ARRAY_TASK_ID`` minus ``SLURM_ARRAY_TASK_MIN`` (divided by
  ``SLURM_ARRAY_TASK_STEP``), of ``SLURM_ARRAY_TASK_COUNT``: ``--array=0-3`` and ``--array=1-4`` alike.
- Kubernetes Indexed Jobs: ``JOB_COMPLETION_INDEX`` (0-based, set by Kubernetes); Kubernetes gives no
  count, so the Job sets ``HARNESS_SHARD_COUNT`` to its ``spec.completions``.
- GitLab ``parallel:``: ``CI_NODE_INDEX`` (1-based) of ``CI_NODE_TOTAL``.
- Buildkite ``parallelism:``: ``BUILDKITE_PARALLEL_JOB`` (0-based) of ``BUILDKITE_PARALLEL_JOB_COUNT``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

from harness.errors import UsageError

COUNT = "HARNESS_SHARD_COUNT"


@dataclass(frozen=True)
class Source:
    """One scheduler's variables: ``index`` (``base``-based, offset by ``minimum`` and ``step`` when given)
    and ``count``."""

    name: str
    index: str
    count: str
    base: int
    minimum: Optional[str] = None
    step: Optional[str] = None


SOURCES = (
    Source("HARNESS_SHARD_INDEX", "HARNESS_SHARD_INDEX", COUNT, 1),
    Source(
        "Slurm job array",
        "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_COUNT",
        0,
        "SLURM_ARRAY_TASK_MIN",
        "SLURM_ARRAY_TASK_STEP",
    ),
    Source("Kubernetes Indexed Job", "JOB_COMPLETION_INDEX", COUNT, 0),
    Source("GitLab parallel", "CI_NODE_INDEX", "CI_NODE_TOTAL", 1),
    Source("Buildkite parallel", "BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT", 0),
)


def _number(env: Mapping[str, str], name: str, what: str) -> int:
    text = env.get(name)
    if text is None or not text.strip():
        raise UsageError(f"--shard auto: {name} is not set; expected {what}")
    try:
        return int(text.strip())
    except ValueError:
        raise UsageError(f"--shard auto: {name}={text!r}; expected {what}") from None


def from_environment(env: Mapping[str, str]) -> tuple[int, int, str]:
    """(1-based index, count, where they came from) of the first scheduler in ``SOURCES`` whose index variable
    ``env`` sets; a UsageError naming the variable when one is missing or out of range, or listing them all
    when none is set."""
    for source in SOURCES:
        if source.index not in env:
            continue
        raw = _number(env, source.index, "a whole number")
        count = _number(env, source.count, f"the number of shards ({source.name})")
        offset = _number(env, source.minimum, "the array's first task id") if source.minimum else 0
        step = _number(env, source.step, "the array's step") if source.step and env.get(source.step) else 1
        if step < 1 or (raw - offset) % step:
            raise UsageError(f"--shard auto: {source.index}={raw} is not on the array's step {step} from {offset}")
        index = (raw - offset) // step + 1 - source.base
        if count < 1 or not 1 <= index <= count:
            raise UsageError(
                f"--shard auto: {source.index}={raw} ({source.name}, {source.base}-based"
                + (f", from {source.minimum}={offset}" if source.minimum else "")
                + f") is not a shard of {source.count}={count}"
            )
        detail = f"{source.index}={raw}, {source.count}={count}"
        return index, count, f"{source.name} ({detail})"
    names = ", ".join(f"{s.index}+{s.count}" for s in SOURCES)
    raise UsageError(f"--shard auto: no scheduler's shard variables are set; expected one of {names}")
