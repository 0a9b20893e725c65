"""The tie margin of every top-k check (``harness.correctness.ties``): a token that misses a side's top-k by at most
0.1 nats below its k-th candidate is a near tie, counted and not failed, in the free-running, teacher-forced and
top-1-only checks of short prompts, the stopping check's early stop and the speculative output; a wider miss, or a
token the reference never stored, fails. The prefill positions' check takes it only where the position's KL is under
the prefill phase's fail line: without that condition it let the project's own top-1 swap fault (tests/faults.py
``PrefillTailTopSwap``) through on one prompt."""

from __future__ import annotations

import numpy as np
import pytest

from harness.correctness import gate, stopping, ties
from harness.correctness.logprobs import log_softmax, top_ids
from harness.correctness.stored_reference import PromptReference, Reference
from harness.scenario.gate_section import Gate
from tests.fakes import Scripted

VOCAB = 10
K = 3


def row(order: list[int], gaps: dict[int, float] | None = None) -> np.ndarray:
    """Logits ranking ``order`` first to last, 1 nat apart unless ``gaps`` sets the gap below a rank."""
    values = np.full(VOCAB, -20.0, dtype=np.float32)
    value = 5.0
    for rank, token in enumerate(order):
        values[token] = value
        value -= (gaps or {}).get(rank, 1.0)
    return values


def reference(rows: list[np.ndarray], top_m: int = VOCAB, prefill: bool = False, floor: float = 1e-3) -> Reference:
    """A short plain prompt: its greedy tokens and top-M rows of ``rows``; with ``prefill``, one prefill position
    (``rows[0]``), else none (the prefill check does not run)."""
    tokens, ids, lps = [], [], []
    for logits in rows:
        lp = log_softmax(logits)
        best = top_ids(lp, top_m)
        tokens.append(int(best[0]))
        ids.append(best.tolist())
        lps.append(lp[best].tolist())
    prompt = PromptReference(
        "plain", "x", [0], tokens, ids, lps, [ids[0]] if prefill else [], [lps[0]] if prefill else []
    )
    return Reference(
        model={},
        settings={"top_m": top_m, "eos_ids": [9], "tokens": len(rows)},
        versions={},
        noise_floor={"kl_mean": floor},
        prompts=[prompt],
    )


class Device(Scripted):
    """Logits ``table[position]``; chosen tokens too, for the top-1 gate."""

    def teacher_forced_top1(self, prompt_ids, tokens):
        return [int(np.argmax(r)) for r in self.table]


def settings(mode="both"):
    return Gate(k=K, mode=mode, min_positions=1).settings(quantized=True)


def near() -> np.ndarray:
    """A device whose top-1 is the reference's 4th token (4); the reference's top-1 (1) is its second."""
    return row([4, 1, 2, 3, 5, 6])


def ref_with_gap(gap: float, prefill: bool = False, floor: float = 1e-3) -> Reference:
    """The reference at one position: 1, 2, 3 and then 4, ``gap`` nats below 3."""
    return reference([row([1, 2, 3, 4, 5, 6], gaps={2: gap})], prefill=prefill, floor=floor)


@pytest.mark.parametrize("mode", ["free", "forced", "both"])
def test_a_top_k_miss_within_the_margin_is_a_counted_near_tie_not_a_failure(mode):
    # the device's top-1 (4) is the reference's 4th, 0.06 nats under its 3rd; the reference's top-1 (1) is
    # second on the device, inside its top-3
    result = gate.evaluate(Device([near()]), ref_with_gap(0.06), settings(mode))
    assert "top-3" not in " ".join(result.reasons), result.reasons
    assert result.tie_margin == ties.TIE_MARGIN == 0.1
    (prompt,) = result.prompts
    checks = {"free": 1, "forced": 1, "both": 2}[mode]  # free running, teacher-forced, both
    assert prompt.topk_ties == checks and prompt.topk_tie_gap == pytest.approx(0.06, abs=1e-4)
    assert any("near ties on prompt(s) [0]" in note and "0.1-nat tie margin" in note for note in result.notes)


