"""What precision a point ran at, in the words point ids and the report use: the one home of turning a
GGUF's own file type (``general.file_type``, as gguf-py names it) or an OpenVINO inference precision
(``INFERENCE_PRECISION_HINT``) into a precision word, and of telling a quantized precision from a full one.

``MOSTLY_Q4_K_M`` -> ``q4_k_m``, ``MOSTLY_F16`` -> ``f16``, ``ALL_F32`` -> ``f32``; a GGUF without a file
type is named by its dominant tensor type (``Q4_K`` -> ``q4_k``). OpenVINO's ``f32``/``<Type: 'float32'>``
-> ``f32``, ``bf16``/``bfloat16`` -> ``bf16``, ``f16``/``float16`` -> ``f16``.
"""

from __future__ import annotations

import re
from typing import Optional

FULL = frozenset({"f32", "f16", "bf16", "fp32", "fp16"})  # not quantized


def from_gguf_file_type(file_type: str) -> str:
    """The precision word for a GGUF file type or ggml tensor type name."""
    word = re.sub(r"^(MOSTLY|ALL)_", "", file_type.strip()).lower()
    return re.sub(r"[^a-z0-9_]+", "_", word).strip("_") or "unknown"


_OPENVINO = {"f32": "f32", "float32": "f32", "bf16": "bf16", "bfloat16": "bf16", "f16": "f16", "float16": "f16"}


def from_openvino_type(text: object) -> Optional[str]:
    """The precision word for an OpenVINO element type as the plugin reports it (``f32``, or its printed
    form ``<Type: 'float32'>``); None for anything else (a property this plugin version lacks)."""
    found = re.search(r"\b(b?float\d+|b?f\d+)\b", str(text).lower())
    return _OPENVINO.get(found.group(1)) if found else None


def is_quantized(precision: Optional[str]) -> bool:
    return precision is not None and precision.lower() not in FULL


def id_with_precision(point_id: str, adapter: str, device: str, old: str, new: str) -> str:
    """``point_id`` with its lead precision part ``old`` (``adapter-device-old...``) replaced by ``new``;
    unchanged when the id does not lead with that part."""
    lead = f"{adapter}-{device}-{old}"
    if point_id == lead or point_id.startswith(lead + "-"):
        return f"{adapter}-{device}-{new}{point_id[len(lead) :]}"
    return point_id
