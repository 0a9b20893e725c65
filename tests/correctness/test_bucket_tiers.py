"""The gate's KL tiers by position bucket (harness.correctness.positions) and the same-weights combination
with the dequantized check, at their edges, through the gate's conclusion (``gate._conclude``, what
``gate.run`` returns) on hand-built per-position KLs. Each assertion is here because a mutant survived
without it (``python benchmarks/mutation.py correctness``, docs/benchmarks.md)."""

from __future__ import annotations

import pytest

from harness.correctness import gate, kl, positions
from harness.correctness import same_weights as sw
from harness.correctness.outcome import format_failures
from harness.correctness.stored_reference import PromptReference, Reference
from harness.records.correctness import Correctness, PromptResult
from harness.scenario.gate_section import Gate


def _long_reference(floor: dict, head: int = 16, tokens: int = 280) -> Reference:
    prompt = PromptReference("long", "text", list(range(head)), [0] * tokens, [[0]] * tokens, [[0.0]] * tokens)
    return Reference(model={}, settings={"top_m": 64, "eos_ids": []}, versions={}, noise_floor=floor, prompts=[prompt])


def test_bucket_edges_double_past_512():
    assert positions.bucket_of(1023) == (512, 1023) and positions.bucket_of(1024) == (1024, 2047)
    assert positions.bucket_of(2047) == (1024, 2047) and positions.bucket_of(2048) == (2048, 4095)


def test_the_dequantized_check_fails_a_point_its_twin_passes():
    assert sw.combine("pass", "pass", "fail") == (
        "fail",
        "the dequantized artefact differs from the HF checkpoint beyond its quantization: the weights were "
        "written wrong (a converter bug), which the same-weights twin shares",
    )
    assert sw.combine("drift", "pass", "pass") == ("drift", None)
    assert sw.combine("drift", None, None) == ("drift", None)


def _late_fault(late: float, fail_on_drift: bool = True):
    """A long prompt (16 tokens of head, 280 teacher-forced positions: 16-295) whose KL sits at the floor in
    positions 0-63, at 6x in 64-255 and at ``late`` in 256-511, against a reference with per-bucket floors."""
    floor = {"kl_mean": 1e-3, "buckets": positions.floors([[1e-3] * 280], [16])}
    kls = [1e-3] * 48 + [6e-3] * 192 + [late] * 40
    reference = _long_reference(floor)
    result = gate._conclude(
        [PromptResult(prompt=0, kind="long", forced_ok=True, kl_mean=sum(kls) / len(kls), position_kl=kls)],
        reference,
        Gate(fail_on_drift=fail_on_drift).settings(quantized=False),
        "forced",
    )
    return result, format_failures(result, reference, tokenizer=None)


def test_a_bucket_past_the_fail_line_fails_the_point_and_the_table_shows_where_the_kl_rises():
    result, table = _late_fault(0.2)
    assert (result.verdict, result.reasons) == (
        "fail",
        ["positions 256-511 mean KL 0.2 is 200x its noise floor 0.001 (fail above 100x)"],
    )
    assert table == (
        "gate FAIL: positions 256-511 mean KL 0.2 is 200x its noise floor 0.001 (fail above 100x)\n"
        "  KL by position (x floor, positions): 0-63: 1.0x (48), 64-255: 6.0x (192), 256-511: 200.0x (40); "
        "rises at positions 64-255"
    )
    assert [(b.start, b.end, b.positions, b.verdict, b.floor_source) for b in result.buckets] == [
        (0, 63, 48, "pass", "bucket"),
        (64, 255, 192, "drift", "bucket"),
        (256, 511, 40, "fail", "bucket"),
    ]


def test_a_drifting_bucket_is_reported_where_the_mean_passes():
    result, table = _late_fault(1e-3, fail_on_drift=False)
    assert result.kl_ratio < 5  # the mean over every position is under the drift line
    assert (result.verdict, result.reasons) == (
        "drift",
        ["positions 64-255 mean KL 0.006 is 6.0x its noise floor 0.001 (drift above 5x)"],
    )
    assert table.endswith("256-511: 1.0x (40); rises at positions 64-255")


