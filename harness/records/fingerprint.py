"""What a record's figures depend on besides the code under test: the machine, the device and its driver,
the engine and its version, the precision, the threads and the workload. Two records whose fingerprints
differ are not comparable: a baseline from another CPU or another driver neither passes nor fails the
regression check, it is *incomparable*, unless the user accepts the named differences."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional

from harness.records.record import Record

# Field -> what it is, for messages and the --accept-difference help.
FIELDS = {
    "cpu_model": "the host CPU",
    "logical_cpus": "the host's CPU count",
    "device_name": "the accelerator (or CPU) the engine ran on",
    "driver": "the device driver or plugin build",
    "engine": "the inference engine",
    "engine_version": "the engine's version",
    "dtype": "the precision the engine ran at",
    "threads": "engine threads",
    "engine_options": "the scenario's adapter options as the engine got them (hints, cache kinds, flags)",
    "workload": "prompts, tokens generated and rounds (generation and measurement settings)",
}


def _text(value) -> Optional[str]:
    return None if value is None or value == "" else str(value)


def fingerprint(record: Record) -> dict[str, Optional[str]]:
    """The record's value for each of ``FIELDS``; None where the record does not say (an older record)."""
    env, engine, settings = record.environment or {}, record.engine, record.settings or {}
    model = settings.get("model") or {}
    workload = {part: settings[part] for part in ("prompts", "generation", "measurement") if part in settings}
    if isinstance(workload.get("measurement"), dict):  # launches and stopping rules change the count, not the work
        kept = ("warmup_rounds", "min_rounds", "min_time_s")  # threads: a field of its own
        measurement = workload["measurement"]
        workload["measurement"] = {k: v for k, v in measurement.items() if k in kept}
        if measurement.get("warmup_new_tokens") is not None:  # unset: as records before the field
            workload["measurement"]["warmup_new_tokens"] = measurement["warmup_new_tokens"]
    return {
        "cpu_model": _text(env.get("cpu_model")),
        "logical_cpus": _text(env.get("logical_cpus")),
        "device_name": _text(engine.device_name),
        "driver": _text(engine.driver),
        "engine": _text(engine.name),
        "engine_version": _text(engine.version),
        "dtype": _text(engine.dtype or model.get("dtype")),
        "threads": _text(engine.threads),
        # every option with its default since schema 3; empty in a record migrated from before: not stated
        "engine_options": json.dumps(engine.options, sort_keys=True, default=str) if engine.options else None,
        "workload": json.dumps(workload, sort_keys=True) if workload else None,
    }


@dataclass(frozen=True)
class Difference:
    field: str
    before: str
    after: str

    def __str__(self) -> str:
        if self.field == "workload":
            return "workload: the scenario's prompts, generation or measurement settings differ"
        if self.field == "engine_options":
            return f"engine_options: {self.before} -> {self.after}"
        return f"{self.field}: {self.before!r} -> {self.after!r}"


def differences(before: Record, after: Record, accept: frozenset[str] = frozenset()) -> list[Difference]:
    """Fields both records state and that differ, less those the user accepts."""
    a, b = fingerprint(before), fingerprint(after)
    return [
        Difference(name, a[name] or "", b[name] or "")
        for name in FIELDS
        if name not in accept and a[name] is not None and b[name] is not None and a[name] != b[name]
    ]


def parse_accepted(text: Optional[str]) -> frozenset[str]:
    """``--accept-difference cpu_model,driver`` as field names; an unknown name is a ValueError listing them."""
    names = frozenset(n.strip() for n in (text or "").split(",") if n.strip())
    unknown = sorted(names - set(FIELDS) - {"all"})
    if unknown:
        raise ValueError(
            f"--accept-difference: unknown field(s) {', '.join(unknown)}; expected some of {', '.join(FIELDS)} or all"
        )
    return frozenset(FIELDS) if "all" in names else names
