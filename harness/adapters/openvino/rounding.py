"""The OpenVINO CPU plugin's rounding between a weight-compressed IR's weights, as fake-rounding for HF
transformers running the IR's dequantized weights: the floor of the dequantized-model comparison
(``harness.correctness.dequantized_model``), read from the model the point compiled and ran.

What a clean CPU point can round, and what this model makes of it:

- ``INFERENCE_PRECISION_HINT``: f32 adds nothing. bf16 (the default on AMX or AVX512-bf16 CPUs) runs every
  op in bf16 (the runtime model's ``runtimePrecision``): each FullyConnected decompresses its weights to
  bf16 and takes and gives bf16 (a ``..._bf16`` kernel, e.g. ``brgemm_avx512_bf16``), the embedding's
  Gather, RMS norms, residual adds and the attention's inputs are bf16, and the logits leave the last
  FullyConnected in bf16. The model rounds alike: every weight matrix, each Linear's input and output, the
  embeddings', norms' and decoder layers' outputs, and Q, K and V, to bf16. Other precisions (f16) are
  not modelled;
- ``DYNAMIC_QUANTIZATION_GROUP_SIZE`` g > 0 asks the plugin to quantize each compressed matmul's input
  to 8 bits per group of g; whether it does shows in the kernel each FullyConnected ran (the runtime
  model's ``primitiveType``): a kernel named for the inference precision (``brgemm_avx2_f32`` on an
  AVX2-only CPU, ``brgemm_avx512_bf16`` at bf16) may still quantize them: on a CPU with int8 dot products
  an f32 kernel does, and so does a bf16 one on an AVX512-bf16 CPU without AMX (AMD Zen 4), while AMX's bf16
  kernel does not. No name says so, so ``quantizes_inputs`` measures it, and the model then rounds each
  compressed matmul's input to int8 groups after the precision's own rounding (the plugin quantizes the
  bf16 tensor it holds). A quantizing kernel (``..._i8``) is not modelled (report-only);
- the KV cache (each attention node's ``kv_cache_precision``): f16 or bf16 K and V, modelled with Q at
  the same rounding as llama.cpp's; u8 (per-token asymmetric) is not modelled.

Not modelled: accumulation order, and at bf16 the rounding inside fused ops (RoPE, SwiGLU) and of
tensors between ops inside an HF module. Measured on tiny-llama int8_sym: HF fp32 on the IR's
dequantized weights matches the CPU plugin's f32 prefill to 1e-12 (KL), its decode (f16 KV cache) to
5e-7; at bf16 (Xeon with AMX and AVX512-bf16) the plugin reads 0.92x the KL of this model's rounding
(docs/gate.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from harness.adapters.trusted_twin import ActivationRounding

if TYPE_CHECKING:
    import torch

# Part of the floor method, so a change to the rounding below gives stored references a new key.
VERSION = "OpenVINO CPU rounding v2"
PROPERTIES = ("INFERENCE_PRECISION_HINT", "DYNAMIC_QUANTIZATION_GROUP_SIZE")


@dataclass(frozen=True)
class Settings:
    """What a compiled CPU model rounds with: its properties (None: not reported), the kernels its
    FullyConnected nodes ran and its attention nodes' KV cache precisions."""

    precision: Optional[str]
    dynamic_group: Optional[int]
    kernels: frozenset[str]
    kv_cache: frozenset[str]
    # Whether the FullyConnected inputs were quantized (dynamic quantization), measured by
    # ``quantizes_inputs``; None: not measured.
    quantized_inputs: Optional[bool] = None

    def words(self) -> str:
        ran = {None: "not measured", True: "ran", False: "did not run"}[self.quantized_inputs]
        asked = f" (dynamic quantization {ran})" if self.dynamic_group else ""
        return (
            f"INFERENCE_PRECISION_HINT {self.precision}, DYNAMIC_QUANTIZATION_GROUP_SIZE {self.dynamic_group}{asked}, "
            f"FullyConnected kernels {', '.join(sorted(self.kernels)) or 'none'}, "
            f"KV cache {', '.join(sorted(self.kv_cache)) or 'none'}"
        )


def _word(value) -> str:
    return value.to_string() if hasattr(value, "to_string") else str(value)


def read(compiled) -> Settings:
    """The rounding settings of a compiled model that has run at least once (its kernels are chosen then)."""
    found: dict[str, str] = {}
    for key in PROPERTIES:
        try:
            found[key] = _word(compiled.get_property(key))
        except Exception:  # noqa: BLE001 - an older plugin lacks it: the model then does not cover it
            continue
    kernels, kv_cache = set(), set()
    for op in compiled.get_runtime_model().get_ordered_ops():
        info = {key: value.astype(str) for key, value in op.get_rt_info().items()}
        if info.get("layerType") == "FullyConnected":
            kernels.add(info.get("primitiveType", "unknown"))
        if "kv_cache_precision" in info:
            kv_cache.add(info["kv_cache_precision"])
    group = found.get("DYNAMIC_QUANTIZATION_GROUP_SIZE")
    return Settings(
        found.get("INFERENCE_PRECISION_HINT"), int(group) if group else None, frozenset(kernels), frozenset(kv_cache)
    )


