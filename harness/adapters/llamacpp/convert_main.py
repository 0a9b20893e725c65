"""Subprocess entry that runs llama.cpp's ``convert_hf_to_gguf.py`` (``harness.adapters.llamacpp.converter``).

Run by file path, so it imports nothing of the harness: ``python convert_main.py SRC PRE -- ARGS...`` runs
``SRC/convert_hf_to_gguf.py ARGS...`` (or, with ``--architecture DIR`` in place of ``-- ARGS``, only its
architecture lookup, for ``harness check``) with ``SRC`` (its ``conversion/`` package) and ``SRC/gguf-py`` ahead of
the installed packages, as llama.cpp's own checkout runs it. ``PRE`` is ``-`` or a llama.cpp pre-tokenizer name
used only where the converter does not recognise the tokenizer (its list holds hashes of published
tokenizers; a tokenizer trained for the checkpoint is in none): every other step is the converter's own.
"""

import runpy
import sys
from pathlib import Path

MARKER = "harness-pre-tokenizer:"  # the line the parent reads to record that PRE was used
ARCHITECTURE = "--architecture"  # in place of ``--``: only look the checkpoint's architecture up


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


def _architecture(folder: str) -> None:
    """The converter's own architecture lookup, without weights: its config reading, architecture choice and
    model class (importing that class's module); exit 1 with its own words where it has none."""
    from conversion import ModelBase, ModelType, get_model_architecture, get_model_class

    hparams = ModelBase.load_hparams(Path(folder), False)
    if not hparams.get("architectures") and hparams.get("model_type"):  # a config written from a tiny recipe
        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

        hparams["architectures"] = [MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(hparams["model_type"], "")]
    architecture = get_model_architecture(hparams, ModelType.TEXT)
    try:
        get_model_class(architecture)
    except NotImplementedError:
        print(f"Model {architecture} is not supported", file=sys.stderr)  # as the converter logs it
        raise SystemExit(1) from None
    print(architecture)


def main(argv: list) -> None:
    src, pre, separator, *args = argv
    if separator not in ("--", ARCHITECTURE):
        raise SystemExit(f"usage: convert_main.py SRC PRE -- CONVERTER ARGS | convert_main.py SRC - {ARCHITECTURE} DIR")
    sys.path[:1] = [src, str(Path(src) / "gguf-py")]  # in place of this file's folder
    if separator == ARCHITECTURE:
        return _architecture(args[0])
    if pre != "-":
        _fallback_pre_tokenizer(pre)
    script = str(Path(src) / "convert_hf_to_gguf.py")
    sys.argv = [script, *args]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
