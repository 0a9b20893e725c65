"""The dequantized-model comparison: a quantized point against HF transformers (fp32) running the point's
own artefact weights, dequantized (``Twin.read_weights``: gguf-py for a GGUF, the IR's compressed
constants for OpenVINO), on the gate's prompts and with the gate's KL.

Against the HF reference a quantized point drifts by design (llama.cpp Q8_0 and Q4 read 5 to 12x the
floor on Gemma), so a kernel fault hides in the quantization cost. The same-weights twin runs the same
weights but on the same engine, so a fault of that engine's kernels (a backend the twin shares) is in
both. Here the weights are the artefact's, exactly, and the engine is another one: what is left is
activation rounding, which the floor measures (the same dequantized model in bf16 against fp32, as the
HF reference's floor is), and any runtime or kernel fault. As against its own weights, drift here is
a failure: identical weights.

The reference is computed and stored like the same-weights one (``same_weights.get_or_compute``, under
``<model>/dequantized-model/``: keyed by the artefact's content, the prompts and the transformers version).
"""

from __future__ import annotations

from contextlib import contextmanager
from importlib.metadata import version
from typing import TYPE_CHECKING, Iterator, Optional

if TYPE_CHECKING:
    from harness.adapters.base import Twin
    from harness.correctness.gate import GateResult
    from harness.correctness.reference import Reference
    from harness.records.record import DequantizedModel

DTYPES = {"reference": "fp32", "floor": "bf16"}
ENGINE = "HF transformers fp32 running the artefact's dequantized weights"
FLOOR_METHOD = "teacher-forced KL(HF fp32 || HF bf16), both running the artefact's dequantized weights"


def twin_of(model, twin: Twin, threads: Optional[int]) -> Optional[Twin]:
    """The dequantized model of ``twin``'s artefact as a ``Twin`` (for ``same_weights``' reference and
    comparison); None where the twin has no weights reader."""
    from harness.adapters.base import Twin

    if twin.read_weights is None:
        return None
    read_weights = twin.read_weights
    kept: dict = {}

    def read(names: dict, config: dict) -> dict:
        # Once for both variants: reading back a large embedding takes minutes (Gemma's 262k rows).
        if "weights" not in kept:
            kept["weights"] = read_weights(names, config)
        return kept["weights"]

    @contextmanager
    def open_steps(variant: str) -> Iterator:
        from harness.adapters.hf.replaced import with_weights

        with with_weights(model, read, DTYPES[variant], threads, "dequantized-model") as engine:
            yield engine

    return Twin(
        engine=ENGINE,
        weights=twin.weights,
        key=f"dequantized-hf:{twin.key}",
        floor_method=FLOOR_METHOD,
        versions={"transformers": version("transformers"), "torch": version("torch")},
        open=open_steps,
    )


def summary(result: GateResult, reference: Reference) -> DequantizedModel:
    from harness.records.record import DequantizedModel

    return DequantizedModel(
        verdict=result.verdict,
        reasons=[f"against its dequantized weights in transformers: {r}" for r in result.reasons],
        kl_mean=result.kl_mean,
        noise_floor=result.noise_floor,
        kl_ratio=result.kl_ratio,
        top1_match_rate=result.top1_match_rate,
        engine=reference.model.get("engine"),
        floor_method=reference.noise_floor.get("method"),
        created_at=reference.created_at,
    )
