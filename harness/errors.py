"""Typed errors. The CLI prints them as one line; nothing here carries a traceback to users."""

from __future__ import annotations


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
    """A record could not be written mid-sweep (a full disk, a read-only file system, a directory where
    the record goes): the points recorded before it are kept, in ``records``."""

    exit_code = 2

    def __init__(self, message: str, records: list | None = None):
        super().__init__(message)
        self.records = records or []


# ``harness gate`` and ``harness compare``: a baseline and new records whose fingerprints differ (another CPU,
# driver or engine version) neither pass (0) nor fail (1); usage and environment errors are 2.
EXIT_INCOMPARABLE = 3
# ``harness gate --fail-on-unknown``: nothing failed, but some comparison was inconclusive (neither shown different
# nor shown the same; more launches would decide it).
EXIT_INCONCLUSIVE = 4
