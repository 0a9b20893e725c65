"""The flip rate to expect at the point's KL floor (``harness.correctness.expected_flips``), on synthetic logits:
reference logits perturbed by independent noise flip their top-1 about as often as the model predicts from each
position's KL and top-1 lead; the figure is recorded beside the measured rate and changes no verdict."""

from __future__ import annotations

import numpy as np
import pytest

from harness.correctness import class_check, expected_flips, ties
from harness.correctness.logprobs import coarse_kl, log_softmax, top_ids
from tests.correctness.test_token_classes import SETTINGS, TOKENIZER
from tests.correctness.test_token_classes import gate as classed_gate


def perturbed(rng, positions: int, vocab: int, spread: float, sigma: float):
    """((top-64 log-probabilities, KL) per position, flipped) of reference logits with ``spread`` and the same
    plus N(0, sigma) noise, over the positions whose reference top-1 leads by more than the tie margin."""
    found, flipped = [], []
    for _ in range(positions):
        ref = log_softmax(rng.normal(size=vocab) * spread)
        dev = log_softmax(ref + rng.normal(size=vocab) * sigma)
        ids = top_ids(ref, 64)
        lead = float(ref[ids[0]] - ref[ids[1]])
        if lead <= ties.TIE_MARGIN:
            continue
        found.append((ref[ids].tolist(), coarse_kl(ids, ref[ids], dev)))
        flipped.append(int(np.argmax(dev)) != int(ids[0]))
    return found, flipped


@pytest.mark.parametrize("spread, sigma", [(1.0, 0.1), (1.0, 0.2), (0.5, 0.1)])
def test_noise_of_a_given_kl_flips_the_top1_about_as_often_as_expected(spread, sigma):  # (unit)
    # flat random-weights-like logits (spread 0.5 to 1 nat over 512 ids), noise of 0.1 to 0.2 nats per logit
    positions, flipped = perturbed(np.random.default_rng(7), 3000, 512, spread, sigma)
    measured = float(np.mean(flipped))
    expected = expected_flips.expected_rate(positions)
    assert 0.01 < measured < 0.3  # a rate worth comparing
    assert expected == pytest.approx(measured, rel=0.15), (expected, measured)  # measured: within 5 %


def test_the_probability_falls_with_the_lead_and_rises_with_the_floor():  # (unit)
    def p(lead: float, floor: float, rest: float = 5.0) -> float:  # a top-1, a second ``lead`` under it, the rest far
        return expected_flips.flip_probability([-0.1, -0.1 - lead, -rest, -rest - 1], floor)

    assert p(0.0, 1e-3) == pytest.approx(0.5, abs=1e-3)
    assert p(1.0, 1e-3) < 1e-6 < p(0.2, 1e-2) < p(0.2, 1e-1) < 0.5
    assert p(0.5, 0.0) == 0.0 and expected_flips.expected_rate([]) is None
    assert p(0.2, 1e-2, rest=0.3) > p(0.2, 1e-2)  # a third candidate close behind flips it more often


def test_the_expected_rate_is_recorded_beside_the_measured_one_and_changes_no_verdict():  # (unit)
    # every digit position flips (16 of 32 decided: 50 %) where the floor expects few (a 0.3-nat lead at 1e-3)
    result, reference = classed_gate(digit_kl=1e-3, digit_top1=0, margin=0.3)
    found = class_check.apply(result, reference, TOKENIZER, SETTINGS)
    flips = found.classes.flips
    assert flips.rate == 0.5 and flips.verdict == "drift" and found.verdict == "pass"
    lps = reference.prompts[0].top_logprobs[0]
    assert flips.expected_rate == pytest.approx(expected_flips.flip_probability(lps, 1e-3), rel=1e-3)
    assert flips.expected_rate < 0.01 and flips.expected_method == expected_flips.METHOD
    assert "flips 50.0% of 32 (expected at the floor 0.4%)" in found.classes.summary()
