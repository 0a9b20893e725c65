"""The verdict arithmetic at its edges, on hand-built inputs: the KL tiers exactly at their lines, the gate's
conclusion from per-prompt results, the same-weights combination. Each assertion is here because a mutant of
the code survived without it (``python benchmarks/mutation.py``, docs/benchmarks.md)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.correctness import gate, kl
from harness.correctness import same_weights as sw
from harness.correctness.stored_reference import PromptReference, Reference
from harness.records.correctness import PromptResult
from harness.records.kl_tier import GatePhase
from harness.scenario.gate_section import Gate

# --- KL tiers and phases --------------------------------------------------------------------------


def test_a_ratio_exactly_on_a_line_stays_in_the_lower_tier():
    assert kl.tier(None, 5, 100) is None
    assert kl.tier(5.0, 5, 100) == "pass"
    assert kl.tier(np.nextafter(5.0, 6), 5, 100) == "drift"
    assert kl.tier(100.0, 5, 100) == "drift"
    assert kl.tier(np.nextafter(100.0, 101), 5, 100) == "fail"
    assert kl.tier(0.0, 5, 100) == "pass"


def test_phase_floors_split_the_first_position_from_the_rest():
    assert kl.by_phase([[1.0, 3.0, 5.0], [3.0], []]) == {"prefill": [1.0, 3.0], "decode": [3.0, 5.0]}
    assert kl.phase_floors([[1.0, 3.0, 5.0], [3.0]]) == {
        "prefill": {"kl_mean": 2.0, "positions": 2},
        "decode": {"kl_mean": 4.0, "positions": 2},
    }
    assert kl.phase_floors([[2.0]])["decode"] == {"kl_mean": None, "positions": 0}


def test_floors_fall_back_to_the_overall_floor_and_never_go_under_the_minimum():
    assert kl.floors_of({"kl_mean": 0.0}) == {"prefill": (kl.MIN_FLOOR, "overall"), "decode": (kl.MIN_FLOOR, "overall")}
    stored = {"kl_mean": 0.5, "phases": {"prefill": {"kl_mean": 0.0}, "decode": {"kl_mean": None}}}
    assert kl.floors_of(stored) == {"prefill": (kl.MIN_FLOOR, "phase"), "decode": (0.5, "overall")}
    assert kl.floors_of({"kl_mean": 0.5, "phases": {"decode": {"kl_mean": 0.25}}}) == {
        "prefill": (0.5, "overall"),
        "decode": (0.25, "phase"),
    }


def test_phases_judge_each_phase_on_its_own_floor_and_say_when_one_is_empty():
    floor = {"kl_mean": 0.1, "phases": {"prefill": {"kl_mean": 0.01}, "decode": {"kl_mean": 0.1}}}
    parts = kl.phases(
        [[0.5, 0.2, 0.4], [0.6, 0.3, 0.5]],
        floor,
        Gate(drift_factor=5, fail_factor=40, min_positions=2).settings(quantized=False),
    )
    assert (parts.prefill.kl_mean, parts.prefill.noise_floor) == (pytest.approx(0.55), 0.01)
    assert parts.prefill.kl_ratio == pytest.approx(55.0) and parts.prefill.positions == 2
    assert parts.prefill.verdict == "fail" and parts.prefill.floor_source == "phase" and not parts.prefill.pooled
    assert parts.decode.kl_mean == pytest.approx(0.35) and parts.decode.kl_ratio == pytest.approx(3.5)
    assert parts.decode.verdict == "pass" and parts.decode.positions == 4 and parts.note is None
    few = kl.phases(
        [[0.5, 0.2, 0.4]], floor, Gate(drift_factor=5, fail_factor=40, min_positions=2).settings(quantized=False)
    )  # one prefill position
    assert few.prefill.pooled and few.prefill.verdict is None and few.prefill.test is None
    assert not few.decode.pooled and few.decode.verdict == "pass"
    one_token = kl.phases(
        [[0.5]], {"kl_mean": 0.1}, Gate(drift_factor=5, fail_factor=100, min_positions=1).settings(quantized=False)
    )  # no decode position
    assert one_token.decode == GatePhase(
        kl_mean=None, noise_floor=0.1, kl_ratio=None, positions=0, verdict=None, floor_source="overall", pooled=True
    )
    assert one_token.note == kl.OLD_REFERENCE


def _phase(kl_mean, floor, verdict):
    return GatePhase(kl_mean=kl_mean, noise_floor=floor, kl_ratio=kl_mean / floor, positions=1, verdict=verdict)


def test_judge_names_every_tier_that_fails_or_drifts_with_its_figures():
    settings = Gate(drift_factor=5, fail_factor=100).settings(quantized=False)
    drifting = kl.overall_test([[0.06] * 10], {"kl_mean": 0.01}, settings)
    assert kl.judge(6.0, drifting, None, settings) == (
        [],
        [
            "mean KL is 6.0x its noise floor over 10 positions, drift above 5x "
            "(paired by position: 6.0x, >= 6.0x at 99% confidence)"
        ],
    )
    failing = kl.overall_test([[2.0] * 10], {"kl_mean": 0.01}, settings)
    (fail,), drifts = kl.judge(200.0, failing, None, settings)
    assert fail.startswith("mean KL is 200.0x its noise floor over 10 positions, fail above 100x") and not drifts
    assert kl.judge(6.0, None, None, settings) == ([], [])  # no paired test (too few positions): no tier
    assert kl.judge(None, drifting, None, settings) == ([], [])
    assert kl.judge(4.0, drifting, None, settings) == ([], [])  # under the drift line


def test_spread_reads_the_stated_percentiles_and_distribution_pools_prompts():
    found = kl.spread([float(v) for v in range(101)])  # percentile p is the value p
    assert (found.median, found.p90, found.p99, found.max, found.positions) == (50, 90, 99, 100, 101)
    assert kl.spread([]) is None
    pooled = kl.distribution([[1.0], [3.0, 5.0]], [[2.0, 4.0], []], [[1, 0], [1, 1]])
    assert pooled.forward.median == 3.0 and pooled.forward.positions == 3 and pooled.reverse.max == 4.0
    assert pooled.top1_agreement == 0.75 and pooled.top1_positions == 4
    empty = kl.distribution([], [], [[], []])
    assert empty.forward is None and empty.reverse is None
    assert empty.top1_agreement is None and empty.top1_positions == 0


# --- the gate's conclusion from per-prompt results ------------------------------------------------


def _reference(noise_floor: dict, prompts: int = 4) -> Reference:
    heads = [PromptReference("plain", f"p{i}", [1, 2], [3], [[3]], [[0.0]]) for i in range(prompts)]
    return Reference(
        model={}, settings={"top_m": 8, "eos_ids": []}, versions={}, noise_floor=noise_floor, prompts=heads
    )


def _prompt(i, **fields) -> PromptResult:
    return PromptResult(prompt=i, kind="plain", **fields)


def _conclude(prompts, floor=0.01, mode="both", **config):
    return gate._conclude(prompts, _reference({"kl_mean": floor}), Gate(k=2, **config).settings(quantized=False), mode)


def test_the_gate_concludes_pass_with_the_pooled_figures():
    prompts = [
        _prompt(0, free_ok=True, forced_ok=True, kl_mean=0.01, top1_match_rate=1.0, free_divergence=None),
        _prompt(1, free_ok=True, forced_ok=True, kl_mean=0.03, top1_match_rate=0.5, free_divergence=3),
        _prompt(2, free_ok=True, kl_mean=None, top1_match_rate=None, free_divergence=2),
    ]
    result = _conclude(prompts, floor=0.01, mode="free")
    assert (result.verdict, result.reasons, result.mode, result.k) == ("pass", [], "free", 2)
    assert result.kl_mean == pytest.approx(0.02) and result.kl_ratio == pytest.approx(2.0)
    assert result.noise_floor == 0.01 and result.top1_match_rate == 0.75 and result.free_divergence_index == 2
    assert result.phases is None and result.prompts == prompts  # no per-position KLs: no phases
    assert result.distribution.forward is None and result.distribution.top1_positions == 0


def test_the_gate_without_kl_figures_has_none_and_a_floor_of_at_least_the_minimum():
    result = _conclude([_prompt(0, forced_ok=True)], floor=0.0)
    assert result.noise_floor == kl.MIN_FLOOR and result.kl_mean is None and result.kl_ratio is None
    assert result.top1_match_rate is None and result.free_divergence_index is None and result.verdict == "pass"


def test_top_k_failures_name_their_prompts_and_hide_the_drift():
    prompts = [
        _prompt(0, free_ok=False, forced_ok=True, kl_mean=0.06),
        _prompt(1, free_ok=True, forced_ok=False, kl_mean=0.06),
        _prompt(2, free_ok=False, forced_ok=False, kl_mean=0.06),
    ]
    result = _conclude(prompts, fail_on_drift=False)
    assert result.verdict == "fail"
    assert result.reasons == [
        "free-running top-2 check failed on prompt(s) [0, 2]",
        "teacher-forced top-2 check failed on prompt(s) [1, 2]",
    ]


def test_drift_is_reported_and_fails_only_where_drift_fails_the_point():
    prompts = [_prompt(0, free_ok=True, forced_ok=True, kl_mean=0.06, position_kl=[0.06] * 10)]
    drift = "mean KL is 6.0x its noise floor over 10 positions, drift above 5x"
    reported = _conclude(prompts, fail_on_drift=False)
    assert reported.verdict == "drift" and reported.reasons[0].startswith(drift), reported.reasons
    failed = _conclude(prompts, fail_on_drift=True)
    assert failed.verdict == "fail" and failed.reasons[-1].endswith("; drift fails this point"), failed.reasons
    over = _conclude([_prompt(0, kl_mean=2.0, position_kl=[2.0] * 10)], fail_on_drift=False)
    assert over.verdict == "fail" and over.reasons[0].startswith("mean KL is 200.0x its noise floor"), over.reasons
    few = _conclude([_prompt(0, kl_mean=2.0, position_kl=[2.0] * 3)], fail_on_drift=False)  # under min_positions
    # Before: "pass" with only a note, a silent pass at 200x the floor.
    assert few.verdict == "not judged" and few.notes == []
    assert few.reasons == ["KL tier not judged: 3 teacher-forced positions, fewer than gate.min_positions=8"]
    topk = _conclude([_prompt(0, free_ok=False, kl_mean=2.0, position_kl=[2.0] * 3)], fail_on_drift=False)
    assert topk.verdict == "fail" and topk.notes == [few.reasons[0]]  # a top-k failure still fails


def test_the_gate_pools_per_position_figures_into_phases_and_the_distribution():
    prompts = [
        _prompt(0, kl_mean=0.02, position_kl=[0.01, 0.03], position_kl_reverse=[0.02, 0.02], position_top1=[1, 0]),
        _prompt(1, kl_mean=0.01, position_kl=[0.01], position_kl_reverse=None, position_top1=None),
    ]
    result = _conclude(prompts, drift_factor=2.5, fail_factor=50, fail_on_drift=False, min_positions=1)
    assert result.phases.prefill.kl_mean == pytest.approx(0.01) and result.phases.prefill.positions == 2
    assert result.phases.decode.kl_mean == pytest.approx(0.03) and result.phases.decode.positions == 1
    assert result.distribution.forward.positions == 3 and result.distribution.reverse.positions == 2
    assert result.distribution.top1_positions == 2 and result.distribution.top1_agreement == 0.5
    assert result.min_positions == 1 and result.test is not None and result.test.positions == 3


# --- the same-weights combination -----------------------------------------------------------------


def test_only_a_clean_pass_against_its_own_weights_leaves_the_model_verdict():
    for model in ("pass", "drift", "fail", None):
        assert sw.combine(model, None) == (model, None)
        assert sw.combine(model, "pass") == (model, None)
    assert sw.combine("fail", "drift") == ("fail", None)  # already failed: nothing changed, no reason
    assert sw.combine("fail", "fail") == ("fail", None)
    verdict, why = sw.combine(None, "drift")
    assert verdict == "fail" and why == (
        "against its own weights the point is drift: identical weights on a trusted path disagree beyond "
        "their noise floor, a port bug rather than quantization"
    )
