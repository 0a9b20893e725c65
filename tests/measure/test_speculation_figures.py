"""Speculative figures from verify steps and the plain rounds timed beside them (``harness.measure.speculation``)."""

from __future__ import annotations

import pytest

from harness.adapters.speculation import VerifySteps
from harness.measure import speculation


def test_acceptance_counts_candidates_and_forwards():
    rounds = [
        VerifySteps(drafted=[0, 4, 4, 0], emitted=[1, 5, 2, 1], draft_ns=2_000_000),  # 4 + 1 accepted of 8
        VerifySteps(drafted=[0, 4], emitted=[1, 3], draft_ns=2_000_000),  # 2 of 4
    ]
    figures = speculation.summarize_steps(rounds)
    assert figures["spec_acceptance_rate"] == pytest.approx(7 / 12)
    assert figures["spec_accepted_per_step"] == pytest.approx(7 / 3)  # steps that had candidates only
    assert figures["spec_tokens_per_forward"] == pytest.approx(13 / 6)
    assert figures["spec_verify_steps"] == 3
    assert figures["spec_draft_ms_per_token"] == pytest.approx(4 / 13)


def test_nothing_drafted_has_no_acceptance_rather_than_zero():
    figures = speculation.summarize_steps([VerifySteps(drafted=[0, 0], emitted=[1, 1])])
    assert figures["spec_acceptance_rate"] is None and figures["spec_accepted_per_step"] is None
    assert figures["spec_draft_ms_per_token"] is None


def test_speedups_are_plain_over_speculative():
    out = speculation.speedups({"e2e_ms": 100.0, "tpot_ms": 2.0}, {"e2e_ms": 150.0, "tpot_ms": 5.0, "ttft_ms": 9.0})
    assert out["spec_speedup"] == pytest.approx(1.5) and out["spec_decode_speedup"] == pytest.approx(2.5)
    assert out["spec_plain_ttft_ms"] == 9.0 and out["spec_plain_tokens_per_s"] is None


def test_a_step_past_the_budget_is_cut_to_it():
    steps = VerifySteps(drafted=[0, 3, 3], emitted=[1, 4, 4])
    steps.trim(7)
    assert (steps.drafted, steps.emitted, steps.accepted) == ([0, 3, 3], [1, 4, 2], [0, 3, 1])
    steps.trim(3)
    assert (steps.drafted, steps.emitted) == ([0, 3], [1, 2])
