"""Typed errors. The CLI prints them as one line; nothing here carries a traceback to users."""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from pathlib import Path
from typing import Callable, Optional


class HarnessError(Exception):
    """Base class for errors the harness reports to users without a traceback."""

    exit_code = 1


class ScenarioError(HarnessError):
    """A scenario file is malformed: names the file, the line and the field."""

    exit_code = 2

    def __init__(self, path: str, message: str, line: int | None = None, field: str | None = None):
        self.path, self.line, self.field, self.message = str(path), line, field, message
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {field}: {message}" if field else f"{where}: {message}")


class ScenarioErrors(HarnessError):
    """Several problems in one or more scenario files, reported together."""

    exit_code = 2

    def __init__(self, errors: list[ScenarioError]):
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


class UnknownAdapter(HarnessError):
    exit_code = 2


class ModelError(HarnessError):
    """A model source cannot be resolved (missing path, checksum mismatch, ...)."""

    exit_code = 2


class StepFailed(HarnessError):
    """A step preparing a point failed (HF reference, checkpoint load, GGUF conversion, quantization, IR export,
    tokenizer conversion, compile): the message names the file or directory and the step, then the engine's own
    words, e.g. ``/data/m: HF reference (transformers) failed: RuntimeError: The size of tensor a ...``."""

    def __init__(self, where: str | Path, step: str, cause: BaseException):
        self.where, self.step, self.cause = str(where), step, cause
        # one line: an engine's message over several lines (transformers' advice) is joined, not cut
        words = " ".join(line.strip() for line in str(cause).splitlines() if line.strip())
        super().__init__(f"{where}: {step} failed: {type(cause).__name__}: {words}")


# The steps that failed in this process, by (file, step): installed by ``remembering`` (a run's point steps,
# with the process's caches), read by ``step(..., once=True)``; None outside a run, where nothing is remembered.
_failed_steps: ContextVar[Optional[dict[tuple[str, str], StepFailed]]] = ContextVar(
    "harness_failed_steps", default=None
)


@contextlib.contextmanager
def remembering(failures: dict[tuple[str, str], StepFailed]):
    """Inside, a ``step(..., once=True)`` that failed is kept in ``failures`` and not run again: the next
    point of the same file fails at once with the first failure (an HF reference transformers cannot run,
    a tokenizer openvino_tokenizers cannot convert), rather than repeating the work to fail the same way."""
    token = _failed_steps.set(failures)
    try:
        yield
    finally:
        _failed_steps.reset(token)


@contextlib.contextmanager
def step(where: str | Path, name: str, once: bool = False):
    """Run a preparation step: an engine's exception becomes ``StepFailed`` naming ``where`` and ``name``;
    the harness's own errors (which already say what failed) pass unchanged. ``once``: the step's outcome
    depends on ``where`` alone, so a failure is remembered (``remembering``) and the same step of the same
    file fails again without running."""
    memory = _failed_steps.get() if once else None
    key = (str(where), name)
    if memory is not None and key in memory:
        first = memory[key]
        raise StepFailed(first.where, first.step, first.cause) from first.cause  # the engine's traceback kept
    try:
        yield
    except StepFailed as inner:  # a step inside this one: both named, outer first
        if inner.where != str(where) or inner.step.startswith(name):
            failed = inner
        else:
            failed = StepFailed(where, f"{name}: {inner.step}", inner.cause)
        if memory is not None:
            memory[key] = failed
        if failed is inner:
            raise
        raise failed from inner.cause
    except HarnessError:
        raise
    except Exception as exc:  # noqa: BLE001 - any engine exception, named by its step
        failed = StepFailed(where, name, exc)
        if memory is not None:
            memory[key] = failed
        raise failed from exc


class StoredContentError(HarnessError):
    """A stored reference or audit whose content does not match its own digest (``harness.io.sealed``), or
    one written without a digest: one line naming the file and what differs, and how to rebuild it."""

    exit_code = 2


class UsageError(HarnessError):
    """A command-line value or input file the user gave cannot be used; the message says what to give."""

    exit_code = 2


class Unsupported(HarnessError, NotImplementedError):
    """An optional adapter method called on an adapter (or loaded point) that lacks the capability.

    Callers check the adapter's ``supports_*`` flags first; this is the safety net the default
    methods raise. It stays a ``NotImplementedError`` so older callers that caught that still work,
    but the harness never catches ``NotImplementedError`` itself: torch raises it for a missing
    kernel, and that is a failure, not a missing capability.
    """


class WriteFailed(HarnessError):
    """An output could not be written (a full disk, a read-only file system, a directory where a file
    goes): one line naming the path and the OS error, then ``kept``, what is on disk and how to finish.
    A sweep's ``records`` are those written before it, for the summary the command still prints."""

    exit_code = 2

    def __init__(self, path: str | Path, reason: str, kept: str = "", records: list | None = None):
        self.path, self.reason, self.kept = str(path), reason, kept
        self.records = records or []
        super().__init__(f"cannot write {self.path}: {reason}" + (f"; {kept}" if kept else ""))

    @classmethod
    def from_os_error(cls, exc: OSError, where: str | Path) -> WriteFailed:
        """The path the OS named (a rename's target, else the file), or ``where`` for an error on an open
        file (which names none), and the OS's words for the error."""
        return cls(exc.filename2 or exc.filename or where, exc.strerror or str(exc))


@contextlib.contextmanager
def writing(where: str | Path, kept: str | Callable[[], str] = "", records: Callable[[], list] | None = None):
    """The one place an output command's write failure becomes its one line (exit 2): an ``OSError`` raised
    inside, or a ``WriteFailed`` from a lower layer, leaves as ``WriteFailed`` naming the path (``where``
    when the OS names none) and the error, then ``kept`` (a callable is asked at the failure: how many
    points were written) and the ``records`` written so far. Wrap the writes only: a read failure is no
    write failure."""
    try:
        yield
    except (OSError, WriteFailed) as exc:
        failed = WriteFailed.from_os_error(exc, where) if isinstance(exc, OSError) else exc
        said = kept() if callable(kept) else kept
        raise WriteFailed(
            failed.path,
            failed.reason,
            "; ".join(part for part in (failed.kept, said) if part),
            records() if records is not None else failed.records,
        ) from None


# ``harness gate`` and ``harness compare``: a baseline and new records whose fingerprints differ (another CPU,
# driver or engine version) neither pass (0) nor fail (1); usage and environment errors are 2.
EXIT_INCOMPARABLE = 3
# ``harness gate --fail-on-unknown``: nothing failed, but some comparison was inconclusive (neither shown different
# nor shown the same; more launches would decide it).
EXIT_INCONCLUSIVE = 4
