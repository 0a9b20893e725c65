"""Weights as an artefact stores them, read back as fp32 under the HF checkpoint's names.

A device artefact (a GGUF, an OpenVINO IR with compressed constants) holds the model's weights in its
own names, layouts and formats; its reader (``harness.models.gguf_weights``,
``harness.adapters.openvino.weights``) undoes those and returns ``Tensor`` per HF name, so the
weights can be set beside the HF checkpoint's own (``harness.correctness.dequantized``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np


class UnsupportedLayout(Exception):
    """The reader does not know how this artefact's converter laid the weights out (an architecture it
    cannot map back): the dequantized check is skipped with this message."""


@dataclass
class Tensor:
    """One HF tensor read back from an artefact: its fp32 values and the format it was stored in."""

    stored_name: str  # the artefact's own name for it (GGUF tensor, IR constant)
    stored_type: str  # e.g. "Q8_0", "Q4_K", "F32", "u8 per-channel"
    values: np.ndarray  # fp32, HF shape
    block: Optional[int] = None  # elements along a row that one scale / zero point covers; None: the row


def hf_config(hf_dir: str | Path) -> dict:
    return json.loads((Path(hf_dir) / "config.json").read_text())


def hf_weights(hf_dir: str | Path) -> dict[str, np.ndarray]:
    """The HF checkpoint's tensors (every ``*.safetensors`` file) as fp32 numpy arrays."""
    from safetensors import safe_open

    out: dict[str, np.ndarray] = {}
    for file in sorted(Path(hf_dir).glob("*.safetensors")):
        with safe_open(str(file), framework="pt") as handle:
            for name in handle.keys():
                out[name] = handle.get_tensor(name).float().numpy()
    return out