def _short(noise_floor: dict, kls: list[float], **config) -> Correctness:
    prompt = PromptReference("plain", "p", [1, 2], [3], [[3]], [[0.0]])
    reference = Reference(
        model={}, settings={"top_m": 8, "eos_ids": []}, versions={}, noise_floor=noise_floor, prompts=[prompt]
    )
    found = PromptResult(prompt=0, kind="plain", forced_ok=True, kl_mean=sum(kls) / len(kls), position_kl=kls)
    return gate._conclude([found], reference, Gate(**config).settings(quantized=False), "forced")


def test_the_paired_test_offsets_both_sides_by_the_references_own_minimum_floor():
    plain = _short({"kl_mean": 1e-5}, [2e-4] * 8).test  # (2e-4 + 1e-5) / (1e-5 + 1e-5)
    assert (plain.rise, plain.rise_low, plain.margin, plain.line) == (
        pytest.approx(10.5),
        pytest.approx(10.5),
        pytest.approx(2.1),  # rise_low over the failing line, 5x
        5.0,
    )
    same_weights = _short({"kl_mean": 1e-5, "minimum": 1e-4}, [2e-4] * 8).test  # 3e-4 / 1.1e-4
    assert same_weights.rise == pytest.approx(3 / 1.1) and same_weights.margin == pytest.approx(3 / 1.1 / 5)


def test_exactly_min_positions_are_judged_and_one_fewer_are_not():
    judged = _short({"kl_mean": 1e-5}, [2e-4] * 8)
    assert judged.test.positions == 8 and judged.notes == [] and judged.verdict == "fail"
    few = _short({"kl_mean": 1e-5}, [2e-4] * 7)
    assert few.test is None and few.verdict == "not judged" and few.notes == []
    assert few.reasons == ["KL tier not judged: 7 teacher-forced positions, fewer than gate.min_positions=8"]


def test_the_per_position_floor_is_stored_to_four_significant_digits():
    assert kl.position_floors([[0.123456, 1.0], [2.0000049e-5]]) == [[0.1235, 1.0], [2e-05]]


def test_a_decode_phase_drift_is_judged_after_a_pooled_prefill_phase():
    floors = {"kl_mean": 1e-3, "phases": {"prefill": {"kl_mean": 1e-2}, "decode": {"kl_mean": 1e-4}}}
    result = _short(floors, [1e-3] * 9, fail_on_drift=False)  # 1 prefill position (pooled), 8 decode ones
    assert result.kl_ratio == pytest.approx(1.0) and result.phases.prefill.pooled
    assert (result.verdict, result.reasons) == (
        "drift",
        [
            "decode-phase mean KL is 10.0x its noise floor over 8 positions, drift above 5x "
            "(paired by position: 9.2x, >= 9.2x at 99% confidence)"
        ],
    )


def test_the_paired_test_uses_the_stored_per_position_floor_only_where_it_covers_every_position():
    device = [1e-3] * 9
    stored = [2e-4] * 9  # the floor's KL at each position: the device is (1e-3 + 1e-5) / (2e-4 + 1e-5) above it
    for floor in ([stored], [stored + [5.0]]):  # exactly as long, or longer (cut to the device's positions)
        found = _short({"kl_mean": 1e-3, "positions": floor}, device).test
        assert (found.floor, found.rise) == ("positions", pytest.approx(1.01e-3 / 2.1e-4))
    for floor in ([stored[:8]], [stored, stored]):  # one position short, or another prompt count: the mean
        found = _short({"kl_mean": 1e-3, "positions": floor}, device).test
        assert (found.floor, found.rise) == ("mean", pytest.approx(1.0))


