"""Token classes of the reference's pieces and the class check's verdicts (issue #39), on hand-made gate results:
each rule of ``harness.correctness.token_classes``, a class judged against the floor at its own positions, the
flip rate left out of near ties, and how a class or flip finding changes the point's verdict."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from harness.correctness import class_check, ties, token_classes
from harness.correctness.stored_reference import PromptReference, Reference
from harness.records.correctness import Correctness, PromptResult
from harness.scenario.gate_section import GateSettings


@pytest.mark.parametrize(
    "piece, vocab, special, expected",
    [
        ("<eos>", "<eos>", True, "special"),
        (" 12", "Ġ12", False, "digits"),
        ("4th", "4th", False, "digits"),
        ("\n\n", "ĊĊ", False, "whitespace"),
        ('":', '":', False, "punctuation"),
        (" {", "Ġ{", False, "punctuation"),
        ("=", "=", False, "punctuation"),
        (" the", "Ġthe", False, "word-start"),
        ("the", "▁the", False, "word-start"),  # SentencePiece: a single piece decodes without its space
        ("ing", "ing", False, "word-continuation"),
        ("", "<0xE2>", False, "word-continuation"),  # a byte piece that decodes to nothing alone
    ],
)
def test_each_piece_goes_in_the_class_of_the_first_rule_it_matches(piece, vocab, special, expected):  # (unit)
    assert token_classes.of_piece(piece, vocab, special) == expected


class Pieces:
    """A tokenizer of fixed pieces: id -> (decoded text, vocabulary string); id 0 is special."""

    def __init__(self, pieces):
        self.pieces = pieces

    def decode(self, ids, skip_special_tokens=True):
        return "".join(self.pieces[i][0] for i in ids)

    def id_to_token(self, index):
        return self.pieces[index][1]

    def get_added_tokens_decoder(self):
        return {0: SimpleNamespace(special=True)}


TOKENIZER = Pieces({0: ("<eos>", "<eos>"), 1: ("7", "7"), 2: (" cat", "Ġcat"), 3: (",", ",")})
SETTINGS = GateSettings(k=5, mode="both", drift_factor=5, fail_factor=100, fail_on_drift=True, min_positions=8)
N = 16  # positions per prompt: each class below holds class_check.MIN_POSITIONS of them


def gate(digit_kl: float, word_kl: float = 1e-3, digit_top1: int = 1, margin: float = 1.0, verdict: str = "pass"):
    """A result and its reference: prompt 0 predicts a digit at every position, prompt 1 a word; the floor
    is 1e-3 everywhere; the reference's top-1 leads its second by ``margin`` nats."""
    prompts, results = [], []
    for index, (token, kl, top1) in enumerate(((1, digit_kl, digit_top1), (2, word_kl, 1))):
        lps = [[-0.1, -0.1 - margin]] * N
        prompts.append(PromptReference("plain", "x", [0], [token] * N, [[token, 3]] * N, lps))
        results.append(PromptResult(prompt=index, kind="plain", position_kl=[kl] * N, position_top1=[top1] * N))
    floor = {"kl_mean": 1e-3, "positions": [[1e-3] * N, [1e-3] * N]}
    reference = Reference(model={}, settings={"eos_ids": [0]}, versions={}, noise_floor=floor, prompts=prompts)
    return Correctness(verdict=verdict, k=5, mode="both", prompts=results), reference


def test_a_class_far_above_its_floor_fails_the_point_while_the_other_class_passes():  # (unit)
    result, reference = gate(digit_kl=0.2)  # 200x the floor on the digits, the words at it
    found = class_check.apply(result, reference, TOKENIZER, SETTINGS)
    classes = {c.name: c for c in found.classes.classes}
    assert set(classes) == {"digits", "word-start"}
    assert classes["digits"].verdict == "fail" and classes["digits"].kl_ratio == pytest.approx(200)
    assert classes["word-start"].verdict == "pass" and classes["word-start"].kl_ratio == pytest.approx(1)
    assert found.verdict == "fail" and found.failed_by == ["KL tier"]
    assert found.reasons == [
        "digits positions' mean KL 0.2 is 200.0x their noise floor 0.001 over 16 positions (fail above 100x)"
    ]
    assert found.classes.summary() == (
        "fail (worst digits 200.0x its floor (16), flips 0.0% of 32 (expected at the floor 0.0%))"
    )


def test_class_drift_fails_where_drift_fails_and_is_reported_elsewhere():  # (unit)
    result, reference = gate(digit_kl=0.02)  # 20x: drift
    unquantized = class_check.apply(result, reference, TOKENIZER, SETTINGS)
    assert unquantized.verdict == "fail" and unquantized.failed_by == ["drift rule"]
    assert unquantized.reasons[-1].endswith("; drift fails this point")
    quantized = class_check.apply(
        result, reference, TOKENIZER, GateSettings(5, "both", 5, 100, fail_on_drift=False, min_positions=8)
    )
    assert quantized.verdict == "drift" and quantized.failed_by == []


def test_a_class_with_fewer_positions_than_the_minimum_is_shown_not_judged():  # (unit)
    result, reference = gate(digit_kl=0.2)
    for part in (result.prompts[0], reference.prompts[0]):  # 15 digit positions
        if isinstance(part, PromptResult):
            part.position_kl, part.position_top1 = part.position_kl[:15], part.position_top1[:15]
        else:
            part.tokens = part.tokens[:15]
    found = class_check.apply(result, reference, TOKENIZER, SETTINGS)
    digits = next(c for c in found.classes.classes if c.name == "digits")
    assert digits.positions == 15 and digits.verdict is None and found.verdict == "pass"


def test_flips_count_only_where_the_reference_top1_leads_by_more_than_the_tie_margin_and_fail_no_point():  # (unit)
    decided, _ = gate(digit_kl=1e-3, digit_top1=0, margin=2 * ties.TIE_MARGIN)
    result, reference = decided, _
    found = class_check.apply(result, reference, TOKENIZER, SETTINGS)
    flips = found.classes.flips
    assert (flips.flips, flips.decided, flips.rate, flips.verdict) == (16, 32, 0.5, "drift")
    # Reported, not judged: at KL on its floor (a clean f16 point on flat logits flipped 5 %), the point passes.
    assert found.verdict == "pass" and not any("flip rate" in reason for reason in found.reasons)
    assert "flips 50.0% of 32" in found.classes.summary()
    tied, reference = gate(digit_kl=1e-3, digit_top1=0, margin=ties.TIE_MARGIN / 2)
    found = class_check.apply(tied, reference, TOKENIZER, SETTINGS)
    assert found.classes.flips.decided == 0 and found.classes.flips.rate is None  # near ties: nothing decided
    assert found.verdict == "pass"


def test_a_result_without_teacher_forced_kl_is_skipped_and_unchanged():  # (unit)
    result, reference = gate(digit_kl=0.2)
    top1_only = result.model_copy(
        update={"prompts": [p.model_copy(update={"position_kl": None}) for p in result.prompts]}
    )
    found = class_check.apply(top1_only, reference, TOKENIZER, SETTINGS)
    assert found.classes.skipped and found.verdict == "pass" and found.classes.summary() == "skipped"
