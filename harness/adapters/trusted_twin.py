"""A loaded point's own weights on a trusted engine path (``Adapter.trusted_twin``), and the engine's own
rounding of what flows between its weights, for the same-weights reference (``harness.correctness.same_weights``)
and the dequantized-model floor (``harness.correctness.dequantized_model``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager, Optional


@dataclass(frozen=True)
class ActivationRounding:
    """How an engine rounds what flows between its weights, for HF transformers to imitate on the
    artefact's dequantized weights (the dequantized-model floor, ``harness.correctness.dequantized_model``).
    ``inputs(stored_type)``: the rounding of a matmul's input whose weight the artefact stores as
    ``stored_type`` (a ``stored_weights.Tensor.stored_type``), None for none; ``attention``: the rounding of
    the attention's Q, K and V (the KV cache's storage type), None for none. An engine that computes a whole
    model in a lower precision (OpenVINO's CPU plugin at bf16) also rounds ``weights`` (every matrix as its
    kernels read it) and ``activations`` (every tensor between ops: each Linear's input and output, the
    embeddings', norms' and decoder layers' outputs), None for none. Each maps a torch tensor to one of the
    same shape and dtype. ``method`` names the model and its version (part of the reference's key)."""

    method: str
    inputs: Callable[[str], Optional[Callable[[Any], Any]]]
    attention: Optional[Callable[[Any], Any]] = None
    weights: Optional[Callable[[Any], Any]] = None
    activations: Optional[Callable[[Any], Any]] = None


@dataclass(frozen=True)
class Twin:
    """A loaded point's own weights on a trusted engine path (``Adapter.trusted_twin``), for the
    same-weights reference (``harness.correctness.same_weights``). ``open(variant)`` is a context manager giving an
    object with step-wise ``prefill``/``decode`` (fp32 logits, as on an adapter): variant ``"reference"``
    computes the reference, ``"floor"`` the identical-weights noise floor, a run that differs from it
    only in what should not matter (``floor_method`` says what)."""

    engine: str  # the trusted path, e.g. "OpenVINO CPU plugin, step-wise, f32 inference precision, ..."
    weights: str  # the file it runs
    key: str  # identity of those weights and that path, the same on every runner (stored reference's key)
    floor_method: str
    open: Callable[[str], ContextManager[Any]]
    versions: dict = field(default_factory=dict)
    # The artefact's weights read back without the engine, dequantized to fp32 under the HF checkpoint's
    # names: ``read_weights({hf name: shape}, hf config) -> {hf name: stored_weights.Tensor}``, for the
    # dequantized check (``harness.correctness.dequantized``); None where the twin has no reader.
    read_weights: Optional[Callable[[dict, dict], dict]] = None
    # The engine's own rounding of activations and KV cache (``ActivationRounding``), or why this twin has
    # no model of it: the dequantized-model floor then falls back to HF bf16 against fp32.
    rounding: ActivationRounding | str = "no model of the engine's activation rounding"
