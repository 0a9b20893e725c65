"""What an isolated worker may use (``--timeout-s``, ``--memory-limit-mb``): the worker enforces it
(``harness.run.isolation``), and a lost point's record names the limit it most likely hit
(``harness.run.worker_records``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Limits:
    timeout_s: Optional[float] = None  # per point
    memory_limit_mb: Optional[int] = None  # the worker's address space


UNLIMITED = Limits()  # the default: no timeout, no memory limit
