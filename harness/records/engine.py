"""The record's engine part: what the adapter says about the engine that ran a point (``Adapter.describe()``).

Facts every engine can state have one typed field and one spelling (``threads``, never ``n_threads``); the
engine-specific rest goes under ``extra``. The history keys series by ``name``, ``version``, ``device_name``
and ``driver``, the regression check compares them, and the report reads ``precision`` and ``emulated``.
"""

from __future__ import annotations

from typing import Any, Optional

from pydantic import Field, field_validator

from harness.records.base import Part

# An older record's (or a plain-dict ``describe()``'s) key -> the typed field it now is.
RENAMED = {"engine": "name", "engine_version": "version", "n_threads": "threads"}


class EngineInfo(Part):
    """The engine that ran a point, as its adapter describes it after the run."""

    name: Optional[str] = None  # the engine, e.g. "llama.cpp", "openvino-genai", "transformers"
    version: Optional[str] = None  # the engine's version
    device: Optional[str] = None  # the point's device as the adapter names it
    device_name: Optional[str] = None  # the hardware, e.g. the CPU plugin's FULL_DEVICE_NAME
    driver: Optional[str] = None  # the device driver or plugin build (``harness.adapters.drivers``)
    emulated: bool = False  # the device's code path run on the CPU: timings are not the device's
    dtype: Optional[str] = None  # the precision the engine was asked for (the scenario's model.dtype)
    precision: Optional[str] = None  # what it ran at, where the engine says (a GGUF's file type: q4_k_m)
    threads: Optional[int] = None  # engine threads
    options: dict[str, Any] = Field(default_factory=dict)  # the scenario's adapter_options as the engine got them
    extra: dict[str, Any] = Field(default_factory=dict)  # engine-specific facts (file types, hints, compile cache)

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, value):
        return None if value is None else str(value)

    @classmethod
    def from_description(cls, description: EngineInfo | dict) -> EngineInfo:
        """An adapter's ``describe()``: an ``EngineInfo``, or a plain dict (third-party adapters written before
        the typed part), read as an older record's adapter part is (``from_legacy``)."""
        if isinstance(description, EngineInfo):
            return description
        if not isinstance(description, dict):
            raise TypeError(f"describe() returned {type(description).__name__}; expected an EngineInfo")
        return cls.model_validate(from_legacy(description))


def from_legacy(adapter: dict) -> dict:
    """A flat ``adapter`` dict (records of schema version 2 and before) as the engine part's fields: known
    keys renamed to their one spelling, every other key under ``extra``."""
    fields, extra = {}, dict(adapter.get("extra") or {})
    for key, value in adapter.items():
        if key == "extra":
            continue
        name = RENAMED.get(key, key)
        if name in EngineInfo.model_fields and name not in fields:
            fields[name] = value
        else:
            extra[key] = value
    if fields.get("emulated") is None:
        fields.pop("emulated", None)
    return {**fields, "extra": extra} if extra else fields
