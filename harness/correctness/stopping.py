"""The stopping check: the timed ``generate`` runs to a forced length (EOS does not stop it), and the gate steps
logits, so an engine whose generation ignores EOS or end of turn passes both. Here every short gate prompt and
the shipped stop prompts (``gate_prompts.json`` ``stop``: short answers through the chat template, whose
reference ends well inside the budget) run through the engine's own stopping (``Adapter.generate_until_stop``),
greedy, and its stop is judged against the reference's greedy continuation:

- a stop token generated and gone past (the engine saw its EOS and did not stop) fails;
- the same tokens as the reference up to the reference's stop, and no stop there (a late stop), fails;
- a stop where the reference goes on, after the same tokens (an early stop), fails unless a stop token is in
  the reference's top-k there, or within the tie margin of its k-th (``harness.correctness.ties``);
- after the two diverge (another answer may end elsewhere), an engine that never stops where the reference
  does must still lie in the text path's length band around the reference's length
  (``harness.correctness.text_path.LENGTH_BAND``).

A stop prompt whose reference does not end within the budget (the default Gemma 3 270M ends none) is not run
through the engine: it could judge only an early stop, which the gate's prompts judge; ``StopCheck.unended``
lists it, so nothing reads as a stop judged that was not.

Pure over a loaded adapter and references; the run step (``harness.run.steps.check_stopping``) records it.
"""

from __future__ import annotations

from typing import Optional, Sequence

from harness.correctness import ties
from harness.correctness.lengths import on_own_text
from harness.correctness.own_stopping import OwnStopping
from harness.correctness.stored_reference import PromptReference
from harness.errors import Unsupported
from harness.records.stopping import StopCheck, StopPrompt

STOP_SHARE = 0.5  # a reference stop within this share of the budget counts as stopping early


def _body(tokens: Sequence[int], stop: Sequence[int]) -> tuple[list[int], Optional[int]]:
    """(the tokens before the first stop token, that stop's index or None)."""
    at = next((i for i, t in enumerate(tokens) if t in stop), None)
    return list(tokens[:at] if at is not None else tokens), at


def judge(device: Sequence[int], ref: PromptReference, stop: Sequence[int], budget: int, k: int) -> StopPrompt:
    """One prompt: the engine's own generation (``device``) against the reference's greedy continuation."""
    from harness.correctness.text_path import LENGTH_BAND, first_difference, in_band

    body, at = _body(device, stop)
    ref_body, ref_at = _body(ref.tokens, stop)
    ended = bool(device) and device[-1] in stop
    device_stops = ended or len(device) < budget  # an engine may drop its stop token from the output
    found = StopPrompt(
        source="gate",
        prompt=0,
        reference_tokens=len(ref_body),
        reference_stops=ref_at is not None,
        device_tokens=len(device) - ended,  # all it generated: past a stop token it did not stop at, too
        device_stops=device_stops,
    )
    same = first_difference(body, ref_body)
    if at is not None and at < len(device) - 1:
        found.why = f"generated stop token {device[at]} at position {at} and went on ({len(device)} tokens)"
    elif found.reference_stops and not device_stops and same >= len(ref_body):
        found.why = f"did not stop where the reference stops (after {len(ref_body)} tokens, the same ones); generated {len(body)}"
    elif device_stops and not found.reference_stops and same >= len(body):
        if not any(ties.within(ref.top_ids[len(body)], ref.top_logprobs[len(body)], t, k) for t in stop):
            found.why = (
                f"stopped after {len(body)} tokens, where the reference goes on and has no stop token in its top-{k}"
            )
    elif found.reference_stops and not device_stops and not in_band(len(body), len(ref_body)):
        # diverged first: another answer may end elsewhere, but one that never ends where the reference's did
        found.why = (
            f"never stopped ({len(body)} tokens) where the reference stops after {len(ref_body)}: outside the "
            f"length band {LENGTH_BAND}"
        )
    return found


def check(
    adapter,
    gate_prompts: Sequence[PromptReference],
    stop_prompts: Sequence[PromptReference],
    stop: Sequence[int],
    budget: int,
    k: int,
    own: Optional[OwnStopping] = None,
) -> StopCheck:
    """``own``: the launch's generations through the engine's own stopping, shared with the text path."""
    from harness.correctness.text_path import LENGTH_BAND

    if not adapter.supports_stopping:
        return StopCheck(
            skipped=f"{adapter.name} exposes no generation that stops by itself (Adapter.generate_until_stop): "
            "its timed generate runs to a forced length"
        )
    result, own = StopCheck(budget=budget, length_band=LENGTH_BAND), own or OwnStopping(adapter)
    for source, refs in (("gate", gate_prompts), ("stop", stop_prompts)):
        for index, ref in enumerate(refs):
            if on_own_text(ref.kind):
                continue
            if source == "stop" and _body(ref.tokens, stop)[1] is None:
                # a stop prompt is there to end: one whose reference runs to the budget would judge only "did not
                # stop early", which the gate's prompts judge (their generation is the text path's, shared)
                result.unended.append(index)
                continue
            try:
                device = own(ref.prompt_ids, budget)
            except Unsupported as exc:  # a limit of this point (a static cache's size), said per prompt
                result.notes.append(f"{source} prompt {index} not run: {exc}")
                continue
            found = judge(device, ref, stop, budget, k).model_copy(update={"source": source, "prompt": index})
            result.prompts.append(found)
            if found.reference_stops and found.reference_tokens <= STOP_SHARE * budget:
                result.stopping += 1
    if result.unended:
        result.notes.append(
            f"stop prompt(s) {result.unended} not run: the reference does not end within the {budget}-token budget "
            "on them, so no late stop or stop token gone past could be judged"
        )
    if not result.prompts:
        return StopCheck(
            skipped=f"no prompt could run through {adapter.name}'s own stopping: {'; '.join(result.notes)}",
            unended=result.unended,
        )
    if not result.stopping:
        result.notes.append(
            f"no reference stops within {STOP_SHARE:.0%} of the {budget}-token budget on this model: only late "
            "stops and stop tokens gone past are judged"
        )
    result.verdict = "fail" if any(p.why for p in result.prompts) else "pass"
    return result


def reasons(found: StopCheck) -> list[str]:
    return [f"stopping: {p.source} prompt {p.prompt}: {p.why}" for p in found.prompts if p.why]
