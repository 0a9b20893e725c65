"""The dequantized-model comparison: a quantized point against HF transformers (fp32) running the point's
own artefact weights, dequantized (``Twin.read_weights``: gguf-py for a GGUF, the IR's compressed
constants for OpenVINO), on the gate's prompts and with the gate's KL.

Against the HF reference a quantized point drifts by design (llama.cpp Q8_0 and Q4 read 5 to 12x the
floor on Gemma), so a kernel fault hides in the quantization cost. The same-weights twin runs the same
weights but on the same engine, so a fault of that engine's kernels (a backend the twin shares) is in
both. Here the weights are the artefact's, exactly, and the engine is another one: what is left is the
engine's own rounding of activations, which the floor measures, and any runtime or kernel fault.

The floor is the engine's rounding where the twin has a model of it (``Twin.rounding``, e.g.
``harness.adapters.llamacpp.rounding``: each quantized matmul's input as Q8_0/Q8_K, Q/K/V in f16):
KL(HF fp32 || HF fp32 with that rounding), both on the dequantized weights. There drift fails the point,
as against its own weights: identical weights, and the engine's rounding accounted for (OpenVINO's,
``harness.adapters.openvino.rounding``, is read from the compiled CPU model). A twin without a rounding
model (or an OpenVINO point with a setting it does not cover) keeps HF bf16 against fp32 as its floor, which a quantized kernel's rounding
exceeds (llama.cpp's Q8_K inputs read 7.7x it on clean Gemma Q4_K_M): there drift is reported only, and
the record (``fail_on_drift``, reasons) and the floor method say so.

The reference is computed and stored like the same-weights one (``same_weights.get_or_compute``, under
``<model>/dequantized-model/``: keyed by the artefact's content, the prompts, the floor method and the
transformers version).
"""

from __future__ import annotations

from contextlib import contextmanager
from importlib.metadata import version
from typing import TYPE_CHECKING, Iterator, Optional

from harness.correctness.stored_reference import Reference
from harness.records.correctness import Correctness
from harness.records.own_weights import DequantizedModel

if TYPE_CHECKING:
    from harness.adapters.trusted_twin import ActivationRounding, Twin

ENGINE = "HF transformers fp32 running the artefact's dequantized weights"
BF16_FLOOR = "teacher-forced KL(HF fp32 || HF bf16), both running the artefact's dequantized weights"
ROUNDED_FLOOR = (
    "teacher-forced KL(HF fp32 || HF fp32 rounding as the engine does: {method}), both running the artefact's "
    "dequantized weights"
)


def rounding_of(twin: Twin) -> Optional[ActivationRounding]:
    """The engine's rounding model the floor imitates, or None (the bf16 floor)."""
    return None if isinstance(twin.rounding, str) else twin.rounding


def floor_method(twin: Twin) -> str:
    rounding = rounding_of(twin)
    if rounding is None:
        return f"{BF16_FLOOR} ({twin.rounding}: drift reported, not failed)"
    return ROUNDED_FLOOR.format(method=rounding.method)


def fails_on_drift(twin: Twin) -> bool:
    """Whether drift fails the point: only where the floor models the engine's rounding."""
    return rounding_of(twin) is not None


def twin_of(model, twin: Twin, threads: Optional[int]) -> Optional[Twin]:
    """The dequantized model of ``twin``'s artefact as a ``Twin`` (for ``same_weights``' reference and
    comparison); None where the twin has no weights reader."""
    from harness.adapters.trusted_twin import Twin

    if twin.read_weights is None:
        return None
    read_weights = twin.read_weights
    kept: dict = {}

    def read(names: dict, config: dict) -> dict:
        # Once for both variants: reading back a large embedding takes minutes (Gemma's 262k rows).
        if "weights" not in kept:
            kept["weights"] = read_weights(names, config)
        return kept["weights"]

    rounding = rounding_of(twin)

    @contextmanager
    def open_steps(variant: str) -> Iterator:
        from harness.adapters.hf.replaced import with_weights

        # The floor: fp32 with the engine's rounding where it is modelled, else bf16.
        dtype = "fp32" if variant == "reference" or rounding is not None else "bf16"
        rounded = rounding if variant == "floor" else None
        with with_weights(model, read, dtype, threads, "dequantized-model", rounded) as engine:
            yield engine

    return Twin(
        engine=ENGINE,
        weights=twin.weights,
        key=f"dequantized-hf:{twin.key}",
        floor_method=floor_method(twin),
        versions={"transformers": version("transformers"), "torch": version("torch")},
        open=open_steps,
        rounding=twin.rounding,
    )


def summary(result: Correctness, reference: Reference, drift_fails: bool) -> DequantizedModel:
    reasons = [f"against its dequantized weights in transformers: {r}" for r in result.reasons]
    if result.verdict == "drift" and not drift_fails:
        reasons.append(
            "against its dequantized weights in transformers drift is reported, not failed: the floor (HF bf16) "
            "does not model this engine's activation rounding"
        )
    return DequantizedModel(
        verdict=result.verdict,
        reasons=reasons,
        fail_on_drift=drift_fails,
        kl_mean=result.kl_mean,
        noise_floor=result.noise_floor,
        kl_ratio=result.kl_ratio,
        phases=result.phases,
        top1_match_rate=result.top1_match_rate,
        engine=reference.model.get("engine"),
        floor_method=reference.noise_floor.get("method"),
        created_at=reference.created_at,
    )
