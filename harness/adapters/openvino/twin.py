"""The ``openvino`` adapter's trusted twin: the point's own IR (compressed weights included) stepped one
token at a time on the CPU plugin at f32 inference precision with dynamic quantization off (the same path
on every CPU), the path the same-weights reference is computed with (``harness.correctness.same_weights``).
Every OpenVINO device path of that IR (the step-wise CPU gate at the plugin's default precision, GPU, the
static NPU pipeline, emulated or real) is compared with it.

The identical-weights noise floor comes from another engine: HF transformers in bf16 running the IR's
own weights, dequantized from its compressed constants (``weights``), against the f32 twin: activation
rounding any device path may legitimately add. It used to be the same twin at bf16 inference precision,
but a CPU point at the plugin's default precision runs exactly that path (or, on a CPU without bf16,
exactly the f32 reference), so its ratio was 1.0 (or 0) by construction; the HF path is never the
device path. Without the model's HF checkpoint the floor falls back to the bf16 hint.
"""

from __future__ import annotations

from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Iterator, Optional, Sequence

from harness.adapters.trusted_twin import ActivationRounding, Twin
from harness.io import file_sha256

PRECISIONS = {"reference": "f32", "floor": "bf16"}
FLOOR_DTYPE = "bf16"  # the dequantized HF model's dtype for the floor


def feed(inputs: set[str], ids: Sequence[int], position: int) -> dict:
    """One step's inputs for a stateful LLM IR: ``ids`` appended after ``position`` cached tokens."""
    import numpy as np

    data = {
        "input_ids": np.asarray([list(ids)], dtype=np.int64),
        "attention_mask": np.ones((1, position + len(ids)), dtype=np.int64),
    }
    if "position_ids" in inputs:
        data["position_ids"] = np.arange(position, position + len(ids), dtype=np.int64)[None]
    if "beam_idx" in inputs:
        data["beam_idx"] = np.zeros(1, dtype=np.int32)
    return data


class IRSteps:
    """Step-wise fp32 logits of a stateful IR compiled for the CPU plugin with ``config``."""

    def __init__(self, xml: Path, config: dict):
        import openvino as ov

        compiled = ov.Core().compile_model(str(xml), "CPU", config)
        self._request = compiled.create_infer_request()
        self._inputs = {i.get_any_name() for i in compiled.inputs}
        self._position = 0

    def _infer(self, ids: Sequence[int]):
        import numpy as np

        self._request.infer(feed(self._inputs, ids, self._position))
        self._position += len(ids)
        return np.array(self._request.get_tensor("logits").data[0, -1], dtype=np.float32)

    def prefill(self, tokens: Sequence[int]):
        self._request.reset_state()
        self._position = 0
        return self._infer(tokens)

    def decode(self, token: int):
        return self._infer([int(token)])


def dequantized_hf(model, xml: Path, dtype: str, threads: Optional[int]):
    """HF transformers (the model's own class and config) in ``dtype`` with the IR's compressed weights,
    dequantized, in place of the checkpoint's: step-wise like any adapter; closed on exit."""
    from harness.adapters.hf.replaced import with_weights
    from harness.adapters.openvino import weights

    return with_weights(model, lambda names, config: weights.read(xml, names, config), dtype, threads, "dequantized-ir")


def twin(
    ir_dir: Path,
    threads: Optional[int],
    model=None,
    rounding: ActivationRounding | str = "no model of the engine's activation rounding",
) -> Twin:
    """The trusted twin of the IR in ``ir_dir`` (nothing is compiled until ``open``); ``model``: the
    resolved model whose HF checkpoint gives the floor's engine (None: the bf16-hint floor); ``rounding``:
    the point's rounding model (``openvino.rounding``), for the dequantized-model floor."""
    import openvino as ov

    from harness.adapters.openvino import weights as weights_reader

    xml, weights = ir_dir / "openvino_model.xml", ir_dir / "openvino_model.bin"

    @contextmanager
    def open_steps(variant: str) -> Iterator[IRSteps]:
        if variant == "floor" and model is not None:
            with dequantized_hf(model, xml, FLOOR_DTYPE, threads) as engine:
                yield engine
            return
        # Dynamic quantization pinned off: a CPU with int8 dot products (AVX512-VNNI, AVX-VNNI) would
        # otherwise quantize the f32 matmuls' inputs, an AVX2-only one not, and the reference is one path.
        config: dict = {"INFERENCE_PRECISION_HINT": PRECISIONS[variant], "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0}
        if threads:
            config["INFERENCE_NUM_THREADS"] = threads
        yield IRSteps(xml, config)

    # The content, not the directory name: an IR patched in place (same size) gets its own reference.
    key = f"ir-sha256:{file_sha256(xml)[:32]}:{file_sha256(weights)}/cpu-f32-nodq" + ("/hf-floor" if model else "")
    return Twin(
        engine="OpenVINO CPU plugin, step-wise, f32 inference precision, no dynamic quantization",
        weights=str(weights),
        key=key,
        floor_method=(
            f"teacher-forced KL(twin f32 || HF transformers {FLOOR_DTYPE} running the IR's dequantized weights)"
            if model is not None
            else "teacher-forced KL(twin f32 || twin bf16 inference precision)"
        ),
        versions={"openvino": ov.__version__, **({"transformers": version("transformers")} if model else {})},
        open=open_steps,
        read_weights=lambda names, config: weights_reader.read(xml, names, config),
        rounding=rounding,
    )
