"""Speculative decoding's figures, pure functions of the timed rounds' verify steps
(``harness.adapters.speculation.VerifySteps``) and of the rounds timed side by side without speculation."""

from __future__ import annotations

import statistics
from typing import Optional

from harness.adapters.speculation import VerifySteps


def summarize_steps(rounds: list[VerifySteps]) -> dict[str, Optional[float]]:
    """Over every timed round: the share of drafted candidates the target accepted, the candidates accepted
    per verify step that had any, tokens per target forward (the prefill's included) and the draft's time
    per generated token where the engine let it be seen."""
    drafted = sum(sum(r.drafted) for r in rounds)
    accepted = [a for r in rounds for d, a in zip(r.drafted, r.accepted) if d > 0]
    forwards = sum(len(r.emitted) for r in rounds)
    tokens = sum(sum(r.emitted) for r in rounds)
    draft_ns = sum(r.draft_ns for r in rounds)
    return {
        "spec_acceptance_rate": sum(accepted) / drafted if drafted else None,
        "spec_accepted_per_step": statistics.fmean(accepted) if accepted else None,
        "spec_tokens_per_forward": tokens / forwards if forwards else None,
        "spec_verify_steps": statistics.median(len(r.emitted) for r in rounds) if rounds else None,
        "spec_draft_ms_per_token": draft_ns / 1e6 / tokens if tokens and draft_ns else None,
    }


def speedups(speculative: dict, plain: dict) -> dict[str, Optional[float]]:
    """The plain path's headline figures beside the speculative point's, and the speed-ups (plain / speculative
    time: above 1 is faster), from the two paths' ``harness.measure.rounds.summarize``."""

    def ratio(name: str) -> Optional[float]:
        ours, theirs = speculative.get(name), plain.get(name)
        return theirs / ours if ours and theirs else None

    return {
        "spec_plain_ttft_ms": plain.get("ttft_ms"),
        "spec_plain_tpot_ms": plain.get("tpot_ms"),
        "spec_plain_tokens_per_s": plain.get("throughput_tokens_per_s"),
        "spec_speedup": ratio("e2e_ms"),
        "spec_decode_speedup": ratio("tpot_ms"),
    }
