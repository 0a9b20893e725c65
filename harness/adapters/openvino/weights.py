"""An OpenVINO IR's compressed weights read back as fp32 under the HF checkpoint's names.

NNCF's weight compression leaves, per weight, the pattern
``Constant(int8/uint8/int4/uint4) -> Convert -> [Subtract(zero point)] -> Multiply(scale) -> [Reshape]``
(the zero point and the scale themselves Constants, possibly behind a Convert; group-wise modes carry a
group axis that the Reshape folds away). This reader walks the graph read with ``openvino.Core.read_model``
(nothing is compiled, no plugin runs), rebuilds ``(q - zero_point) * scale`` in numpy and names the result
after the constant (optimum's export names it ``self.<HF name>``). Only compressed weights are read:
the weights the IR keeps in floating point are the checkpoint's own values (no quantization to check).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.models.stored_weights import Tensor

_INTEGER = {"i8", "u8", "i4", "u4"}


def _values(constant) -> np.ndarray:
    """A Constant's values as numpy; 4-bit types come packed two per byte, low nibble first."""
    kind = constant.get_element_type().get_type_name()
    shape = tuple(constant.get_output_partial_shape(0).to_shape())
    if kind not in ("i4", "u4"):
        return np.array(constant.get_data())
    packed = np.frombuffer(bytes(np.array(constant.get_data(), copy=False).view(np.uint8)), dtype=np.uint8)
    nibbles = np.stack([packed & 0x0F, packed >> 4], axis=-1).reshape(-1).astype(np.int16)
    if kind == "i4":
        nibbles = np.where(nibbles > 7, nibbles - 16, nibbles)
    return nibbles[: int(np.prod(shape))].reshape(shape)


def _operand(node) -> np.ndarray | None:
    """A Constant input's values, looking through a Convert; None when the input is computed."""
    if node.get_type_name() == "Convert":
        node = node.input_value(0).get_node()
    if node.get_type_name() != "Constant":
        return None
    return _values(node).astype(np.float32)


def _consumer(node):
    targets = list(node.output(0).get_target_inputs())
    return targets[0].get_node() if len(targets) == 1 else None


def _other_input(node, this) -> np.ndarray | None:
    for i in range(node.get_input_size()):
        other = node.input_value(i).get_node()
        if other is not this:
            return _operand(other)
    return None


def compressed(xml: str | Path) -> dict[str, tuple[str, np.ndarray, int | None]]:
    """{constant name: (its storage format, its dequantized fp32 values)} for every compressed weight."""
    import openvino as ov

    out: dict[str, tuple[str, np.ndarray, int | None]] = {}
    for op in ov.Core().read_model(str(xml)).get_ordered_ops():
        if op.get_type_name() != "Constant" or op.get_element_type().get_type_name() not in _INTEGER:
            continue
        convert = _consumer(op)
        if convert is None or convert.get_type_name() != "Convert":
            continue
        values, node, kind = _values(op).astype(np.float32), convert, op.get_element_type().get_type_name()
        after = _consumer(node)
        if after is not None and after.get_type_name() == "Subtract":
            zero_point = _other_input(after, node)
            if zero_point is None:
                continue
            values, node, kind = values - zero_point, after, f"{kind} asym"
            after = _consumer(node)
        if after is None or after.get_type_name() != "Multiply":
            continue
        scale = _other_input(after, node)
        if scale is None:
            continue
        values = values * scale
        grouped = scale.ndim == 3
        # group-wise: [rows, groups, group size]; per channel: one scale per row (block None)
        out[op.get_friendly_name()] = (
            f"{kind}{' group' if grouped else ''}",
            values,
            values.shape[-1] if grouped else None,
        )
    return out


def read(xml: str | Path, hf_names: dict[str, tuple[int, ...]], config: dict) -> dict[str, Tensor]:
    """The IR's compressed weights under the HF names of ``hf_names`` (name -> shape); ``config`` unused
    (the IR keeps HF's layout), accepted for ``Twin.read_weights``'s signature."""
    from harness.models.stored_weights import UnsupportedLayout

    out: dict[str, Tensor] = {}
    for name, (kind, values, block) in compressed(xml).items():
        hf_name = name.removeprefix("self.")
        if hf_name in hf_names:
            out[hf_name] = Tensor(name, kind, values.reshape(hf_names[hf_name]), block)
    if not out:
        raise UnsupportedLayout(f"{xml}: no compressed constant is named after a tensor of the HF checkpoint")
    return out
