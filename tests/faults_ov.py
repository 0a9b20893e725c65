"""Faults in an OpenVINO port's device path, injected as ``OpenVINOAdapter`` subclasses.

Each changes only what the adapter itself runs (its step-wise request or the IR it compiles); the
trusted twin (``harness.adapters.openvino.twin``) compiles the IR file afresh, so it never sees them.
"""

from __future__ import annotations

from typing import Optional, Sequence

from harness.adapters.openvino import OpenVINOAdapter, twin


class DecodePosition(OpenVINOAdapter):
    """Decode steps reuse the previous token's position id (the counter is read before it is advanced)."""

    def _infer(self, ids: Sequence[int]):
        import numpy as np

        request = self._step_request()
        feed = twin.feed(self._inputs, ids, self._position)
        if len(ids) == 1 and self._position > 0 and "position_ids" in feed:
            feed["position_ids"] = feed["position_ids"] - 1
        request.infer(feed)
        self._position += len(ids)
        return np.array(request.get_tensor("logits").data[0, -1], dtype=np.float32)


class ZeroedHead(OpenVINOAdapter):
    """In the middle layer, attention head 0's output is zeroed before the output projection (a wrong
    head offset in a fused kernel), edited into the IR this adapter compiles for its step-wise logits."""

    head_scale = 0.0

    def _step_request(self):
        if self._request is None:
            import json

            import numpy as np
            import openvino as ov
            from openvino import opset13 as ops

            core = ov.Core()
            model = core.read_model(str(self.ir_dir / "openvino_model.xml"))
            config = json.loads((self.ir_dir / "config.json").read_text())
            head_dim = config["hidden_size"] // config["num_attention_heads"]
            layer = config["num_hidden_layers"] // 2
            (o_proj,) = [
                op
                for op in model.get_ops()
                if op.get_type_name() == "MatMul" and f"layers.{layer}.self_attn.o_proj" in op.get_friendly_name()
            ]
            source = o_proj.input(0).get_source_output()
            mask = np.ones(config["hidden_size"], dtype=np.float32)
            mask[:head_dim] = self.head_scale
            masked = ops.multiply(source, ops.convert(ops.constant(mask), source.get_element_type()))
            o_proj.input(0).replace_source_output(masked.output(0))
            model.validate_nodes_and_infer_types()
            # The clean point's plugin properties (its inference precision included), not its compile cache.
            plugin = {k: v for k, v in self.plugin_config.items() if k != "CACHE_DIR"}
            compiled = core.compile_model(model, self.plugin_device, plugin)
            self._request = compiled.create_infer_request()
            self._inputs = {i.get_any_name() for i in compiled.inputs}
        return self._request


class HalvedHead(ZeroedHead):
    """Head 0 of the middle layer at half its output (one group's dequantization scale applied to the
    wrong rows): a fault small enough to hide in the quantization cost against HF."""

    head_scale = 0.5


def _constant(ir_dir, constant: str):
    """The ``<data>`` element (element type, offset, size) of the IR constant named ``constant``."""
    import xml.etree.ElementTree as ElementTree

    for layer in ElementTree.parse(ir_dir / "openvino_model.xml").getroot().iter("layer"):
        if layer.get("name") == constant:
            return layer.find("data")
    raise KeyError(constant)


def patch_scale(ir_dir, constant: str = "self.model.layers.1.mlp.down_proj.weight/scale", row: int = 5, factor=1.5):
    """A converter-class fault written into the IR: one row's scale of a compressed constant patched in
    ``openvino_model.bin`` in place (the file's size unchanged). The device path and the twin both run it."""
    import numpy as np

    data = _constant(ir_dir, constant)
    if data.get("element_type") != "f16":
        raise ValueError(f"{constant}: scale stored as {data.get('element_type')}, not f16")
    with open(ir_dir / "openvino_model.bin", "r+b") as handle:
        handle.seek(int(data.get("offset")) + 2 * row)
        value = np.frombuffer(handle.read(2), dtype=np.float16)[0]
        handle.seek(int(data.get("offset")) + 2 * row)
        handle.write(np.float16(float(value) * factor).tobytes())


