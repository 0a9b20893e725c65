"""The engine's own text path, which the gate never runs: the gate feeds the reference's token ids, so a
tokenizer that splits whitespace differently, or a chat API that picks the wrong template, passes it.

- **Tokenizer agreement**: the engine's tokenizer (``Adapter.tokenize``) against the reference tokenizer on
  the shipped tricky strings (``harness/models/data/tokenizer_corpus.json``) and the gate's prompt texts.
  Where they disagree, ``arbiter`` (``harness.correctness.vocabulary``: the GGUF's own vocabulary metadata)
  says which is right.
- **Chat template**: single- and multi-turn messages through the engine's chat path
  (``Adapter.chat_prompt``) against the reference's template rendering.
- **Free-running text**: text -> engine tokenizer (chat prompts through the engine's chat path) ->
  greedy generation -> engine detokenizer, against the reference's greedy text: at the first generated
  position whose id differs, the engine's token must be in the reference's top-k or within the tie margin
  of its k-th (one way, as the top-1 gate; ``harness.correctness.ties``), the same ids must detokenize to the same text, and the generated length must lie in a band
  around the reference's. Generation stops where the engine's own stopping stops it
  (``Adapter.generate_until_stop``), never at a length forced on it. An engine with a text-in, text-out API of its own (``Adapter.generate_text``:
  OpenVINO GenAI's ``LLMPipeline.generate(str)``) also runs the prompt text through it: its text must be
  what its tokenizer, generate and detokenizer give piece by piece, and it is the text compared.

Pure over a loaded adapter and the stored reference; the run step (``harness.run.steps.check_text_path``)
records the result. Informational parts never change the gate's own figures; a failed check fails the point.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from harness.correctness import ties
from harness.correctness.lengths import on_own_text
from harness.correctness.own_stopping import OwnStopping
from harness.correctness.stored_reference import Reference
from harness.records.text_path import (
    ChatMismatch,
    ChatTemplateCheck,
    FreeText,
    TextDivergence,
    TokenizerAgreement,
    TokenizerDisagreement,
)

# Conversations rendered by both chat paths: one turn, and a turn after an answer.
CONVERSATIONS: dict[str, list[dict]] = {
    "single-turn": [{"role": "user", "content": "What is the boiling point of water in Fahrenheit?"}],
    "multi-turn": [
        {"role": "user", "content": "Name a primary colour."},
        {"role": "assistant", "content": "Red."},
        {"role": "user", "content": "And  another one,\nplease?"},
    ],
}
# A generated length outside [LOW x, HIGH x] the reference's, give or take SLACK tokens, fails.
LENGTH_BAND = (0.5, 2.0, 4)

Arbiter = Callable[[str, list[int], list[int]], tuple[str, str]]  # (text, engine, reference) -> (right, why)


def first_difference(a: Sequence, b: Sequence) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def reference_ids(tokenizer, text: str) -> list[int]:
    return list(tokenizer.encode(text).ids)  # with the special prefix its post-processor adds


def tokenizer_agreement(
    adapter, tokenizer, texts: Sequence[str], arbiter: Optional[Arbiter] = None, vocabulary: Optional[dict] = None
) -> TokenizerAgreement:
    if not adapter.supports_tokenize:
        return TokenizerAgreement(
            skipped=f"{adapter.name} exposes no tokenizer of its own (Adapter.tokenize): the harness's ids are all it was fed"
        )
    found = []
    for text in texts:
        engine, ours = list(adapter.tokenize(text)), reference_ids(tokenizer, text)
        if engine != ours:
            right, why = arbiter(text, engine, ours) if arbiter else ("undecided", "no vocabulary metadata to decide")
            found.append(
                TokenizerDisagreement(
                    text=text,
                    engine_ids=engine,
                    reference_ids=ours,
                    first_difference=first_difference(engine, ours),
                    right=right,
                    why=why,
                )
            )
    return TokenizerAgreement(
        verdict="fail" if found else "pass",
        strings=len(texts),
        disagreements=found,
        vocabulary=vocabulary or {},
    )


def chat_template(adapter, template: Optional[str], tokenizer) -> ChatTemplateCheck:
    from harness.models.prompts import render_messages

    if not adapter.supports_chat_template:
        return ChatTemplateCheck(skipped=f"{adapter.name} has no chat path of its own (no chat_prompt)")
    source = adapter.chat_template_source()
    if template is None:
        return ChatTemplateCheck(
            skipped="the reference checkpoint has no chat template: nothing to compare the engine's with",
            engine_template=source,
        )
    mismatches = []
    for name, messages in CONVERSATIONS.items():
        engine, ours = adapter.chat_prompt(messages), render_messages(template, tokenizer, messages)
        if engine != ours:
            mismatches.append(
                ChatMismatch(
                    conversation=name,
                    engine_text=engine,
                    reference_text=ours,
                    first_difference=first_difference(engine, ours),
                )
            )
    return ChatTemplateCheck(
        verdict="fail" if mismatches else "pass",
        engine_template=source,
        conversations=len(CONVERSATIONS),
        mismatches=mismatches,
    )


def chat_path(adapter, kind: str, template: Optional[str]) -> bool:
    """Whether a gate prompt goes through the engine's chat path: a chat prompt, where the reference has
    a template to compare it with."""
    return kind == "chat" and bool(template) and adapter.supports_chat_template


def engine_prompt_ids(adapter, kind: str, text: str, template: Optional[str]) -> list[int]:
    """The ids the engine's own API would feed its model for a gate prompt."""
    if chat_path(adapter, kind, template):
        return list(adapter.tokenize(adapter.chat_prompt([{"role": "user", "content": text}]), add_special=False))
    return list(adapter.tokenize(text))


