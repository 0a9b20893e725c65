"""The gate's per-prompt checks (``harness.correctness.stepwise``) to the detail a user reads: which ids reach
the engine, where a free run stops, and every field of the failure the gate prints (prompt, position, both
tokens, both top-k lists, why). Written against the survivors of ``python benchmarks/mutation.py stepwise``."""

from __future__ import annotations

import numpy as np
import pytest

from harness.correctness import stepwise
from harness.correctness.logprobs import log_softmax
from harness.correctness.stored_reference import PromptReference
from harness.records.correctness import Divergence
from tests.correctness.test_gate import VOCAB
from tests.correctness.test_gate import prompt_reference as scripted_reference

PROMPT = [11, 12]


def divergence(prompt, position, reference_token, device_token, reference_topk, device_topk, ok, why) -> Divergence:
    """The record's ``Divergence``, its fields in the order the gate prints them."""
    return Divergence(
        prompt=prompt,
        position=position,
        reference_token=reference_token,
        device_token=device_token,
        reference_topk=reference_topk,
        device_topk=device_topk,
        ok=ok,
        why=why,
    )


def logits(order: list[int]) -> np.ndarray:
    """Logits ranking ``order`` first to last (unequal gaps, so log-probabilities differ); the rest lowest."""
    values = np.full(VOCAB, -10.0, dtype=np.float32)
    for rank, token in enumerate(order):
        values[token] = 5.0 - 1.3 * rank
    return values


class Recording:
    """A device whose logits at each position are scripted, and which records the ids it is given."""

    def __init__(self, table):
        self.table, self.position, self.prefilled, self.decoded = table, 0, [], []

    def prefill(self, tokens):
        self.prefilled.append(list(tokens))
        self.position = 0
        return self.table[0]

    def decode(self, token):
        self.decoded.append(token)
        self.position += 1
        return self.table[self.position]


def prompt_reference(table) -> PromptReference:
    return scripted_reference(table, "long", PROMPT)


REF = [logits([3, 4, 5, 6]), logits([4, 3, 5, 6]), logits([5, 3, 4, 6])]  # greedy 3, 4, 5


def pairs(row: np.ndarray, ids: list[int]) -> list[tuple[int, float]]:
    lp = log_softmax(row)
    return [(i, round(float(lp[i]), 4)) for i in ids]


def test_a_free_run_feeds_the_prompt_then_its_own_tokens_and_decodes_no_step_past_the_last():
    device = Recording(REF)
    assert stepwise.free_running(device, 0, prompt_reference(REF), 2, [7]) == (True, None, 3, None)
    assert device.prefilled == [PROMPT] and device.decoded == [3, 4]


def test_a_free_run_checks_its_last_position():
    device = Recording([REF[0], REF[1], logits([6, 5, 4, 3])])
    ok, where, matched, detail = stepwise.free_running(device, 0, prompt_reference(REF), 2, [7])
    assert (ok, where, matched) == (False, 2, 2) and detail.why == "device token 6 not in reference top-2"


def test_a_harmless_free_run_divergence_is_recorded_in_full_with_no_reason():
    device_row = logits([4, 3, 5, 6])  # the reference's top two, swapped
    ok, where, matched, detail = stepwise.free_running(Recording([device_row]), 4, prompt_reference(REF), 2, [7])
    assert (ok, where, matched) == (True, 0, 0)
    assert detail == divergence(4, 0, 3, 4, pairs(REF[0], [3, 4]), pairs(device_row, [4, 3]), True, "")


def test_a_free_run_names_the_reference_token_missing_from_the_device_top_k():
    device_row = logits([4, 6, 3, 5])  # device token 4 is in the reference's top-2; reference token 3 is not in ours
    ok, _, _, detail = stepwise.free_running(Recording([device_row]), 1, prompt_reference(REF), 2, [7])
    assert not ok
    assert detail == divergence(
        1, 0, 3, 4, pairs(REF[0], [3, 4]), pairs(device_row, [4, 6]), False, "reference token 3 not in device top-2"
    )


def test_teacher_forcing_feeds_the_prompt_and_the_reference_tokens():
    device = Recording(REF)
    result = stepwise.teacher_forced(device, 2, prompt_reference(REF), 2)
    assert device.prefilled == [PROMPT] and device.decoded == [3, 4]
    assert (result.prompt, result.kind, result.forced_ok, result.top1_match_rate) == (2, "long", True, 1.0)


def test_teacher_forcing_reports_the_lowest_cosine_of_the_reference_top_m_log_probabilities():
    device_table = [REF[0], logits([4, 5, 3, 6]), REF[2]]
    result = stepwise.teacher_forced(Recording(device_table), 0, prompt_reference(REF), 3)
    ref = prompt_reference(REF)
    expected = []
    for position, row in enumerate(device_table):
        a = np.asarray(ref.top_logprobs[position])
        b = log_softmax(row)[np.asarray(ref.top_ids[position])].astype(np.float64)
        expected.append(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
    assert result.cosine_min == pytest.approx(min(expected), rel=1e-12) and result.cosine_min < 1


def test_a_teacher_forced_miss_is_judged_against_the_top_k_not_the_stored_top_m():
    device_row = logits([5, 4, 3, 6])  # its top-1 is the reference's third choice: in the top-M, not the top-2
    result = stepwise.teacher_forced(Recording([device_row, REF[1], REF[2]]), 3, prompt_reference(REF), 2)
    assert result.forced_violations == 1 and result.forced_first_violation == 0
    (failure,) = result.failures
    why = "teacher-forced: device token 5 not in reference top-2"
    assert failure == divergence(3, 0, 3, 5, pairs(REF[0], [3, 4]), pairs(device_row, [5, 4]), False, why)


def test_every_teacher_forced_miss_is_counted_and_only_the_first_is_kept_with_its_details():
    device_row = logits([5, 4, 3, 6])
    result = stepwise.teacher_forced(Recording([device_row, device_row, REF[2]]), 3, prompt_reference(REF), 2)
    assert result.forced_violations == 2 and result.forced_first_violation == 0 and not result.forced_ok
    assert [failure.position for failure in result.failures] == [0]


def test_an_engine_with_only_its_chosen_token_gets_the_ids_and_a_full_failure_record():
    class ChosenOnly:
        def teacher_forced_top1(self, prompt_ids, tokens):
            self.given = (list(prompt_ids), list(tokens))
            return [3, 6, 5]

    engine = ChosenOnly()
    result = stepwise.forced_top1(engine, 5, prompt_reference(REF), 2)
    assert engine.given == (PROMPT, [3, 4, 5])
    assert (result.prompt, result.kind, result.forced_ok, result.position_top1) == (5, "long", False, [1, 0, 1])
    why = "teacher-forced (top-1 only): device token 6 not in reference top-2"
    assert result.failures == [divergence(5, 1, 4, 6, pairs(REF[1], [4, 3]), [], False, why)]