@pytest.mark.parametrize("mode", ["free", "forced"])
def test_a_miss_wider_than_the_margin_still_fails(mode):
    result = gate.evaluate(Device([near()]), ref_with_gap(0.3), settings(mode))
    assert result.verdict == "fail" and result.prompts[0].topk_ties == 0
    assert any("top-3 check failed" in reason for reason in result.reasons), result.reasons
    (failure, *_) = result.prompts[0].failures
    assert failure.why.endswith("device token 4 not in reference top-3") and failure.tie_gap is None


def test_the_reference_top1_within_the_margin_of_the_devices_kth_is_a_near_tie_and_wider_fails():
    reference_rows = ref_with_gap(1.0)  # the reference: 1, 2, 3, 4 a nat apart
    for gap, ties_expected in ((0.05, 1), (0.5, 0)):
        device = row([2, 3, 4, 1, 5, 6], gaps={2: gap})  # the reference's top-1 is the device's 4th
        result = gate.evaluate(Device([device]), reference_rows, settings("forced"))
        (prompt,) = result.prompts
        assert (prompt.forced_ok, prompt.topk_ties) == (bool(ties_expected), ties_expected)
        if not ties_expected:
            assert prompt.failures[0].why.endswith("reference token 1 not in device top-3")


def test_a_token_the_reference_never_stored_is_never_a_near_tie():
    # top-M 3: the reference stored 1, 2, 3 only; the device's top-1 4 is 0.01 nats under 3 but unknown to it
    stored = reference([row([1, 2, 3, 4, 5, 6], gaps={2: 0.01})], top_m=K)
    result = gate.evaluate(Device([row([4, 1, 2, 3])]), stored, settings("forced"))
    assert result.verdict == "fail" and result.prompts[0].topk_ties == 0


def test_the_top1_only_gate_forgives_a_chosen_token_within_the_margin_of_the_reference_kth():
    tied = gate.evaluate_top1(Device([near()]), ref_with_gap(0.06), settings())
    assert tied.verdict == "pass" and tied.prompts[0].topk_ties == 1 and tied.tie_margin == 0.1
    wide = gate.evaluate_top1(Device([near()]), ref_with_gap(0.3), settings())
    assert wide.verdict == "fail" and wide.prompts[0].forced_first_violation == 0


def test_the_gap_is_measured_on_the_side_whose_top_k_was_missed():
    ids, lps = [1, 2, 3, 4], [-1.0, -1.5, -2.0, -2.07]
    assert ties.reference_gap(ids, lps, 2, 3) == 0.0  # inside
    assert ties.reference_gap(ids, lps, 4, 3) == pytest.approx(0.07)
    assert ties.reference_gap(ids, lps, 8, 3) is None  # not stored: no known gap
    device = log_softmax(row([2, 3, 5, 1], gaps={2: 0.2}))
    top = top_ids(device, 3).tolist()
    assert ties.device_gap(device, top, 1, 3) == pytest.approx(0.2, abs=1e-5)
    assert ties.topk_miss(ids, lps, device, top, 3) == ("reference token 1 not in device top-3", None)
    assert ties.topk_miss(ids, lps, device, top, 3, margin=0.25) == ("", pytest.approx(0.2, abs=1e-5))


@pytest.mark.parametrize("gap, passes", [(0.05, True), (0.5, False)])
def test_an_early_stop_outside_the_top_k_passes_only_within_the_margin(gap, passes):
    # top-1 here: the stop token 2 is the reference's 2nd at position 1, ``gap`` nats under its top-1
    tokens = [5, 6, 7, 7]
    reference = PromptReference("chat", "t", [1], tokens, [[5, 9], [6, 2], [7, 9], [7, 9]], [[0.0, -gap]] * 4)
    found = stopping.judge([5, 2], reference, [2], 4, 1)
    assert (found.why is None) == passes, found


def test_harness_verify_states_the_margin_and_the_near_ties_on_the_points_line():
    from harness.cli.output import verdict_line

    line = verdict_line("s::p", gate.evaluate(Device([near()]), ref_with_gap(0.06), settings("both")))
    assert "top-3 tie margin 0.1 nats (not at prefill positions)" in line  # none checked: no prefill positions
    assert "top-3 near ties on prompt(s) [0]: 2 miss(es) within the 0.1-nat tie margin" in line