def quantizes_inputs(xml, config: dict) -> bool:
    """Whether the CPU plugin quantizes the FullyConnected inputs of the IR ``xml`` compiled with ``config``
    (dynamic quantization). No property or kernel name says so: on a CPU with int8 dot products (AVX512-VNNI,
    AVX-VNNI, AMX) a ``brgemm_avx512_f32`` kernel quantizes them, on an AVX2-only one ``brgemm_avx2_f32``
    does not. So a few tokens run twice, as compiled and with DYNAMIC_QUANTIZATION_GROUP_SIZE 0: any
    difference in the logits is the quantization's."""
    import numpy as np

    from harness.adapters.openvino.twin import IRSteps

    tokens = [0, 1, 2, 3]
    ran = IRSteps(xml, dict(config)).prefill(tokens)
    plain = IRSteps(xml, {**config, "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0}).prefill(tokens)
    return not np.array_equal(ran, plain)


def int8_groups(group: int):
    """The plugin's dynamic quantization of a matmul's input and back: per ``group`` inputs of a row (the
    whole row where the group does not divide it) q = round-half-even(x * 127/amax), symmetric int8 with
    an f32 scale amax/127."""

    def rounding(x: torch.Tensor) -> torch.Tensor:
        import torch

        size = group if x.shape[-1] % group == 0 else x.shape[-1]
        blocks = x.float().reshape(*x.shape[:-1], -1, size)
        amax = blocks.abs().amax(dim=-1, keepdim=True)
        scale = torch.where(amax > 0, 127.0 / amax, torch.zeros_like(amax))
        return (torch.round(blocks * scale) * (amax / 127.0)).reshape(x.shape).to(x.dtype)

    return rounding


def f16(x: torch.Tensor) -> torch.Tensor:
    return x.half().to(x.dtype)


def bf16(x: torch.Tensor) -> torch.Tensor:
    return x.bfloat16().to(x.dtype)


_CACHE = {"f32": None, "f16": f16, "bf16": bf16}


def bf16_then_f16(x: torch.Tensor) -> torch.Tensor:
    """A bf16 activation stored in an f16 KV cache."""
    return f16(bf16(x))


# What each modelled inference precision rounds: (weights and activations, the attention's Q/K/V by KV cache).
_PRECISIONS = {
    "f32": (None, _CACHE),
    "bf16": (bf16, {"f32": bf16, "f16": bf16_then_f16, "bf16": bf16}),
}


def model_of(device: str, settings: Optional[Settings]) -> ActivationRounding | str:
    """The rounding model of a point on ``device`` that ran with ``settings`` (None: not read), or why
    there is none: a device other than the CPU plugin, or a setting this model does not cover."""
    if device != "CPU" or settings is None:
        return f"no OpenVINO rounding model for device {device} (the CPU plugin only)"
    if settings.precision not in _PRECISIONS:
        return (
            f"no OpenVINO rounding model for INFERENCE_PRECISION_HINT {settings.precision} "
            f"({' and '.join(_PRECISIONS)} only)"
        )
    if settings.dynamic_group is None:
        return "no OpenVINO rounding model: the compiled model does not report DYNAMIC_QUANTIZATION_GROUP_SIZE"
    quantizing = sorted(k for k in settings.kernels if not k.endswith(f"_{settings.precision}"))
    if settings.dynamic_group and (quantizing or not settings.kernels):
        return (
            f"no OpenVINO rounding model for dynamic quantization (DYNAMIC_QUANTIZATION_GROUP_SIZE "
            f"{settings.dynamic_group}, FullyConnected kernels {', '.join(quantizing) or 'not read'})"
        )
    dynamic = bool(settings.dynamic_group) and settings.quantized_inputs
    if settings.dynamic_group and settings.quantized_inputs is None:
        return "no OpenVINO rounding model: whether dynamic quantization ran was not measured"
    if len(settings.kv_cache) != 1 or next(iter(settings.kv_cache)) not in _CACHE:
        return f"no OpenVINO rounding model for KV cache precision {', '.join(sorted(settings.kv_cache)) or 'unread'}"
    cache = next(iter(settings.kv_cache))
    throughout, attention = _PRECISIONS[settings.precision]
    inputs = int8_groups(settings.dynamic_group) if dynamic else None
    if throughout is None:
        kv = f"Q, K and V in {cache} (the KV cache)" if attention[cache] else "none"
        matmuls = (
            f"each compressed matmul's input as symmetric int8 per group of {settings.dynamic_group} (f32 scale)"
            if dynamic
            else "matmul inputs f32 (no dynamic quantization ran)"
        )
        rounds = f"{matmuls}; {kv}"
    else:
        rounds = (
            f"every op in {settings.precision}: weights, each matmul's input and output, the embeddings', norms' "
            f"and decoder layers' outputs; Q, K and V in {settings.precision}"
            + (f" then {cache} (the KV cache)" if cache not in ("f32", settings.precision) else "")
            + (
                f"; each compressed matmul's {settings.precision} input then as symmetric int8 per group of "
                f"{settings.dynamic_group} (f32 scale)"
                if dynamic
                else ""
            )
        )
    return ActivationRounding(
        method=f"{VERSION} ({settings.words()}): {rounds}",
        inputs=lambda stored_type: inputs,
        attention=attention[cache],
        weights=throughout,
        activations=throughout,
    )