def input_ids_of(adapter, reference: Reference, template: Optional[str]) -> Optional[Callable[[int], list[int]]]:
    """Gate prompt index -> the ids the engine's own text path gives it; None without a tokenizer."""
    if not adapter.supports_tokenize:
        return None
    return lambda index: engine_prompt_ids(
        adapter, reference.prompts[index].kind, reference.prompts[index].text, template
    )


def _greedy(
    adapter, prompt_ids: list[int], n: int, stop: Sequence[int], own: Optional[OwnStopping] = None
) -> list[int]:
    """The engine's greedy continuation, cut after the first stop id: its own stopping
    (``generate_until_stop``, through ``own`` where the launch shares it) where it has one, never a length the
    engine would not produce by itself; else its timed ``generate`` (a forced length, cut here), else its
    step-wise logits."""
    from harness.correctness.logprobs import greedy_steps

    if adapter.supports_stopping:
        out = (own or OwnStopping(adapter))(prompt_ids, n)
    elif (trace := adapter.generate([prompt_ids], n)).output_ids is not None:
        out = list(trace.output_ids[0])
    elif adapter.supports_logits:
        out = greedy_steps(adapter, prompt_ids, n, stop, 1)[0]
    else:
        raise ValueError(f"{adapter.name} returns no generated ids and no logits")
    cut = next((i + 1 for i, t in enumerate(out) if t in stop), len(out))
    return out[:cut]


def in_band(device: int, reference: int, band: tuple[float, float, int] = LENGTH_BAND) -> bool:
    low, high, slack = band
    return low * reference - slack <= device <= high * reference + slack