@pytest.mark.parametrize("gap, ok", [(0.05, True), (0.5, False)])
def test_the_speculative_output_leaves_the_reference_top_k_only_beyond_the_margin(gap, ok):
    from harness.correctness import speculative
    from tests.correctness.test_speculative_verdict import PLAIN, STEPS, no_logits

    # at position 4 the reference's top-1 is 77 and the speculative output's token its 2nd, ``gap`` nats under
    rows = [[t, 1] for t in PLAIN[:4]] + [[77, PLAIN[4]]] + [[t, 1] for t in PLAIN[5:]]
    ref = PromptReference("plain", "p", [1, 2], PLAIN[:4] + [77] + PLAIN[5:], rows, [[0.0, -gap]] * len(rows))
    found = speculative.compare(0, PLAIN, PLAIN, STEPS, no_logits, "fp32", ref, 1)
    assert (found.reference_position, found.reference_ok) == (4, ok)


FLAT = row([1, 2, 3, 4, 5, 6], gaps={0: 0.03, 1: 0.03, 2: 0.05, 3: 0.03, 4: 0.06})  # 1..5 within 0.14; 6 0.06 under 5
NUDGED = FLAT.copy()
NUDGED[6] = 5.1  # 6 lifted 0.3 nats, to the top


@pytest.mark.parametrize("quantized, passes", [(True, True), (False, False)])
def test_a_prefill_near_tie_is_forgiven_only_where_the_positions_kl_is_under_its_fail_line(quantized, passes):
    # the device's top-1 (6) is the reference's 6th, 0.06 nats under its 5th: a near tie at a KL of 0.006 nats,
    # under the quantized point's fail line (100x the 1e-3 floor) and over the unquantized one's (5x, drift fails)
    ref = reference([FLAT], prefill=True)
    result = gate.evaluate(Device([NUDGED]), ref, Gate(k=5, mode="forced", min_positions=1).settings(quantized))
    (prompt,) = result.prompts
    line = 0.1 if quantized else 0.005
    assert 0.005 < prompt.prefill_kl[0] < 0.1 and result.prefill_tie_line == pytest.approx(line)
    assert f"topk-prefill where the position's KL <= {line:g} nats" in " ".join(result.tie_margin_checks)
    assert prompt.prefill_ok is passes and prompt.forced_ok  # teacher-forced position 0: a near tie, any KL
    assert prompt.topk_ties == (2 if passes else 1) and prompt.topk_tie_gap == pytest.approx(0.06, abs=1e-4)
    assert ("prefill top-5 check failed on prompt(s) [0]" in result.reasons) is not passes


def test_a_prefill_near_tie_far_above_the_fail_line_fails_and_says_why():
    """The top-1 swap's case: inside the margin by its gap, but a position KL of 0.7 nats, far over the line."""
    result = gate.evaluate(Device([near()]), ref_with_gap(0.06, prefill=True), settings("forced"))
    (prompt,) = result.prompts
    assert (prompt.forced_ok, prompt.prefill_ok, prompt.topk_ties) == (True, False, 1)  # forgiven teacher-forced
    assert "prefill top-3 check failed on prompt(s) [0]" in result.reasons
    (failure,) = [f for f in prompt.failures if "prefill of the first" in f.why]
    assert "device token 4 not in reference top-3 (0.06 nats, within the 0.1-nat tie margin, but the position's KL" in (
        failure.why
    )
    assert "is above the prefill fail line 0.1: not a near tie)" in failure.why
    # a floor ten times higher puts the line (1 nat) over this KL: the same miss is then a near tie
    wider = gate.evaluate(Device([near()]), ref_with_gap(0.06, prefill=True, floor=1e-2), settings("forced"))
    assert wider.prompts[0].prefill_ok and wider.verdict != "fail", wider.reasons


def test_harness_verify_states_the_prefill_condition_of_the_margin():
    from harness.cli.output import verdict_line

    result = gate.evaluate(Device([NUDGED]), reference([FLAT], prefill=True), settings("forced"))
    assert result.tie_margin_checks[: len(ties.CHECKS)] == list(ties.CHECKS)
    assert "top-3 tie margin 0.1 nats (at prefill positions where the position's KL <= 0.1 nats)" in verdict_line(
        "s::p", result
    )