def _patch_constant(ir_dir, constant: str, kinds: tuple[str, ...], change) -> None:
    """``change(values, kind)`` applied to the IR constant ``constant`` in ``openvino_model.bin`` in place;
    ``values`` are the constant's raw elements (4-bit types unpacked, low nibble first, as unsigned nibbles)."""
    import numpy as np

    data = _constant(ir_dir, constant)
    kind = data.get("element_type")
    if kind not in kinds:
        raise ValueError(f"{constant}: stored as {kind}, not {' or '.join(kinds)}")
    offset, size = int(data.get("offset")), int(data.get("size"))
    dtype = {"u8": np.uint8, "i8": np.int8, "f16": np.float16}.get(kind, np.uint8)
    with open(ir_dir / "openvino_model.bin", "r+b") as handle:
        handle.seek(offset)
        raw = np.frombuffer(handle.read(size), dtype=dtype).copy()
        if kind in ("u4", "i4"):
            nibbles = np.stack([raw & 0x0F, raw >> 4], axis=-1)
            nibbles = change(nibbles, kind).astype(np.uint8) & 0x0F
            raw = (nibbles[..., 0] | (nibbles[..., 1] << 4)).astype(np.uint8)
        else:
            raw = change(raw, kind).astype(dtype)
        handle.seek(offset)
        handle.write(raw.tobytes())


def shift_zero_point(ir_dir, constant: str = "self.model.layers.1.mlp.down_proj.weight/zero_point", step: int = 1):
    """Every zero point of one u8 or u4 asymmetric constant off by ``step`` (a converter that rounds the zero
    point the other way, or stores ``zp`` where ``zp - 1`` belongs): each row's or group's weights shifted by
    one quantization step, the same sign across it, inside the format's rounding noise by size."""
    import numpy as np

    def change(points, kind):
        top = 255 if kind == "u8" else 15
        return np.clip(points.astype(np.int16) + step, 0, top)

    _patch_constant(ir_dir, constant, ("u8", "u4"), change)


def shift_quants(ir_dir, constant: str = "self.model.layers.1.mlp.down_proj.weight"):
    """Every quant of one symmetric (i8 or i4) constant one step up where it does not overflow (a symmetric
    format's implicit zero point off by one): each weight shifted by its row's or group's scale."""
    import numpy as np

    def change(quants, kind):
        if kind == "i8":
            return np.where(quants < 127, quants.astype(np.int16) + 1, quants)
        return np.where(quants != 7, quants + 1, quants)  # i4 nibbles: 0-7, then -8..-1 as 8-15; 15 + 1 wraps to 0

    _patch_constant(ir_dir, constant, ("i8", "i4"), change)


def scale_layer(ir_dir, constant: str = "self.model.layers.1.mlp.down_proj.weight/scale", factor: float = 1.1):
    """Every scale of one compressed constant multiplied by ``factor`` (one layer's weights rescaled)."""
    _patch_constant(ir_dir, constant, ("f16",), lambda scales, kind: scales.astype("float32") * factor)


class PatchedArtefact(OpenVINOAdapter):
    """Runs a copy of its IR directory with ``patch(copy, model)`` written into it (the artefact, not the
    device path)."""

    label = "patched"

    def patch(self, out, model) -> None:
        raise NotImplementedError

    def load(self, model, point, settings):
        import shutil

        from harness.adapters.openvino import ir_export

        original = ir_export.artefact

        def patched(model, quantization, compression, cache):
            clean = original(model, quantization, compression, cache)
            out = cache / "openvino-faults" / f"{clean.parent.name}-{clean.name}-{self.label}"
            shutil.rmtree(out, ignore_errors=True)
            shutil.copytree(clean, out)
            self.patch(out, model)
            return out

        ir_export.artefact = patched
        try:
            super().load(model, point, settings)
        finally:
            ir_export.artefact = original


class PatchedScale(PatchedArtefact):
    """``patch_scale`` written into the IR."""

    label = "patched-scale"

    def patch(self, out, model) -> None:
        patch_scale(out)


class ShiftedZeroPoint(PatchedArtefact):
    """``shift_zero_point`` written into the IR (an int8 or int4 asymmetric point's)."""

    label = "shifted-zero-point"

    def patch(self, out, model) -> None:
        shift_zero_point(out)