def free_text(
    adapter, reference: Reference, tokenizer, template: Optional[str], k: int, own: Optional[OwnStopping] = None
) -> FreeText:
    if not adapter.supports_tokenize:
        return FreeText(
            skipped=f"{adapter.name} exposes no tokenizer of its own (Adapter.tokenize): its text path is the harness's, which the gate ran"
        )
    stop = reference.settings["eos_ids"]
    # The short prompts only: a long prompt is teacher-forced by the gate, and its greedy run would not fit
    # the context of a point sized for its own prompt (llama_decode fails with no KV slot).
    short = [(index, ref) for index, ref in enumerate(reference.prompts) if not on_own_text(ref.kind)]
    result = FreeText(prompts=len(short), length_band=LENGTH_BAND)
    for index, ref in short:
        ids = engine_prompt_ids(adapter, ref.kind, ref.text, template)
        if ids != ref.prompt_ids:
            result.prompt_ids_differ.append(index)
        device = _greedy(adapter, ids, reference.settings["tokens"], stop, own)
        body = [t for t in device if t not in stop]
        ref_body = [t for t in ref.tokens if t not in stop]
        result.lengths.append((len(body), len(ref_body)))
        text, ref_text = adapter.detokenize(body), tokenizer.decode(ref_body, skip_special_tokens=True)
        api = None
        if adapter.supports_text_generation:  # the engine's own text API, tokenizer and detokenizer inside
            api = adapter.generate_text(ref.text, chat_path(adapter, ref.kind, template), reference.settings["tokens"])
            result.text_api = "generate_text"
        if (text if api is None else api) == ref_text:
            result.identical_text += 1
        position = first_difference(device, ref.tokens)
        why = None
        if ids != ref.prompt_ids:
            at = first_difference(ids, ref.prompt_ids)
            why = f"the engine's own text path gives other prompt ids (from id {at}) than the reference's"
        elif position < min(len(device), len(ref.tokens)) and not ties.within(
            ref.top_ids[position], ref.top_logprobs[position], device[position], k
        ):
            why = f"device token {device[position]} not in reference top-{k} at generated position {position}"
        elif device == ref.tokens and text != ref_text:
            why = f"same ids detokenize to {text[:40]!r}, reference {ref_text[:40]!r}"
        elif api is not None and api != text:
            why = f"the engine's text API returns {api[:40]!r}; its tokenizer, generate and detokenizer {text[:40]!r}"
        elif not in_band(len(body), len(ref_body)):
            why = f"generated {len(body)} tokens, reference {len(ref_body)}: outside the length band {LENGTH_BAND}"
        if why:
            found = TextDivergence(prompt=index, why=why)
            if ids == ref.prompt_ids:  # positions compare only after the same prompt
                found.position = position
                found.device_token = device[position] if position < len(device) else None
                found.reference_token = ref.tokens[position] if position < len(ref.tokens) else None
            result.divergences.append(found)
    result.verdict = "fail" if result.divergences else "pass"
    return result


def reasons(path) -> list[str]:
    """One reason per failed check of a ``TextPath``."""
    out = []
    tok, chat, text, batch = path.tokenizer, path.chat_template, path.free_text, path.batch
    if tok.verdict == "fail":
        worst = tok.disagreements[0]
        out.append(
            f"text path: the engine's tokenizer disagrees with the reference on {len(tok.disagreements)} of "
            f"{tok.strings} strings (first: {worst.text[:30]!r}; right: {worst.right})"
        )
    if chat.verdict == "fail":
        out.append(
            f"text path: the engine's chat template ({chat.engine_template}) renders "
            f"{len(chat.mismatches)} of {chat.conversations} conversations unlike the reference's"
        )
    if text.verdict == "fail":
        prompts = [d.prompt for d in text.divergences]
        out.append(f"text path: free-running text departs from the reference on prompt(s) {prompts}")
    if batch.verdict == "fail":
        out.append(
            f"batch invariance: sequence(s) {batch.failing_sequences} of a batch of {batch.batch_size} differ "
            f"from the same prompt alone (KL max {batch.kl_max:.3g} > {batch.kl_limit:.3g}"
            + (f", {batch.kl_ratio_max:.1f}x its floor" if batch.kl_ratio_max is not None else "")
            + f"; lengths {batch.lengths}, {batch.padding or 'unknown'} padding)"
        )
    return out


def format_report(path) -> str:
    """Readable lines for the record's report: each disagreement with both sides."""
    lines = []
    for d in path.tokenizer.disagreements[:5]:
        lines.append(f"  tokenizer {d.text[:50]!r}: engine {d.engine_ids[:12]} reference {d.reference_ids[:12]}")
        lines.append(f"    first difference at id {d.first_difference}; right: {d.right} ({d.why})")
    for m in path.chat_template.mismatches:
        at = m.first_difference
        lines.append(
            f"  chat {m.conversation}: engine {m.engine_text[max(0, at - 10) : at + 30]!r} "
            f"reference {m.reference_text[max(0, at - 10) : at + 30]!r} (char {at})"
        )
    for t in path.free_text.divergences:
        lines.append(f"  text prompt {t.prompt}: {t.why}")
    return "\n".join(lines)
