"""The beam check: a point timed with ``beam_width`` > 1 runs beam search, which the step-wise gate never
calls (it follows one greedy sequence). A beam-only bug (a KV cache not reordered when beams are) turns the
timed output to garbage while every greedy check passes. So, per short gate prompt:

- the engine's best beam (``Adapter.beam_search``: its beam search as timed, exactly ``tokens`` per beam)
  and the HF reference's, at the same width, prompt ids, length penalty and forced length;
- the reference **teacher-forced along the engine's best beam**: each of its tokens must be among the
  reference's top ``2 x width`` there (the candidates HF's beam search keeps per step), and the reference's
  score of that beam (``forced_score``) must agree with the engine's own score of it (``score_gap``) and
  must not fall short of the reference's own best beam (``deficit``), each within ``LINE`` per token;
- where the engine has step-wise logits, KL(reference || engine) along the engine's beam, over the gate's
  noise floor: reported (the greedy gate judges the step-wise path).

Beam search over bf16 logits may pick another beam than the reference's where two are close; that costs a
small deficit, never a top-candidate miss. Pure over loaded engines; the run step
(``harness.run.steps.check_beams``) records it.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from harness.correctness.lengths import on_own_text
from harness.correctness.logprobs import coarse_kl, iter_forced_logprobs, top_ids, top_row
from harness.correctness.stored_reference import Reference
from harness.errors import Unsupported
from harness.records.beams import BeamCheck, BeamPrompt

# Score gap and deficit, per token at length penalty 1: bf16 against fp32 moves a token's log-probability by
# a few hundredths of a nat, averaged over a beam's tokens.
LINE = 0.1


def _normalise(total: float, length: int, penalty: float) -> float:
    return total / (max(length, 1) ** penalty)


def _along(reference_engine, prompt_ids, tokens, candidates: int, adapter=None):
    """The reference teacher-forced along ``tokens``: (sum of their log-probabilities, the first step whose token
    is outside the reference's top ``candidates``, the KLs of ``adapter``'s step-wise logits there or None)."""
    total, miss = 0.0, None
    ref_rows = []
    for step, (token, logprobs) in enumerate(zip(tokens, iter_forced_logprobs(reference_engine, prompt_ids, tokens))):
        total += float(logprobs[token])
        if miss is None and token not in top_ids(logprobs, candidates):
            miss = step
        if adapter is not None:
            ref_rows.append(top_row(logprobs, 64))
    kls = None
    if adapter is not None:
        device = iter_forced_logprobs(adapter, prompt_ids, tokens)
        kls = [coarse_kl(ids, lps, row) for (ids, lps), row in zip(ref_rows, device)]
    return total, miss, kls


def check(adapter, reference_engine, reference: Reference, width: int, tokens: int) -> BeamCheck:
    """The engine's beams against the reference's on the short gate prompts (``reference_engine``: HF in the
    reference dtype, loaded)."""
    candidates = 2 * width
    result = BeamCheck(width=width, tokens=tokens, candidates=candidates, line=LINE)
    floor = reference.noise_floor.get("kl_mean")
    all_kls: list[float] = []
    skipped_prompts: list[str] = []
    for index, ref in enumerate(reference.prompts):
        if on_own_text(ref.kind):
            continue
        try:
            engine = adapter.beam_search(ref.prompt_ids, tokens, width)
        except Unsupported as exc:  # a limit of this point (a static cache's size)
            skipped_prompts.append(f"prompt {index}: {exc}")
            continue
        ours = reference_engine.beam_search(ref.prompt_ids, tokens, width)
        penalty = engine.length_penalty
        total, miss, kls = _along(
            reference_engine, ref.prompt_ids, engine.tokens, candidates, adapter if adapter.supports_logits else None
        )
        forced = _normalise(total, len(engine.tokens), penalty)
        found = BeamPrompt(
            prompt=index,
            identical=engine.tokens == ours.tokens,
            engine_tokens=engine.tokens,
            reference_tokens=ours.tokens,
            engine_score=round(engine.score, 6),
            reference_score=round(ours.score, 6),
            forced_score=round(forced, 6),
            score_gap=round(abs(engine.score - forced), 6),
            deficit=round(ours.score - forced, 6),
            first_miss=miss,
            kl_mean=float(np.mean(kls)) if kls else None,
        )
        all_kls += kls or []
        result.prompts.append(found)
        result.length_penalty = penalty
        if ours.length_penalty != penalty:
            result.reasons.append(
                f"beams: prompt {index}: the engine's length penalty {penalty} is not the reference's {ours.length_penalty}"
            )
        if miss is not None:
            result.reasons.append(
                f"beams: prompt {index}: the engine's best beam's token {engine.tokens[miss]} at step {miss} is not "
                f"among the reference's top {candidates} there"
            )
        for name, value in (("score gap", found.score_gap), ("deficit", found.deficit)):
            if value > LINE:
                result.reasons.append(
                    f"beams: prompt {index}: {name} {value:.3g} per token over the line {LINE} (the engine's best "
                    f"beam scores {engine.score:.3f} by itself, {forced:.3f} by the reference, whose own best beam "
                    f"scores {ours.score:.3f})"
                )
    if not result.prompts:
        why = "; ".join(skipped_prompts) or "no short gate prompt to run beams on"
        return BeamCheck(skipped=f"no beams compared: {why}", width=width)
    result.notes = [f"{why}: not run" for why in skipped_prompts]
    result.worst = max(max(p.score_gap, p.deficit) for p in result.prompts)
    result.margin = result.worst / LINE
    if all_kls and floor:
        result.kl_ratio = float(np.mean(all_kls)) / floor
    result.verdict = "fail" if result.reasons else "pass"
    return result


def skipped(adapter, width: int) -> Optional[BeamCheck]:
    """Why no beam check can run on this point, as a record part, or None when it can."""
    if width <= 1:
        return None
    if not adapter.supports_beam_search:
        return BeamCheck(
            skipped=f"{adapter.name} exposes no beam search output (Adapter.beam_search): the gate ran one greedy "
            f"sequence where {width} beams were timed",
            width=width,
        )
    return None


def path_notes(point, adapter) -> list[str]:
    """Where the timed configuration differs from the gated one (``correctness.path.notes``)."""
    notes = []
    if point.beam_width > 1:
        if adapter.supports_beam_search:
            notes.append(
                f"timed: beam search with {point.beam_width} beams; the step-wise checks follow one greedy sequence, "
                "and the beam check (correctness.beams) compares the engine's best beam with the reference's"
            )
        else:
            notes.append(
                f"timed: beam search with {point.beam_width} beams; gated: one greedy sequence only "
                f"({adapter.name} exposes no beam search output)"
            )
    if point.batch_size > 1:
        notes.append(
            f"timed: a batch of {point.batch_size} sequences; gated: one sequence at a time (batch invariance: "
            "correctness.text_path.batch)"
        )
    return notes
