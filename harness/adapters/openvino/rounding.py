"""The OpenVINO CPU plugin's rounding between a weight-compressed IR's weights, as fake-rounding for HF
transformers running the IR's dequantized weights: the floor of the dequantized-model comparison
(``harness.correctness.dequantized_model``), read from the model the point compiled and ran.

What a clean CPU point can round, and what this model makes of it:

- ``INFERENCE_PRECISION_HINT``: f32 adds nothing; bf16 (AMX or AVX512-bf16 CPUs) rounds every op's
  inputs and outputs, not modelled (the comparison stays report-only there);
- ``DYNAMIC_QUANTIZATION_GROUP_SIZE`` g > 0 asks the plugin to quantize each compressed matmul's input
  to 8 bits per group of g; whether it does shows in the kernel each FullyConnected ran (the runtime
  model's ``primitiveType``): an ``..._f32`` kernel (``brgemm_avx2_f32`` on an AVX2-only CPU, this
  VM's) takes f32 inputs, so nothing is rounded. A quantizing kernel is not modelled (report-only);
- the KV cache (each attention node's ``kv_cache_precision``): f16 or bf16 K and V, modelled with Q at
  the same rounding as llama.cpp's; u8 (per-token asymmetric) is not modelled.

Not modelled: accumulation order. Measured on tiny-llama int8_sym: HF fp32 on the IR's dequantized
weights matches the CPU plugin's prefill to 1e-12 (KL), its decode (f16 KV cache) to 5e-7.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from harness.adapters.base import ActivationRounding

if TYPE_CHECKING:
    import torch

# Part of the floor method, so a change to the rounding below gives stored references a new key.
VERSION = "OpenVINO CPU rounding v1"
PROPERTIES = ("INFERENCE_PRECISION_HINT", "DYNAMIC_QUANTIZATION_GROUP_SIZE")


@dataclass(frozen=True)
class Settings:
    """What a compiled CPU model rounds with: its properties (None: not reported), the kernels its
    FullyConnected nodes ran and its attention nodes' KV cache precisions."""

    precision: Optional[str]
    dynamic_group: Optional[int]
    kernels: frozenset[str]
    kv_cache: frozenset[str]

    def words(self) -> str:
        return (
            f"INFERENCE_PRECISION_HINT {self.precision}, DYNAMIC_QUANTIZATION_GROUP_SIZE {self.dynamic_group}, "
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


def f16(x: torch.Tensor) -> torch.Tensor:
    return x.half().to(x.dtype)


def bf16(x: torch.Tensor) -> torch.Tensor:
    return x.bfloat16().to(x.dtype)


_CACHE = {"f32": None, "f16": f16, "bf16": bf16}


def model_of(device: str, settings: Optional[Settings]) -> ActivationRounding | str:
    """The rounding model of a point on ``device`` that ran with ``settings`` (None: not read), or why
    there is none: a device other than the CPU plugin, or a setting this model does not cover."""
    if device != "CPU" or settings is None:
        return f"no OpenVINO rounding model for device {device} (the CPU plugin only)"
    if settings.precision != "f32":
        return f"no OpenVINO rounding model for INFERENCE_PRECISION_HINT {settings.precision} (f32 only)"
    if settings.dynamic_group is None:
        return "no OpenVINO rounding model: the compiled model does not report DYNAMIC_QUANTIZATION_GROUP_SIZE"
    quantizing = sorted(k for k in settings.kernels if not k.endswith("_f32"))
    if settings.dynamic_group and (quantizing or not settings.kernels):
        return (
            f"no OpenVINO rounding model for dynamic quantization (DYNAMIC_QUANTIZATION_GROUP_SIZE "
            f"{settings.dynamic_group}, FullyConnected kernels {', '.join(quantizing) or 'not read'})"
        )
    if len(settings.kv_cache) != 1 or next(iter(settings.kv_cache)) not in _CACHE:
        return f"no OpenVINO rounding model for KV cache precision {', '.join(sorted(settings.kv_cache)) or 'unread'}"
    cache = next(iter(settings.kv_cache))
    kv = f"Q, K and V in {cache} (the KV cache)" if _CACHE[cache] else "none"
    return ActivationRounding(
        method=f"{VERSION} ({settings.words()}): matmul inputs f32 (no dynamic quantization ran); {kv}",
        inputs=lambda stored_type: None,
        attention=_CACHE[cache],
    )
