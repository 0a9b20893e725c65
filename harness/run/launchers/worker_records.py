"""The parts of a point's record that only the parent of an isolated worker knows: why a launch whose worker
died or ran out of time has no result (with the tail of the worker's output), the memory limit a failure
most likely hit, and the worker's own start and the hand-over in the time split."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from harness.records.record import Record
    from harness.run.settings import Limits

TAIL_LINES = 40


def lost(record: Record, outcome: str, code: int, limits: Limits, output_path: Path, offset: int) -> None:
    """Mark ``record`` (begun by ``harness.run.steps.new_record``) as a launch whose worker died (exit
    ``code``) or ran out of time (``outcome``)."""
    from harness.records.record import Failure

    record.status = "failed"
    if outcome == "timeout":
        record.status, record.reason = "timeout", f"no result within {limits.timeout_s:g} s; the process was killed"
    elif code < 0:
        name = signal.Signals(-code).name
        record.reason = f"the engine process was killed by {name} (signal {-code})"
        if -code == signal.SIGABRT and limits.memory_limit_mb:  # native engines abort when allocation fails
            record.reason += f"; most likely {memory_limit(limits)}"
        elif -code == signal.SIGKILL and limits.memory_limit_mb:
            record.reason += f"; {memory_limit(limits)}, or the OOM killer"
    else:
        record.reason = f"the engine process exited with code {code} before writing a result"
    record.failure = Failure(
        exit_code=code,
        output_tail=tail(output_path, offset),
        signal=signal.Signals(-code).name if code < 0 and outcome != "timeout" else None,
    )


def account(
    record, startup: Optional[tuple[float, float]], first: bool, elapsed: float, start_in_elapsed: bool = True
) -> None:
    """Add what the worker could not see to the record's time split: its own start (``startup``: process
    start s, imports s; first point only) and the hand-over of the job and the record (``elapsed`` less the
    worker's own split, and less its start when that fell inside ``elapsed``)."""
    from harness.records.samples import TimeSplit

    split = record.time_split or TimeSplit()
    inside = sum(split.model_dump().values())
    if first and startup is None:  # died before it was ready: starting is all it did
        process_start, imports, handover = elapsed, 0.0, 0.0
    else:
        process_start, imports = startup if first else (0.0, 0.0)
        handover = max(0.0, elapsed - inside - ((process_start + imports) if start_in_elapsed else 0.0))
    record.time_split = split.model_copy(
        update={"process_start_s": process_start, "imports_s": imports, "other_s": split.other_s + handover}
    )


def spare_wait(began: float, worker_ready: Optional[float], worker_alive: bool, spare_ready: float) -> float:
    """Of the next group's worker's start, begun at ``began`` beside this group's, the seconds the sweep waited
    for it alone: from when this group's worker was ready (``worker_ready``) until it was (``spare_ready``);
    none while this group's worker was still starting, since the sweep waited for that one anyway; all of it
    when this group's worker was gone."""
    if worker_ready is None:
        return 0.0 if worker_alive else max(0.0, spare_ready - began)
    return max(0.0, spare_ready - max(began, worker_ready))


def waited_part(startup: tuple[float, float], waited: float) -> tuple[float, float]:
    """The part of a worker's start (process start s, imports s) that the sweep waited for, ``waited``
    seconds of it: the process start first, then the imports."""
    process_start, imports = startup
    waited = max(0.0, min(waited, process_start + imports))
    return min(process_start, waited), max(0.0, waited - process_start)


def memory_limit(limits: Limits) -> str:
    return f"memory limit {limits.memory_limit_mb} MiB (--memory-limit-mb) reached"


def tail(path: Path, offset: int = 0) -> str:
    """The last lines the worker wrote since ``offset`` (the point's start)."""
    with path.open("rb") as handle:
        handle.seek(offset)
        lines = handle.read().decode("utf-8", errors="replace").splitlines()
    return "\n".join(lines[-TAIL_LINES:])
