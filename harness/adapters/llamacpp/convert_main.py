"""Subprocess entry that runs llama.cpp's ``convert_hf_to_gguf.py`` (``harness.adapters.llamacpp.converter``).

Run by file path, so it imports nothing of the harness: ``python convert_main.py SRC PRE -- ARGS...`` runs
``SRC/convert_hf_to_gguf.py ARGS...`` with ``SRC`` (its ``conversion/`` package) and ``SRC/gguf-py`` ahead of
the installed packages, as llama.cpp's own checkout runs it. ``PRE`` is ``-`` or a llama.cpp pre-tokenizer name
used only where the converter does not recognise the tokenizer (its list holds hashes of published
tokenizers; a tokenizer trained for the checkpoint is in none): every other step is the converter's own.
"""

import runpy
import sys
from pathlib import Path

MARKER = "harness-pre-tokenizer:"  # the line the parent reads to record that PRE was used


def _fallback_pre_tokenizer(name: str) -> None:
    from conversion import base

    recognise = base.TextModel.get_vocab_base_pre

    def get_vocab_base_pre(self, tokenizer) -> str:
        try:
            return recognise(self, tokenizer)
        except NotImplementedError:
            print(f"{MARKER} {name}", file=sys.stderr, flush=True)
            return name

    base.TextModel.get_vocab_base_pre = get_vocab_base_pre


def main(argv: list) -> None:
    src, pre, separator, *args = argv
    if separator != "--":
        raise SystemExit("usage: convert_main.py SRC PRE -- CONVERTER ARGS")
    sys.path[:1] = [src, str(Path(src) / "gguf-py")]  # in place of this file's folder
    if pre != "-":
        _fallback_pre_tokenizer(pre)
    script = str(Path(src) / "convert_hf_to_gguf.py")
    sys.argv = [script, *args]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
