"""K-quant GGUFs for the dequantized check's tests, made by llama.cpp's own quantizer.

llama.cpp's K-quants (Q2_K ... Q6_K) pack 256-element super-blocks; a row narrower than that, or not a
multiple of it, is written in a fallback format instead (tiny-llama's 64- and 128-wide rows give Q5_0 /
Q8_0, never a K-quant). ``wide_llama`` is tiny-llama's tokenizer and architecture with 256-wide rows
(hidden 256, feed-forward 512), so every linear weight can be a K-quant; ``quantized`` converts it to an
F16 GGUF (llama.cpp's converter, as the ``llamacpp`` adapter does) and quantizes it to a K-quant file
type. A scenario runs such a GGUF as the model's own artefact (``model.artefacts.llamacpp``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

WIDE = {"hidden_size": 256, "intermediate_size": 512, "head_dim": 64}
# llama.cpp file types -> the tensor types they hold on the wide model (checked by the tests)
FTYPES = {
    "Q4_K_M": "MOSTLY_Q4_K_M",  # Q4_K, with Q6_K for some layers' attn_v / ffn_down and the output
    "Q5_K_M": "MOSTLY_Q5_K_M",  # Q5_K, with Q6_K
    "Q6_K": "MOSTLY_Q6_K",
    "Q3_K_M": "MOSTLY_Q3_K_M",  # Q3_K, with Q4_K / Q5_K
    "Q2_K": "MOSTLY_Q2_K",  # Q2_K, with Q3_K / Q4_K
    # the legacy formats on the same rows: the adapter's own levels (Q8_0, Q4_0, Q4_1) and the default model's Q5_0
    **{name: f"MOSTLY_{name}" for name in ("Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1")},
}


def wide_llama(tiny_llama_dir: Path, out: Path, seed: int = 0) -> Path:
    """tiny-llama's tokenizer with 256-wide rows and seeded random weights, written into ``out``."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    if (out / "config.json").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    for file in Path(tiny_llama_dir).iterdir():
        if file.is_file() and not file.name.endswith((".safetensors", ".bin")) and file.name != "config.json":
            shutil.copy2(file, out)
    config = json.loads((Path(tiny_llama_dir) / "config.json").read_text())
    config.update(WIDE)
    # A width of 256 at tiny-llama's initializer range (0.2) saturates every activation: a narrower one keeps
    # the logits as peaked as tiny-llama's.
    config["initializer_range"] = 0.05
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(**config), dtype=torch.float32)
    model.save_pretrained(str(out))
    return out


def quantized(hf_dir: Path, ftype: str, cache: Path) -> Path:
    """``hf_dir`` as a GGUF of llama.cpp's file type ``FTYPES[ftype]`` (converted to F16 first, both cached)."""
    import llama_cpp

    from harness.adapters.llamacpp import LlamaCppAdapter
    from harness.models import sources
    from harness.models.cache_build import build_once
    from harness.scenario.schema import ModelSpec

    model = sources.resolve(ModelSpec(source=str(hf_dir)), cache)
    adapter = LlamaCppAdapter()
    adapter._figures = {}
    source = adapter._source_gguf(model, cache)
    target = source.parent.parent / f"{source.parent.name}-{ftype}"

    def quantize(out: Path) -> None:
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_{FTYPES[ftype]}")
        params.nthread = 2
        code = llama_cpp.llama_model_quantize(str(source).encode(), str(out / "model.gguf").encode(), params)
        if code != 0:
            raise RuntimeError(f"llama_model_quantize({ftype}) returned {code}")

    build_once(target, quantize, "model.gguf")
    return target / "model.gguf"
