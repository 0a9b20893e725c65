"""The ``openvino`` adapter's own text path (``harness.correctness.text_path``): GenAI's tokenizer, the
openvino_tokenizers IRs (``openvino_tokenizer.xml``, ``openvino_detokenizer.xml``) that ``LLMPipeline``
loads from the IR directory as a deployment's would, its chat template (``Tokenizer.apply_chat_template``)
and its text-in, text-out ``LLMPipeline.generate``.

An IR directory without tokenizer IRs (exported elsewhere, or by an older harness) gets them converted
here from the checkpoint's tokenizer with openvino_tokenizers' public ``convert_tokenizer``, cached beside
the IRs; the pipeline is then given that tokenizer, and the record says so (``tokenizer_converted``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence


def tokenizer_dir(ir_dir: Path, model, cache: Path) -> tuple[Optional[Path], str]:
    """(a directory of converted tokenizer IRs to give the pipeline, or None where the IR directory holds
    its own; where the tokenizer came from, in words)."""
    import openvino_tokenizers

    from harness.adapters.openvino.ir_export import TOKENIZER_FILES, convert_tokenizer
    from harness.io import safe_name
    from harness.models.cache_build import build_once

    version = openvino_tokenizers.__version__.split("-")[0]
    if all((ir_dir / name).exists() for name in TOKENIZER_FILES):
        return None, (
            f"the IR directory's own {' and '.join(TOKENIZER_FILES)} (converted from the checkpoint's "
            "tokenizer with the IR)"
        )
    target = cache / "openvino" / "tokenizers" / f"{safe_name(model.name)}-{model.artefact_key}-{version}"
    build_once(target, lambda out: convert_tokenizer(model.hf_dir, out), TOKENIZER_FILES[0])
    return target, (
        f"converted by the harness from the checkpoint's tokenizer with openvino_tokenizers {version}: "
        f"the IR directory {ir_dir} holds no {TOKENIZER_FILES[0]}"
    )


class GenAITextPath:
    """tokenize/detokenize/chat_prompt/generate_text through the loaded ``self.pipeline``'s own tokenizer."""

    def _tokenizer(self):
        return self.pipeline.get_tokenizer()

    def tokenize(self, text: str, add_special: bool = True) -> list[int]:
        ids = self._tokenizer().encode(text, add_special_tokens=add_special).input_ids
        return [int(t) for t in ids.data[0]]

    def detokenize(self, ids: Sequence[int]) -> str:
        return self._tokenizer().decode([int(t) for t in ids], skip_special_tokens=True)

    def chat_prompt(self, messages: Sequence[dict]) -> str:
        tokenizer = self._tokenizer()
        if not tokenizer.chat_template:  # GenAI's generate then feeds the text as it is
            return str(messages[-1]["content"])
        return tokenizer.apply_chat_template(list(messages), add_generation_prompt=True)

    def chat_template_source(self) -> str:
        tokenizer = self._tokenizer()
        if not tokenizer.chat_template:
            return "none: GenAI's tokenizer carries no chat template (generate feeds the text as it is)"
        if tokenizer.chat_template != tokenizer.get_original_chat_template():
            return "GenAI's simplified replacement of the tokenizer's chat template"
        return "GenAI Tokenizer.chat_template (the tokenizer IR's rt_info or the IR directory's tokenizer files)"

    def generate_text(self, text: str, chat: bool, max_new_tokens: int) -> str:
        """``LLMPipeline.generate(str)`` with the pipeline's own generation config, made greedy; GenAI
        applies the chat template itself when ``chat`` (its ``apply_chat_template``)."""
        config = self.pipeline.get_generation_config()
        config.max_new_tokens = max_new_tokens
        config.do_sample = False
        config.num_beams = 1
        config.apply_chat_template = chat
        result = self.pipeline.generate(text, config)  # a str for a str prompt (DecodedResults in older GenAI)
        return result if isinstance(result, str) else result.texts[0]
