"""The ``llamacpp`` adapter's GGUF files: the source GGUF (the scenario's own artefact, the model's own, or
converted from a checkpoint by llama.cpp's ``convert_hf_to_gguf.py``: ``converter``), quantized to a point's
level by llama.cpp's quantizer, and the draft model's. Each is built once into the cache, keyed by what made it."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from harness.adapters.base import PointSkipped
from harness.adapters.trace import now_ns

FTYPES = {
    "int8_sym": ("MOSTLY_Q8_0", "Q8_0"),
    "int4_sym": ("MOSTLY_Q4_0", "Q4_0"),
    "int4_asym": ("MOSTLY_Q4_1", "Q4_1"),
}


def converted(model, cache: Path) -> Path:
    """``model``'s checkpoint as an F16 GGUF written by llama.cpp's converter, built once into ``cache``."""
    from harness.adapters.llamacpp import converter
    from harness.io import safe_name
    from harness.models.cache_build import build_once

    # keyed by the converter too: another llama.cpp version writes another GGUF from the same checkpoint
    target = cache / "llamacpp" / f"{safe_name(model.name)}-{model.artefact_key}-f16-{converter.key()}"
    build_once(target, lambda out: converter.convert(model.hf_dir, out / "model.gguf"), "model.gguf")
    return target / "model.gguf"


class GgufFiles:
    """The GGUF a point loads; ``self._figures`` (the adapter's load figures) gets the quantizer's time."""

    def _source_gguf(self, model, cache: Path) -> Path:
        given = model.given_for(self.name)  # the scenario's own GGUF (model.artefacts.llamacpp), run as is
        if given is not None:
            return given.path
        if model.gguf_path is not None:
            return Path(model.gguf_path)
        return converted(model, cache)

    def _quantized(self, source: Path, quantization: str, threads: Optional[int], cache: Path) -> Path:
        import llama_cpp

        from harness.adapters.llamacpp import gguf_export
        from harness.models.cache_build import build_once

        ftype_name, short = FTYPES[quantization]
        if not gguf_export.is_full_precision(source):
            raise PointSkipped(
                f"{source.name} is already quantized ({gguf_export.file_type(source)}); llama.cpp's quantizer needs an "
                f"F32/F16/BF16 GGUF to make {quantization} ({short}): give one as model.source"
            )
        from harness.io import file_sha256

        # keyed by the source's content and the quantizer's version: two GGUFs of one name and size (two seeds
        # of one model) must not share a quantized file
        version = llama_cpp.__version__
        target = cache / "llamacpp" / f"{source.stem}-{file_sha256(source)[:16]}-llama{version}-{short}"

        def quantize(out: Path) -> None:
            params = llama_cpp.llama_model_quantize_default_params()
            params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_{ftype_name}")
            params.nthread = threads or 0
            code = llama_cpp.llama_model_quantize(str(source).encode(), str(out / "model.gguf").encode(), params)
            if code != 0:
                raise RuntimeError(f"llama_model_quantize({short}) returned {code}")

        start = now_ns()
        self._figures["quantize_s"] = (now_ns() - start) / 1e9 if build_once(target, quantize, "model.gguf") else 0.0
        return target / "model.gguf"

    def _draft_path(self, draft, spec, threads, cache: Path) -> str:
        """The draft's GGUF: its own, or exported, then quantized to the draft's level where it asks for one."""
        path = self._source_gguf(draft, cache)
        return str(self._quantized(path, spec.quantization, threads, cache) if spec.quantization != "none" else path)