def test_a_long_prompts_top_k_miss_is_a_note_and_a_short_prompts_miss_a_failure():
    reference = _long_reference({"kl_mean": 1e-3})
    long_ones = [
        PromptResult(prompt=0, kind="long", forced_ok=False),
        PromptResult(prompt=1, kind="long-prefill", forced_ok=True),
        PromptResult(prompt=2, kind="long-prefill", forced_ok=False),
    ]
    reported = gate._conclude(long_ones, reference, Gate(k=3).settings(quantized=False), "forced")
    assert (reported.verdict, reported.reasons) == ("pass", [])
    assert reported.notes == ["teacher-forced top-3 missed on long prompt(s) [0, 2]: reported; KL judges them"]
    short = gate._conclude(
        [*long_ones, PromptResult(prompt=3, kind="plain", forced_ok=False)],
        reference,
        Gate(k=3).settings(quantized=False),
        "forced",
    )
    assert (short.verdict, short.reasons) == ("fail", ["teacher-forced top-3 check failed on prompt(s) [3]"])


def test_a_long_prompts_prefill_top_k_miss_is_a_note_and_a_short_prompts_a_failure():
    reference = _long_reference({"kl_mean": 1e-3})
    settings = Gate(k=3).settings(quantized=False)
    long_one = PromptResult(prompt=0, kind="long-prefill", forced_ok=True, prefill_ok=False)
    reported = gate._conclude([long_one], reference, settings, "forced")
    assert (reported.verdict, reported.reasons) == ("pass", []) and "long prompt(s) [0]" in reported.notes[0]
    short = PromptResult(prompt=1, kind="plain", forced_ok=True, prefill_ok=False)
    failed = gate._conclude([long_one, short], reference, settings, "forced")
    assert (failed.verdict, failed.reasons) == ("fail", ["prefill top-3 check failed on prompt(s) [1]"])


def test_a_bucket_of_exactly_min_positions_is_judged_on_the_overall_floor_where_none_is_stored():
    floor = {"kl_mean": 1e-3, "buckets": [{"start": 0, "end": 63, "kl_mean": 2e-3, "positions": 48}]}
    kls = [2e-3] * 48 + [8e-3] * positions.MIN_POSITIONS  # positions 16-63, then 64-79
    reference = _long_reference(floor, tokens=len(kls))
    result = gate._conclude(
        [PromptResult(prompt=0, kind="long", forced_ok=True, kl_mean=sum(kls) / len(kls), position_kl=kls)],
        reference,
        Gate(fail_on_drift=False).settings(quantized=False),
        "forced",
    )
    assert [(b.noise_floor, b.kl_ratio, b.verdict, b.floor_source) for b in result.buckets] == [
        (2e-3, pytest.approx(1.0), "pass", "bucket"),
        (1e-3, pytest.approx(8.0), "drift", "overall"),
    ]
    assert result.reasons == ["positions 64-255 mean KL 0.008 is 8.0x its noise floor 0.001 (drift above 5x)"]


def test_the_table_names_no_rise_where_every_bucket_passes():
    floor = {"kl_mean": 1e-3, "buckets": [{"start": 0, "end": 63, "kl_mean": 2e-3, "positions": 48}]}
    kls = [2e-3] * 48 + [1e-3] * 16
    reference = _long_reference(floor, tokens=len(kls))
    prompt = PromptResult(
        prompt=0, kind="long", free_ok=False, forced_ok=True, kl_mean=sum(kls) / len(kls), position_kl=kls
    )
    result = gate._conclude([prompt], reference, Gate().settings(quantized=False), "both")
    assert positions.rises_at(result.buckets) is None
    assert format_failures(result, reference, tokenizer=None) == (
        "gate FAIL: free-running top-5 check failed on prompt(s) [0]\n"
        "  KL by position (x floor, positions): 0-63: 1.0x (48), 64-255: 1.0x (16)"
    )


def test_the_stored_bucket_floors_count_their_positions():
    assert positions.floors([[1.0, 3.0], [5.0]], [62, 100]) == [
        {"start": 0, "end": 63, "kl_mean": 2.0, "positions": 2},
        {"start": 64, "end": 255, "kl_mean": 5.0, "positions": 1},
    ]


