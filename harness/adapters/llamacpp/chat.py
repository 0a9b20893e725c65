"""The prompt llama-cpp-python's chat API builds (``Llama.create_chat_completion``), as it resolves its
chat handler for the loaded GGUF: the GGUF's own ``tokenizer.chat_template`` (Jinja), a named format
guessed from it, or, where the GGUF carries none, its ``llama-2`` fallback."""

from __future__ import annotations


class _Captured(Exception):
    def __init__(self, text: str, add_bos: bool):
        super().__init__(text)
        self.text, self.add_bos = text, add_bos


class _Capture:
    """Stands in for the ``Llama`` a chat handler drives: the handler formats the messages, then tokenizes
    the prompt; the text it tokenizes is caught there, before anything is generated."""

    def __init__(self, llm):
        self._llm = llm

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False):
        raise _Captured(text.decode("utf-8"), add_bos)

    def __getattr__(self, name):
        return getattr(self._llm, name)


def handler(llm):
    """The handler ``create_chat_completion`` picks (the same expression as llama-cpp-python 0.3's)."""
    import llama_cpp.llama_chat_format as chat_format

    return (
        llm.chat_handler
        or llm._chat_handlers.get(llm.chat_format)
        or chat_format.get_chat_completion_handler(llm.chat_format)
    )


def rendered(llm, messages: list[dict]) -> str:
    """The prompt text the chat API feeds the model, its BOS written out as text where it adds one."""
    try:
        handler(llm)(llama=_Capture(llm), messages=messages)
    except _Captured as caught:
        bos = llm.token_bos()
        prefix = llm._model.token_get_text(bos) if caught.add_bos and llm._model.add_bos_token() and bos >= 0 else ""
        return prefix + caught.text
    raise RuntimeError(f"llama-cpp-python's chat handler for {llm.chat_format!r} never tokenized a prompt")


def configure(llm, choice: str, template) -> str:
    """Set the chat path as a deployment would (``adapter_options.llamacpp.chat_template``): ``checkpoint``
    installs the checkpoint's own template (``template``), any other value names a llama-cpp-python chat
    format (e.g. ``gemma``). Returns where the template now comes from."""
    import llama_cpp.llama_chat_format as chat_format

    if choice != "checkpoint":
        llm.chat_format = choice
        return f"{choice} (set by adapter_options.llamacpp.chat_template)"
    if template is None:
        raise ValueError("adapter_options.llamacpp.chat_template: checkpoint, but the checkpoint has no chat template")
    model = llm._model
    bos, eos = llm.token_bos(), llm.token_eos()
    llm.chat_handler = chat_format.Jinja2ChatFormatter(
        template=template,
        eos_token=model.token_get_text(eos) if eos >= 0 else "",
        bos_token=model.token_get_text(bos) if bos >= 0 else "",
        stop_token_ids=[eos],
    ).to_chat_handler()
    where = "the GGUF's own is replaced" if "tokenizer.chat_template" in llm.metadata else "the GGUF carries none"
    return f"the checkpoint's chat template, set by adapter_options.llamacpp.chat_template ({where})"


def source(llm) -> str:
    """Where the chat path's template comes from, in words."""
    name = llm.chat_format
    if llm.chat_handler is not None:
        return f"a chat handler given at load ({type(llm.chat_handler).__name__})"
    if "tokenizer.chat_template" not in llm.metadata:
        return f"{name} (llama-cpp-python's choice: the GGUF carries no tokenizer.chat_template)"
    if name == "chat_template.default":
        return "the GGUF's tokenizer.chat_template (Jinja)"
    return f"{name} (a format named by llama-cpp-python, not the GGUF's tokenizer.chat_template itself)"
