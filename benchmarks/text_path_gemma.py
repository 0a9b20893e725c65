"""The engine's own text path on a real model: llama.cpp's tokenizer against the reference tokenizer on the
shipped tricky strings and the 16 gate prompts (with SentencePiece on the GGUF's vocabulary deciding who
is right), and llama-cpp-python's chat template against the reference's.

    python benchmarks/text_path_gemma.py [--model gemma3-270m] [--chat-template checkpoint]
"""

from __future__ import annotations

import argparse
import time

from harness.adapters.base import LoadSettings
from harness.adapters.llamacpp import LlamaCppAdapter
from harness.correctness import text_path, vocabulary
from harness.models import prompts, sources
from harness.scenario.schema import ModelSpec
from harness.scenario.sweep import Point


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gemma3-270m")
    parser.add_argument("--chat-template", help="adapter_options.llamacpp.chat_template (checkpoint or a format)")
    args = parser.parse_args()
    model = sources.resolve(ModelSpec(source=args.model))
    tokenizer = model.tokenizer()
    adapter = LlamaCppAdapter()
    options = LlamaCppAdapter.Options(chat_template=args.chat_template)
    adapter.load(
        model, Point(adapter="llamacpp", device="cpu", id="text-path"), LoadSettings(threads=2, options=options)
    )
    try:
        gate = prompts.gate_prompt_set()
        corpus = prompts.tokenizer_corpus()
        texts = corpus + gate["plain"] + gate["chat"]
        start = time.perf_counter()
        arbiter, metadata = vocabulary.arbiter(adapter, model)
        agreement = text_path.tokenizer_agreement(adapter, tokenizer, texts, arbiter, metadata)
        template = prompts.chat_template(model.hf_dir)
        chat = text_path.chat_template(adapter, template, tokenizer)
        pairs = prompts.select_gate_prompts("all")
        reference_ids = prompts.encode_gate_prompts(tokenizer, model.hf_dir, pairs)
        differing = [
            i
            for i, ((kind, text), ids) in enumerate(zip(pairs, reference_ids))
            if text_path.engine_prompt_ids(adapter, kind, text, template) != ids
        ]
        took = time.perf_counter() - start
    finally:
        adapter.close()
    print(f"model {model.name}, llama-cpp-python, vocabulary {metadata}")
    print(
        f"tokenizer: {len(agreement.disagreements)} of {agreement.strings} strings disagree "
        f"({len(corpus)} corpus strings + 16 gate prompt texts); checked in {took:.1f} s"
    )
    for d in agreement.disagreements:
        print(f"  {d.text[:60]!r}: first difference at id {d.first_difference}; right: {d.right} ({d.why})")
        print(f"    engine    {d.engine_ids[max(0, d.first_difference - 2) : d.first_difference + 4]}")
        print(f"    reference {d.reference_ids[max(0, d.first_difference - 2) : d.first_difference + 4]}")
    print(f"gate prompts whose ids through the engine's own text path differ: {differing} of {len(pairs)}")
    print(f"chat template: {chat.verdict or 'skipped: ' + str(chat.skipped)}; engine's: {chat.engine_template}")
    for m in chat.mismatches:
        at = m.first_difference
        print(f"  {m.conversation}: engine {m.engine_text[:80]!r}")
        print(f"  {'':{len(m.conversation)}}  reference {m.reference_text[:80]!r} (first difference at char {at})")


if __name__ == "__main__":
    main()
