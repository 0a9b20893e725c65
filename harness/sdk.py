"""The adapter SDK: everything a third-party adapter may import from the harness, and nothing else.

Names here keep working across releases (a change is announced with a deprecation warning first);
any other ``harness`` module is internal and may change. A complete adapter built only on this
module: ``examples/numpy_adapter``.

- ``Adapter``: the base class (its ``supports_*`` flags declare optional capabilities: a class that
  overrides an optional method without setting the flag gets the flag; ``OPTIONAL_METHODS`` lists
  them). ``LoadSettings``: what ``load`` receives besides the model and the point. ``Point``,
  ``ResolvedModel``: the types of ``load``'s other arguments.
- ``AdapterOptions``: the base of an adapter's ``Options`` class attribute, a pydantic model of the
  scenario's ``adapter_options: {<name>: {...}}`` for it (unknown keys are refused by ``harness check``
  with the closest valid key); ``load`` receives them validated as ``settings.options``.
- ``EngineInfo``: what ``describe()`` returns, the record's ``engine`` part (name, version, device, driver,
  precision, threads; engine-specific facts under ``extra``).
- ``GenerationTrace``, ``now_ns``, ``greedy_trace``: the timed result of ``generate``, the one clock,
  and a timed greedy loop for engines driven step by step.
- ``speculation_of(point.speculative)``: the point's ``Speculation`` (none, prompt lookup or a draft, with its
  sizes); ``VerifySteps``: what a speculative ``generate`` counts into its trace's ``speculation``, for an adapter
  that overrides ``generate_plain`` (its target without the draft).
- ``PointSkipped``: raise from ``load`` when a point cannot run with this model here.
  ``Unsupported``: what an optional method raises on a point that lacks it (set the flag too).
- ``register_adapter``: register a class in-process (packages use the ``harness.adapters`` entry point).
- ``build_once``, ``cache_dir``, ``safe_name``: build a converted artefact once into the harness
  cache, atomically, under a file-system-safe name.
- ``NumpyLlamaRunner``: a NumPy Llama/Qwen2 forward pass with a KV cache (``prepare``, ``prefill``,
  ``decode`` -> fp32 logits): a CPU reference to test an adapter's plumbing against. Imported on
  first use, so importing the SDK does not import NumPy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.adapters.base import Adapter, LoadSettings, PointSkipped
from harness.adapters.capabilities import OPTIONAL_METHODS
from harness.adapters.engine_options import AdapterOptions
from harness.adapters.registry import register_adapter
from harness.adapters.speculation import VerifySteps
from harness.adapters.trace import GenerationTrace, greedy_trace, now_ns
from harness.errors import Unsupported
from harness.io import safe_name
from harness.models.cache_build import build_once
from harness.models.sources import ResolvedModel, cache_dir
from harness.records.engine import EngineInfo
from harness.scenario.speculative import Speculation
from harness.scenario.speculative import parse as speculation_of
from harness.scenario.sweep import Point

if TYPE_CHECKING:
    from harness.adapters.xrt.npu_reference import NumpyLlamaRunner

__all__ = [
    "OPTIONAL_METHODS",
    "Adapter",
    "AdapterOptions",
    "EngineInfo",
    "GenerationTrace",
    "LoadSettings",
    "NumpyLlamaRunner",
    "Point",
    "PointSkipped",
    "ResolvedModel",
    "Speculation",
    "Unsupported",
    "VerifySteps",
    "build_once",
    "cache_dir",
    "greedy_trace",
    "now_ns",
    "register_adapter",
    "safe_name",
    "speculation_of",
]


def __getattr__(name: str):
    if name == "NumpyLlamaRunner":
        from harness.adapters.xrt.npu_reference import NumpyLlamaRunner

        return NumpyLlamaRunner
    raise AttributeError(f"module 'harness.sdk' has no attribute {name!r}")
