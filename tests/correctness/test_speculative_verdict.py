"""The speculative gate's arithmetic (``harness.correctness.speculative``): where speculative and plain greedy
first differ, in which verify step, whether it follows a rejection, ties within the engine's rounding named
rather than failed, and the speculative output against the HF reference."""

from __future__ import annotations

from harness.adapters.speculation import VerifySteps
from harness.correctness import speculative
from harness.correctness.stored_reference import PromptReference

# forwards: the prefill emits 1; then 3 candidates, 2 accepted (+1 own); then 3 candidates, 0 accepted (+1 own)
STEPS = VerifySteps(drafted=[0, 3, 3, 2], emitted=[1, 3, 1, 3])
PLAIN = [5, 6, 7, 8, 9, 10, 11, 12]


def no_logits(position, plain_token, speculative_token):
    return None


def reference(tokens, top):
    return PromptReference("plain", "p", [1, 2], tokens, top, [[0.0] * len(t) for t in top])


def test_equal_outputs_pass_and_count_what_was_drafted():
    result = speculative.compare(0, PLAIN, PLAIN, STEPS, no_logits, "fp32", None, 5)
    assert result.position is None and result.drafted == 8 and result.accepted == 2 + 0 + 2
    gate = speculative.conclude("prompt_lookup:ngram=2:tokens=3", [result], quantized=False, k=5)
    assert gate.verdict == "pass" and not gate.reasons


def test_a_difference_after_a_rejection_names_its_position_step_and_the_rejection():
    wrong = PLAIN[:5] + [99, 11, 12]  # position 5: the first token of forward 3, after forward 2 rejected all 3
    result = speculative.compare(1, wrong, PLAIN, STEPS, no_logits, "fp32", None, 5)
    assert (result.position, result.verify_step, result.speculative_token, result.plain_token) == (5, 3, 99, 10)
    assert result.after_rejection == "step 2 rejected 3 of 3 candidates, the forward before"
    gate = speculative.conclude("v", [result], quantized=False, k=5)
    assert gate.verdict == "fail"
    assert gate.reasons == [
        "prompt 1: speculative and plain greedy differ first at position 5 (speculative 99, plain 10), "
        "emitted by verify step 3, after a rejection (step 2 rejected 3 of 3 candidates, the forward before)"
    ]


def test_a_rejection_forwards_earlier_is_named_with_its_distance():
    # a KV cache not rolled back after a rejection shows up forwards later
    steps = VerifySteps(drafted=[0, 3, 0, 0, 0], emitted=[1, 1, 1, 1, 1])
    result = speculative.compare(0, [5, 6, 7, 99, 9], [5, 6, 7, 8, 9], steps, no_logits, "fp32", None, 5)
    assert result.verify_step == 3 and result.after_rejection == "step 1 rejected 3 of 3 candidates, 2 forwards before"


def test_a_difference_inside_an_accepted_run_is_not_after_a_rejection():
    wrong = PLAIN[:2] + [99] + PLAIN[3:]  # position 2: inside forward 1, whose predecessor drafted nothing
    result = speculative.compare(0, wrong, PLAIN, STEPS, no_logits, "fp32", None, 5)
    assert result.verify_step == 1 and result.after_rejection is None
    assert "not after a rejection" in speculative.conclude("v", [result], False, 5).reasons[0]


def test_a_tie_within_the_engines_rounding_is_named_not_failed():
    wrong = PLAIN[:3] + [99] + PLAIN[4:]
    close = lambda position, plain_token, speculative_token: (0.01, 10.0)  # noqa: E731
    far = lambda position, plain_token, speculative_token: (0.5, 10.0)  # noqa: E731
    tie = speculative.compare(0, wrong, PLAIN, STEPS, close, "bf16", None, 5)  # margin 4 * 2^-8 * 10 = 0.156
    gate = speculative.conclude("v", [tie], False, 5)
    assert tie.tie_gap == 0.01 and gate.verdict == "pass" and "a tie (logit gap 0.01)" in gate.ties[0]
    assert speculative.compare(0, wrong, PLAIN, STEPS, close, "fp32", None, 5).tie_gap is None  # fp32: no tie
    assert speculative.compare(0, wrong, PLAIN, STEPS, far, "bf16", None, 5).tie_gap is None


def test_a_shorter_output_differs_where_it_ends():
    result = speculative.compare(0, PLAIN[:6], PLAIN, STEPS, no_logits, "fp32", None, 5)
    assert result.position == 6 and result.speculative_token is None and result.plain_token == 11
    assert speculative.conclude("v", [result], False, 5).verdict == "fail"


def test_the_speculative_output_is_gated_against_the_hf_reference_too():
    top = [[t, 1, 2] for t in PLAIN]
    inside = reference(PLAIN[:4] + [77] + PLAIN[5:], [row if i != 4 else [77, 9] for i, row in enumerate(top)])
    outside = reference(PLAIN[:4] + [77] + PLAIN[5:], [row if i != 4 else [77, 1] for i, row in enumerate(top)])
    ok = speculative.compare(0, PLAIN, PLAIN, STEPS, no_logits, "fp32", inside, 5)
    bad = speculative.compare(0, PLAIN, PLAIN, STEPS, no_logits, "fp32", outside, 5)
    assert (ok.reference_position, ok.reference_ok) == (4, True)
    assert (bad.reference_position, bad.reference_ok) == (4, False)
    assert speculative.conclude("v", [bad], quantized=False, k=5).verdict == "fail"
    drifting = speculative.conclude("v", [bad], quantized=True, k=5)  # quantized weights may drift: a note
    assert drifting.verdict == "pass" and "leaves the HF reference at position 4" in drifting.notes[0]


def test_nothing_drafted_is_said():
    idle = VerifySteps(drafted=[0] * 8, emitted=[1] * 8)
    gate = speculative.conclude("v", [speculative.compare(0, PLAIN, PLAIN, idle, no_logits, "fp32", None, 5)], False, 5)
    assert gate.verdict == "pass" and "no candidate was drafted" in gate.notes[0]


def test_an_engine_that_counts_no_steps_is_said_to_rather_than_to_draft_nothing():
    result = speculative.compare(0, PLAIN, PLAIN, None, no_logits, "fp32", None, 5)
    gate = speculative.conclude("v", [result], False, 5, counted=False)
    assert gate.verdict == "pass" and gate.notes == [
        "the engine exposed no verify steps: equality holds whatever was drafted, steps are not named"
    ]
