"""What this machine's CPU computes in, for tests whose expectation depends on it (the CPU kinds this
project runs on: AVX2-only, AVX512 with bf16, AMX). Such a test derives its expectation from here, or pins
the engine setting it depends on, and says which; none assumes the CPU it was written on."""

from __future__ import annotations

from typing import Optional


def cpu_has_bf16() -> bool:
    """Whether the x86 CPU has the instructions OpenVINO's CPU plugin looks for before computing in bf16
    by default (AVX512-BF16 or AMX-BF16), read from /proc/cpuinfo, apart from the plugin."""
    from harness.records.environment import cpu_flags

    return bool({"avx512_bf16", "amx_bf16"} & set(cpu_flags()))


def openvino_cpu_precision() -> Optional[str]:
    """The precision word of the CPU plugin's default ``INFERENCE_PRECISION_HINT`` here (``bf16`` on a CPU
    with bf16, ``f32`` on one without); None where OpenVINO cannot say."""
    from harness.adapters.openvino.ir_export import inference_precision

    return inference_precision("CPU")


def cpu_has_int8_dot_product() -> bool:
    """Whether the x86 CPU has int8 dot products (AVX512-VNNI, AVX-VNNI or AMX-INT8), with which OpenVINO's
    CPU plugin quantizes an f32 matmul's input dynamically where ``DYNAMIC_QUANTIZATION_GROUP_SIZE`` asks."""
    from harness.records.environment import cpu_flags

    return bool({"avx512_vnni", "avx_vnni", "amx_int8"} & set(cpu_flags()))
