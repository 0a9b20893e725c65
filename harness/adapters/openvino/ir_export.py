"""Conversion for the ``openvino`` adapter: optimum-intel export to a stateful IR, openvino-tokenizers,
NNCF weight compression for the quantization axis, each artefact built once into the cache."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Optional

from harness.io import per_file

NNCF_MODES = {"int8_sym": "INT8_SYM", "int8_asym": "INT8_ASYM", "int4_sym": "INT4_SYM", "int4_asym": "INT4_ASYM"}


def artefact(model, quantization: str, compression: dict, cache: Path) -> Path:
    """The IR directory for ``quantization`` (exported and compressed on first use, then reused); a given IR
    is the ``none`` level itself and the source of the compressed ones."""
    import openvino as ov

    from harness.io import safe_name

    version = ov.__version__.split("-")[0]
    given = model.given_for("openvino")  # the scenario's own IR (model.artefacts.openvino): run as is, not exported
    if given is not None:
        fp_dir, base = given.path, cache / "openvino" / f"given-{given.sha256[:16]}-ov{version}"
    else:
        base = cache / "openvino" / f"{safe_name(model.name)}-{model.artefact_key}-ov{version}"
        fp_dir = cached(base / "none", lambda out: export(model, out))
    if quantization == "none":
        return fp_dir
    key = quantization + "".join(f"-{k}{v}" for k, v in sorted(compression.items()))
    return cached(base / key, lambda out: compress(fp_dir, out, quantization, compression))


def _weight_types(xml: Path) -> dict[str, int]:
    """Element types of the IR's weight constants, with how many elements each holds."""
    import openvino as ov

    counts: dict[str, int] = {}
    for op in ov.Core().read_model(str(xml)).get_ops():
        if op.get_type_name() == "Constant":
            shape = op.get_output_shape(0)
            size = 1
            for dim in shape:
                size *= dim
            if size >= 1024:
                key = op.get_output_element_type(0).get_type_name()
                counts[key] = counts.get(key, 0) + size
    return counts


def cached(target: Path, build) -> Path:
    from harness.models.cache_build import build_once

    build_once(target, build, "openvino_model.xml")
    return target


def export(model, out: Path) -> None:
    """The checkpoint's IR, with its tokenizer's IRs beside it as a deployment loads them. A tokenizer the
    converter cannot take leaves the IR without them, kept all the same (cached under its key, so no later
    point exports again): the load's tokenizer step (``text.tokenizer_dir``) then fails the point, with the
    failure remembered here where a run remembers failed steps (``harness.errors.remembering``)."""
    from optimum.intel import OVModelForCausalLM

    from harness.errors import StepFailed, step

    with step(model.hf_dir, "IR export (optimum-intel)", once=True):
        exported = OVModelForCausalLM.from_pretrained(str(model.hf_dir), export=True, compile=False, load_in_8bit=False)
        exported.save_pretrained(str(out))
    with contextlib.suppress(StepFailed):  # said when the load reaches the tokenizer (above)
        convert_tokenizer(model.hf_dir, out)


TOKENIZER_FILES = ("openvino_tokenizer.xml", "openvino_detokenizer.xml")
TOKENIZER_STEP = "tokenizer conversion (openvino_tokenizers)"


def convert_tokenizer(hf_dir: Path, out: Path, tokenizer=None) -> None:
    """The checkpoint's tokenizer (or ``tokenizer``, a transformers tokenizer) as the tokenizer and
    detokenizer IRs GenAI loads (openvino_tokenizers' ``convert_tokenizer``; the chat template rides in
    their rt_info)."""
    import openvino as ov
    from openvino_tokenizers import convert_tokenizer as convert
    from transformers import AutoTokenizer

    from harness.errors import step

    # named by the tokenizer's file where the checkpoint has one: the file the converter could not take
    where = Path(hf_dir) / "tokenizer.json" if (Path(hf_dir) / "tokenizer.json").is_file() else hf_dir
    # e.g. "Check 'i < m_inputs.size()' failed"; remembered for the checkpoint's own tokenizer (not a given one)
    with step(where, TOKENIZER_STEP, once=tokenizer is None):
        tokenizer = tokenizer or AutoTokenizer.from_pretrained(str(hf_dir))
        ov_tokenizer, ov_detokenizer = convert(tokenizer, with_detokenizer=True)
    for model, name in zip((ov_tokenizer, ov_detokenizer), TOKENIZER_FILES):
        ov.save_model(model, str(out / name))


def compression_options(quantization: str, options: dict) -> dict:
    """NNCF arguments for a level: int4 is group-wise with a mixed-precision ratio; int8 per channel."""
    if quantization.startswith("int4"):
        return {"group_size": options.get("int4_group_size", 128), "ratio": options.get("ratio", 1.0)}
    return {}


def compress(fp_dir: Path, out: Path, quantization: str, options: dict) -> None:
    import nncf
    import openvino as ov

    for file in fp_dir.iterdir():
        if not file.name.startswith("openvino_model."):
            shutil.copy2(file, out / file.name)
    ir = ov.Core().read_model(str(fp_dir / "openvino_model.xml"))
    mode = getattr(nncf.CompressWeightsMode, NNCF_MODES[quantization])
    ov.save_model(nncf.compress_weights(ir, mode=mode, **options), str(out / "openvino_model.xml"))


weight_types = per_file(_weight_types)  # describe() asks once per point; reading the IR takes ~0.4 s


def inference_precision(device: str) -> Optional[str]:
    """The precision word of ``device``'s default ``INFERENCE_PRECISION_HINT``; None when it cannot be read."""
    import openvino as ov

    from harness.records.precision import from_openvino_type

    try:
        return from_openvino_type(ov.Core().get_property(device, "INFERENCE_PRECISION_HINT"))
    except Exception:  # noqa: BLE001 - an absent device or a plugin without the property: the id keeps the dtype
        return None
