"""The canary's calibration, taken once per machine and reused (issue #41). A calibration costs about 3 s
(several readings in a child process, taken again while they spread); a warm sweep paid it every run.
It is kept in the model cache (``<cache dir>/canary/``), in a file named by what makes it valid: the CPU
model, the core count, the canary's code (a digest of ``harness.measure.canary``), the harness and numpy
versions. A stored calibration younger than ``MAX_AGE_S`` is reused after one cheap check: the best of
``CHECK_READINGS`` readings at the run's start (one child process), which must agree with it within
``canary.CALIBRATION_SPREAD`` (the rule that already decides a disturbed calibration); else the run
calibrates afresh and says so in one line.

A file that cannot be read, does not parse, or was edited since it was written (its digest) is ignored
with a one-line note naming it, and replaced by the fresh calibration. Only an undisturbed calibration
is stored. ``--recalibrate`` (``force``) takes a fresh one whatever is stored.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable, Optional

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.measure import canary
from harness.models import sources
from harness.records.samples import CanaryCalibration

MAX_AGE_S = 24 * 3600.0  # a machine's speed drifts (updates, firmware, thermal paste): a day at most
# The check asks "can this machine still run the workload as fast as when it was calibrated?". A busy
# neighbour only ever slows a reading down, so the fastest of a few is the one nearest the machine's own
# speed: the best of 3, not the median, keeps one or two readings slowed by a burst of other work from
# throwing away a good calibration (and taking a fresh one, itself disturbed, under that load). A machine
# that really got slower (a lower clock, a throttled CPU) is slow in all three and is recalibrated; how the
# run's launches are disturbed is the launch edges' business, not this check's.
CHECK_READINGS = 3
FOLDER = "canary"


class MachineKey(BaseModel):
    """What makes a stored calibration valid on this machine."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cpu_model: str
    cores: int
    canary_code: str  # digest of harness/measure/canary.py: a changed workload times something else
    harness_version: str
    numpy_version: str

    def digest(self) -> str:
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]


class Stored(BaseModel):
    """The file: the key it was taken under, the calibration, and a digest of both (an edit shows)."""

    model_config = ConfigDict(extra="forbid")

    key: MachineKey
    calibration: CanaryCalibration
    digest: str

    @staticmethod
    def digest_of(key: MachineKey, calibration: CanaryCalibration) -> str:
        body = json.dumps([key.model_dump(), calibration.model_dump()], sort_keys=True)
        return hashlib.sha256(body.encode()).hexdigest()


@functools.lru_cache(maxsize=1)
def machine_key() -> MachineKey:
    from importlib.metadata import PackageNotFoundError, version

    import harness
    from harness.records.environment import cpu_model

    try:
        numpy_version = version("numpy")
    except PackageNotFoundError:
        numpy_version = "none"
    code = hashlib.sha256(Path(canary.__file__).read_bytes()).hexdigest()[:16]
    return MachineKey(
        cpu_model=cpu_model(),
        cores=os.cpu_count() or 0,
        canary_code=code,
        harness_version=harness.__version__,
        numpy_version=numpy_version,
    )


def path(cache_dir: Optional[Path] = None) -> Path:
    """Where this machine's calibration is kept: one file per key, so machines sharing a cache never
    overwrite each other's."""
    return sources.cache_dir(cache_dir) / FOLDER / f"calibration-{machine_key().digest()}.json"


def _now() -> datetime:
    return datetime.now(timezone.utc)


def load(where: Path) -> tuple[Optional[CanaryCalibration], Optional[str]]:
    """The calibration stored at ``where`` when it is valid here and young enough; else None, with a
    one-line note when the file is there but unusable (a missing or stale file needs no word)."""
    try:
        text = where.read_bytes()
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return (
            None,
            f"canary: ignored the stored calibration {where}: cannot read it ({exc.strerror}); calibrating afresh",
        )
    try:
        stored = Stored.model_validate_json(text)
        taken = datetime.fromisoformat(stored.calibration.taken_at or "")
    except ValidationError as exc:  # the first problem, with its field: one line
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        return None, _unusable(where, f"{field + ': ' if field else ''}{first['msg']}"[:160])
    except ValueError as exc:  # taken_at is not a time
        return None, _unusable(where, f"calibration.taken_at: {exc}"[:160])
    if stored.digest != Stored.digest_of(stored.key, stored.calibration) or not stored.calibration.seconds > 0:
        return None, f"canary: ignored the stored calibration {where}: edited since it was written; calibrating afresh"
    if stored.key != machine_key():
        return None, None  # another machine, canary or harness version: not this machine's calibration
    if taken.tzinfo is None or not timedelta(0) <= _now() - taken <= timedelta(seconds=MAX_AGE_S):
        return None, None
    return stored.calibration, None


def _unusable(where: Path, why: str) -> str:
    return f"canary: ignored the stored calibration {where}: not a calibration file ({why}); calibrating afresh"


def save(where: Path, calibration: CanaryCalibration) -> Optional[str]:
    """Store an undisturbed calibration (atomically: runs on one machine may write at once); a note when
    the cache cannot be written (the run goes on: the calibration is in its records either way)."""
    if calibration.disturbed is not None:
        return None
    kept = calibration.model_copy(update={"reused": False, "check_s": None})
    stored = Stored(key=machine_key(), calibration=kept, digest=Stored.digest_of(machine_key(), kept))
    partial = where.with_name(f"{where.name}.{os.getpid()}.partial")
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(stored.model_dump_json(indent=1))
        os.replace(partial, where)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        return f"canary: could not store the calibration in {where} ({exc.strerror}); the next run calibrates again"
    return None


def fresh(cache_dir: Optional[Path], log: Callable[[str], None]) -> CanaryCalibration:
    """A calibration taken now (``canary.calibrate``), stamped and stored for later runs."""
    made = canary.calibrate().model_copy(update={"taken_at": _now().isoformat(timespec="seconds")})
    note = save(path(cache_dir), made)
    if note:
        log(note)
    return made


@dataclass(frozen=True)
class Check:
    """The run-start readings against a stored calibration: the best of them (``reading_s``) ``agrees``
    within ``CALIBRATION_SPREAD``."""

    readings: tuple[float, ...]
    stored: CanaryCalibration

    @property
    def reading_s(self) -> float:
        return min(self.readings)

    @property
    def agrees(self) -> bool:
        return canary.spread([self.reading_s, self.stored.seconds]) <= canary.CALIBRATION_SPREAD

    def line(self) -> str:
        return (
            f"canary: the best of {len(self.readings)} readings at the run's start took {self.reading_s:.4f} s, "
            f"{self.reading_s / self.stored.seconds:.2f}x the stored calibration's {self.stored.seconds:.4f} s "
            f"(taken {self.stored.taken_at}; beyond {canary.CALIBRATION_SPREAD:.0%}): calibrated afresh"
        )


def start(cache_dir: Optional[Path], force: bool, log: Callable[[str], None]) -> CanaryCalibration:
    """The run's calibration: this machine's stored one when young, valid and confirmed by the readings now;
    else (or with ``force``) a fresh one, stored for the next run. ``log`` hears the one-line notes."""
    if not force:
        stored, note = load(path(cache_dir))
        if note:
            log(note)
        if stored is not None:
            check = Check(tuple(canary.time_readings(CHECK_READINGS)), stored)
            if check.agrees:
                return stored.model_copy(update={"reused": True, "check_s": round(check.reading_s, 6)})
            log(check.line())
    return fresh(cache_dir, log)
