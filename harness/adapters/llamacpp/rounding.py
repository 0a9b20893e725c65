"""llama.cpp's CPU rounding between its weights, as fake-quantization for HF transformers running a
GGUF's dequantized weights: the floor of the dequantized-model comparison
(``harness.correctness.dequantized_model``).

A clean llama.cpp point differs from exact arithmetic on its own weights by what its CPU backend rounds:

- every matmul with a quantized (or f16/bf16) weight first converts its input to the weight type's
  ``vec_dot_type`` (ggml-cpu's ``type_traits_cpu``): Q8_0 (32-element blocks, f16 scale) beside Q4_0,
  Q5_0, Q8_0, IQ4_NL and MXFP4; Q8_1 (the same values, plus a block sum) beside Q4_1 and Q5_1; Q8_K
  (256-element blocks, f32 scale) beside the K-quants, the IQ2/IQ3/IQ1 types, IQ4_XS and TQ1_0/TQ2_0;
  F16 and BF16 beside themselves; F32 weights take f32 inputs;
- the KV cache holds K and V in f16, and the attention's Q goes into the f16 ``K·Q`` matmul as f16.

So the floor is HF fp32 on the dequantized weights with each Linear's input rounded as above and Q, K,
V rounded to f16: KL(HF fp32 || HF fp32 + llama.cpp's rounding) is the noise a clean engine shows.
Not modelled: the f16 rounding of the softmax probabilities before ``V·P`` (2^-11 relative, well
below the int8 inputs), Q8_1's f16 block sum, and accumulation order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional

from harness.adapters.trusted_twin import ActivationRounding

if TYPE_CHECKING:
    import torch

# The model's version: a change to the rounding below changes the floor method, so stored references are
# recomputed (the method is part of their key, ``same_weights.path_for``).
METHOD = (
    "llama.cpp CPU rounding v1: each quantized matmul's input as its vec_dot_type (Q8_0/Q8_1 blocks of 32, "
    "Q8_K blocks of 256, F16, BF16), Q, K and V in f16 (the KV cache)"
)

# ggml-cpu type_traits_cpu[type].vec_dot_type, by GGUF tensor type (ggml 0.25, llama-cpp-python 0.3.36)
_Q8_0 = ("Q4_0", "Q5_0", "Q8_0", "IQ4_NL", "MXFP4")
_Q8_1 = ("Q4_1", "Q5_1")
_Q8_K = ("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S")
_Q8_K += ("IQ1_M", "IQ4_XS", "TQ1_0", "TQ2_0")
VEC_DOT_TYPE = {
    "F32": "F32",
    "F16": "F16",
    "BF16": "BF16",
    **{t: "Q8_0" for t in _Q8_0},
    **{t: "Q8_1" for t in _Q8_1},
    **{t: "Q8_K" for t in _Q8_K},
}


def q8_0(x: torch.Tensor) -> torch.Tensor:
    """ggml's quantize_row_q8_0 (x86 AVX2) and back: per 32 inputs d = amax/127 stored as f16, q =
    round-half-even(x * 127/amax); the dot product sees q * f16(d). Q8_1 quantizes its values alike."""
    import torch

    blocks = x.float().reshape(*x.shape[:-1], -1, 32)
    amax = blocks.abs().amax(dim=-1, keepdim=True)
    scale = torch.where(amax > 0, 127.0 / amax, torch.zeros_like(amax))
    d = (amax / 127.0).half().float()
    return (torch.round(blocks * scale) * d).reshape(x.shape).to(x.dtype)


def q8_k(x: torch.Tensor) -> torch.Tensor:
    """ggml's quantize_row_q8_K_ref and back: per 256 inputs iscale = -127/max (max: the input of largest
    magnitude, signed), q = min(127, round-half-even(iscale * x)), d = 1/iscale in f32."""
    import torch

    blocks = x.float().reshape(*x.shape[:-1], -1, 256)
    at = blocks.abs().argmax(dim=-1, keepdim=True)
    peak = torch.gather(blocks, -1, at)
    nonzero = peak != 0
    iscale = torch.where(nonzero, -127.0 / torch.where(nonzero, peak, torch.ones_like(peak)), torch.zeros_like(peak))
    q = torch.clamp(torch.round(iscale * blocks), max=127.0)
    d = torch.where(nonzero, 1.0 / torch.where(nonzero, iscale, torch.ones_like(iscale)), torch.zeros_like(iscale))
    return (q * d).reshape(x.shape).to(x.dtype)


def f16(x: torch.Tensor) -> torch.Tensor:
    return x.half().to(x.dtype)


def bf16(x: torch.Tensor) -> torch.Tensor:
    return x.bfloat16().to(x.dtype)


_ROUND: dict[str, Optional[Callable]] = {
    "F32": None,
    "F16": f16,
    "BF16": bf16,
    "Q8_0": q8_0,
    "Q8_1": q8_0,
    "Q8_K": q8_k,
}


def input_rounding(stored_type: str) -> Optional[Callable]:
    """The rounding llama.cpp's CPU backend applies to the input of a matmul with a weight stored as
    ``stored_type`` (None: none); ``KeyError`` for a type with no known vec_dot_type."""
    return _ROUND[VEC_DOT_TYPE[stored_type]]


def model_of(types: set[str]) -> ActivationRounding | str:
    """The rounding model of a GGUF whose tensors have the ggml ``types``, or why there is none (a type
    whose vec_dot_type this model does not know)."""
    unknown = sorted(types - set(VEC_DOT_TYPE))
    if unknown:
        return f"no llama.cpp rounding model for tensor type(s) {', '.join(unknown)}"
    return ActivationRounding(method=METHOD, inputs=input_rounding, attention=f16)
