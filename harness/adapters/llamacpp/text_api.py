"""The ``llamacpp`` adapter's own text path, as llama-cpp-python's completion and chat APIs run it: its tokenizer
and detokenizer, and the prompt its chat API builds (``harness.correctness.text_path`` checks them)."""

from __future__ import annotations

from typing import Sequence


class LlamaTextApi:
    """Text in and out through ``self.llm`` (a loaded ``llama_cpp.Llama``); ``self._chat_source`` names a chat
    template the scenario configured."""

    def tokenize(self, text: str, add_special: bool = True) -> list[int]:
        # as create_completion tokenizes a text prompt: the vocabulary's BOS, special-token text parsed
        return self.llm.tokenize(text.encode("utf-8"), add_bos=add_special, special=True)

    def detokenize(self, ids: Sequence[int]) -> str:
        return self.llm.detokenize(list(ids)).decode("utf-8", errors="replace")

    def chat_prompt(self, messages: Sequence[dict]) -> str:
        from harness.adapters.llamacpp.chat import rendered

        return rendered(self.llm, list(messages))

    def chat_template_source(self) -> str:
        from harness.adapters.llamacpp.chat import source

        return self._chat_source or source(self.llm)