def test_a_failing_drift_keeps_every_drift_reason_and_says_once_that_drift_fails_the_point():
    floor = {"kl_mean": 1e-3, "buckets": positions.floors([[1e-3] * 280], [16])}
    reference = _long_reference(floor)
    drifting = [PromptResult(prompt=0, kind="long", forced_ok=True, kl_mean=6e-3, position_kl=[6e-3] * 280)]
    reported = gate._conclude(drifting, reference, Gate(fail_on_drift=False).settings(quantized=False), "forced")
    failed = gate._conclude(drifting, reference, Gate().settings(quantized=False), "forced")
    assert reported.verdict == "drift" and failed.verdict == "fail"
    assert [r.split(" is ")[0] for r in reported.reasons] == [
        "mean KL",
        "decode-phase mean KL",
        "positions 0-63 mean KL 0.006",
        "positions 64-255 mean KL 0.006",
        "positions 256-511 mean KL 0.006",
    ]
    assert failed.reasons == [*reported.reasons[:-1], reported.reasons[-1] + "; drift fails this point"]


def _prefilled(prompt_tokens: int, prefill_kl, position_kl, forced_ok=True, stored=None) -> Correctness:
    """A short prompt whose reference stored ``len(prefill_kl)`` prefill positions (8 asked for), every floor
    at 1e-3, and its device's KLs there (None: not measured) and at the teacher-forced positions."""
    stored = len(prefill_kl) if stored is None else stored
    prompt = PromptReference(
        "plain", "p", list(range(prompt_tokens)), [3] * 9, [[3]] * 9, [[0.0]] * 9, [[3]] * stored, [[0.0]] * stored
    )
    floor = {
        "kl_mean": 1e-3,
        "phases": {"prefill": {"kl_mean": 1e-3}, "decode": {"kl_mean": 1e-3}},
        "prefill_positions": [[1e-3] * stored],
    }
    settings = {"top_m": 8, "eos_ids": [], "prefill_positions": 8}
    reference = Reference(model={}, settings=settings, versions={}, noise_floor=floor, prompts=[prompt])
    found = PromptResult(
        prompt=0,
        kind="plain",
        forced_ok=forced_ok,
        kl_mean=sum(position_kl) / len(position_kl),
        position_kl=position_kl,
        prefill_kl=prefill_kl,
    )
    return gate._conclude([found], reference, Gate().settings(quantized=False), "forced")


def test_a_fault_at_the_last_prompt_positions_fails_the_prefill_phase_where_the_first_decode_position_is_clean():
    result = _prefilled(8, [0.5] * 8, [1e-3] * 9)
    prefill = result.phases.prefill
    assert (prefill.positions, prefill.kl_mean, prefill.verdict) == (8, 0.5, "fail")
    assert result.verdict == "fail" and result.reasons[0].startswith(
        "prefill-phase mean KL is 500.0x its noise floor over 8 positions"
    )


def test_a_prompt_with_fewer_prefill_positions_than_asked_is_noted_only_where_they_were_measured():
    note = (
        "prefill phase: fewer than gate.prefill_positions=8 positions on prompt 0 (3 tokens): 3; a prompt gets at "
        "most one per token and 4096 // its tokens (each position is a whole prefill)"
    )
    measured = _prefilled(3, [1e-3] * 3, [1e-3] * 9)
    assert (measured.verdict, measured.notes, measured.phases.prefill.positions) == ("pass", [note], 3)
    unmeasured = _prefilled(
        3, None, [1e-3] * 9, stored=3
    )  # the device's prefill KLs missing: the first position stands
    assert (unmeasured.notes, unmeasured.phases.prefill.positions) == ([], 1)
    failed = _prefilled(3, [1e-3] * 3, [1e-3] * 3, forced_ok=False)  # too few positions, and a top-k failure
    assert failed.verdict == "fail" and failed.notes == [
        "KL tier not judged: 3 teacher-forced positions, fewer than gate.min_positions=8",
        note,
    ]