class ScaledLayer(PatchedArtefact):
    """``scale_layer`` written into the IR: one layer's scales x1.05 (any compressed point)."""

    label = "scaled-layer"

    def patch(self, out, model) -> None:
        scale_layer(out, factor=1.05)


def swapped_tokenizer(hf_dir, out, text: str = "The river and the sea") -> tuple[str, str]:
    """The checkpoint's tokenizer with the ids of the two most frequent tokens of ``text`` swapped in
    its vocabulary (a converter that numbered its vocabulary wrong), written as the tokenizer IRs into
    ``out``; returns the two tokens."""
    import collections
    import json
    import shutil
    import tempfile
    from pathlib import Path

    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    from harness.adapters.openvino.ir_export import convert_tokenizer

    spec = json.loads((Path(hf_dir) / "tokenizer.json").read_text(encoding="utf-8"))
    encoded = Tokenizer.from_str(json.dumps(spec)).encode(text, add_special_tokens=False)
    (a, _), (b, _) = collections.Counter(encoded.tokens).most_common(2)
    vocab = spec["model"]["vocab"]
    vocab[a], vocab[b] = vocab[b], vocab[a]
    with tempfile.TemporaryDirectory() as tmp:
        for file in Path(hf_dir).iterdir():
            if file.is_file() and not file.name.endswith((".safetensors", ".bin")):
                shutil.copy2(file, tmp)
        (Path(tmp) / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
        convert_tokenizer(hf_dir, out, AutoTokenizer.from_pretrained(tmp))
    return a, b


class SwappedToken(PatchedArtefact):
    """The IR directory's tokenizer IRs converted from a vocabulary with two tokens' ids swapped: the gate
    feeds the reference's ids and passes; the engine's own text path reads other ids."""

    label = "swapped-token"

    def patch(self, out, model) -> None:
        swapped_tokenizer(model.hf_dir, out)


class NoTokenizerIR(PatchedArtefact):
    """An IR directory exported without tokenizer IRs: the adapter converts the tokenizer itself."""

    label = "no-tokenizer"

    def patch(self, out, model) -> None:
        from harness.adapters.openvino.ir_export import TOKENIZER_FILES

        for name in TOKENIZER_FILES:
            (out / name).unlink()


# Plugin properties a test pins to run one CPU's precision path on any CPU: f32 with dynamic quantization
# (a CPU with int8 dot products, AVX512-VNNI or AVX-VNNI, and no bf16), f32 without it (an AVX2-only CPU).
PINNED = {
    "f32": {"INFERENCE_PRECISION_HINT": "f32"},
    "f32-nodq": {"INFERENCE_PRECISION_HINT": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0},
}


def pinned(cls: type, label: str) -> type:
    """``cls`` with the plugin properties ``PINNED[label]`` in those its gate's step-wise requests compile
    with (the path every comparison reads, and the rounding model is read from), named ``<cls.name>-<label>``."""

    class Pinned(cls):
        name = f"{cls.name}-{label}"

        def load(self, model, point, settings):
            super().load(model, point, settings)
            self.plugin_config = {**self.plugin_config, **PINNED[label]}

    Pinned.__name__ = Pinned.__qualname__ = f"{cls.__name__}Pinned{label.replace('-', '').upper()}"
    return Pinned


def run_with_fault(base: type, scenario, results, pin: Optional[str] = None) -> tuple[int, dict]:
    """``harness run`` of ``scenario`` with the fault ``base`` registered as ``openvino-<its name>``: the exit
    code and each point's correctness record by adapter name. With ``pin`` (a ``PINNED`` label), the clean
    adapter and the fault run with those plugin properties (``pinned``), as ``openvino-<pin>`` and
    ``openvino-<its name>-<pin>``."""
    from harness.adapters import registry
    from harness.cli import main
    from harness.records.store import iter_records

    fault = type(base.__name__, (base,), {"name": f"openvino-{base.__name__.lower()}"})
    added = [fault] if pin is None else [pinned(c, pin) for c in (OpenVINOAdapter, fault)]
    for cls in added:
        registry.register_adapter(cls)
    try:
        code = main(["run", str(scenario), "--results", str(results), "--isolation", "none"])
    finally:
        for cls in added:
            registry.unregister_adapter(cls.name)
    return code, {r.point["adapter"]: r.correctness for _, r in iter_records(results)}
