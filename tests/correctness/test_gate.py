"""Gate mechanics on crafted logits and on the tiny model: top-k, KL, tiers, the reference store."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness import cli
from harness.correctness import diagnosis, gate
from harness.correctness.logprobs import coarse_kl, log_softmax, top_ids
from harness.correctness.reference import ReferenceSettings, ReferenceStore
from harness.correctness.stored_reference import PromptReference, Reference, ReferenceMismatch
from harness.errors import StoredContentError
from harness.io import sealed
from harness.models import sources
from harness.models.prompts import select_gate_prompts
from harness.scenario.gate_section import Gate, GateSettings
from tests.fakes import Scripted
from tests.faults import StaleKVCache

VOCAB = 8


def test_top_ids_break_ties_toward_the_lower_id():
    logprobs = np.array([0.1, 0.5, 0.5, 0.2, 0.5], dtype=np.float32)
    assert top_ids(logprobs, 3).tolist() == [1, 2, 4]
    assert top_ids(logprobs, 4).tolist() == [1, 2, 4, 3]


def test_coarse_kl_is_zero_for_identical_and_never_above_the_true_kl():
    rng = np.random.default_rng(0)
    ref, dev = log_softmax(rng.normal(size=50) * 3), log_softmax(rng.normal(size=50) * 3)
    ids = top_ids(ref, 10)
    assert coarse_kl(ids, ref[ids], ref) == pytest.approx(0, abs=1e-9)
    true_kl = float(np.sum(np.exp(ref) * (ref - dev)))
    assert 0 < coarse_kl(ids, ref[ids], dev) <= true_kl + 1e-9


def logits(order: list[int]) -> np.ndarray:
    """Logits ranking ``order`` first to last; unlisted ids get the lowest scores."""
    values = np.full(VOCAB, -10.0, dtype=np.float32)
    for rank, token in enumerate(order):
        values[token] = 5.0 - rank
    return values


def prompt_reference(table, kind="plain", prompt_ids=(0,)) -> PromptReference:
    """The reference's greedy tokens and full top-VOCAB rows of scripted logits ``table``."""
    tokens, tops, lps = [], [], []
    for row in table:
        lp = log_softmax(row)
        best = top_ids(lp, VOCAB)
        tokens.append(int(best[0]))
        tops.append(best.tolist())
        lps.append(lp[best].tolist())
    return PromptReference(kind, "x", list(prompt_ids), tokens, tops, lps)


def reference_from(table, kind="plain") -> Reference:
    prompt = prompt_reference(table, kind)
    return Reference(
        model={},
        settings={"top_m": VOCAB, "eos_ids": [7], "tokens": len(table)},
        versions={},
        noise_floor={"kl_mean": 1e-3},
        prompts=[prompt],
    )


REF_TABLE = [logits([1, 2, 3, 4, 5]), logits([2, 1, 3, 4, 5]), logits([3, 1, 2, 4, 5])]


def test_the_gate_judges_with_the_scenario_section_and_fail_on_drift_decided_per_point():
    section = Gate(k=3, mode="forced", drift_factor=4, fail_factor=50, min_positions=6)
    unquantized, quantized = section.settings(quantized=False), section.settings(quantized=True)
    assert unquantized == GateSettings(
        k=3, mode="forced", drift_factor=4, fail_factor=50, fail_on_drift=True, min_positions=6
    )
    assert not quantized.fail_on_drift and (unquantized.failing, quantized.failing) == (4, 50)  # auto
    assert Gate(fail_on_drift=True).settings(quantized=True).fail_on_drift  # as the scenario says
    assert not Gate(fail_on_drift=False).settings(quantized=False).fail_on_drift
    defaults = Gate().settings(quantized=False)  # the section's defaults are the gate's
    assert (defaults.k, defaults.mode, defaults.drift_factor, defaults.fail_factor, defaults.min_positions) == (
        5,
        "both",
        5.0,
        100.0,
        8,
    )


def test_identical_device_passes_everything():
    result = gate.evaluate(
        Scripted(REF_TABLE), reference_from(REF_TABLE), Gate(k=2, min_positions=3).settings(quantized=False)
    )
    assert result.verdict == "pass" and result.top1_match_rate == 1 and result.free_divergence_index is None


def test_divergence_inside_both_top_k_passes_the_free_running_check():
    device = [REF_TABLE[0], logits([1, 2, 3, 4, 5]), logits([3, 1, 2, 4, 5])]  # swaps 1st and 2nd at step 1
    result = gate.evaluate(
        Scripted(device), reference_from(REF_TABLE), Gate(k=2, mode="free").settings(quantized=False)
    )
    (prompt,) = result.prompts
    assert prompt.free_ok and prompt.free_divergence == 1 and prompt.free_matched_tokens == 1


def test_divergence_outside_top_k_fails_and_names_both_tokens():
    device = [REF_TABLE[0], logits([5, 4, 3, 2, 1]), logits([3, 1, 2, 4, 5])]
    result = gate.evaluate(
        Scripted(device), reference_from(REF_TABLE), Gate(k=2, mode="free").settings(quantized=False)
    )
    assert result.verdict == "fail" and result.free_divergence_index == 1
    (failure,) = result.prompts[0].failures
    assert (failure.reference_token, failure.device_token) == (2, 5)
    assert "device token 5 not in reference top-2" in failure.why
    assert [i for i, _ in failure.device_topk] == [5, 4]


def test_early_eos_on_the_device_is_a_length_mismatch_caught_at_its_position():
    device = [REF_TABLE[0], logits([7, 2, 1]), logits([3])]
    result = gate.evaluate(
        Scripted(device), reference_from(REF_TABLE), Gate(k=2, mode="free").settings(quantized=False)
    )
    assert result.verdict == "fail" and result.prompts[0].free_divergence == 1


def test_teacher_forced_checks_every_position_after_a_divergence():
    # step 0 diverges harmlessly (within top-2), step 2 is broken: free-running stops at step 0
    device = [logits([2, 1, 3]), REF_TABLE[1], logits([6, 5, 4])]
    reference = reference_from(REF_TABLE)
    free = gate.evaluate(Scripted(device), reference, Gate(k=2, mode="free").settings(quantized=False))
    assert free.verdict != "fail"
    forced = gate.evaluate(Scripted(device), reference, Gate(k=2, mode="forced").settings(quantized=False))
    assert forced.verdict == "fail" and forced.prompts[0].forced_first_violation == 2
    assert forced.prompts[0].top1_match_rate == pytest.approx(1 / 3)


class ChosenOnly:
    """An engine that exposes only the token it picks after each forced prefix."""

    def __init__(self, chosen):
        self.chosen = chosen

    def teacher_forced_top1(self, prompt_ids, tokens):
        return self.chosen


def test_top1_only_engines_get_a_one_way_teacher_forced_check():
    reference = reference_from(REF_TABLE)  # greedy tokens 1, 2, 3
    ok = gate.evaluate_top1(ChosenOnly([1, 1, 3]), reference, Gate(k=2).settings(quantized=False))
    assert ok.verdict == "pass" and ok.mode == "forced-top1" and ok.kl_mean is None
    assert ok.top1_match_rate == pytest.approx(2 / 3)
    bad = gate.evaluate_top1(ChosenOnly([1, 2, 5]), reference, Gate(k=2).settings(quantized=False))
    assert bad.verdict == "fail" and bad.prompts[0].forced_first_violation == 2


def test_kl_tiers_relative_to_the_noise_floor():
    reference = reference_from(REF_TABLE)
    reference.noise_floor["kl_mean"] = 0.01
    nudged = [row + np.eye(VOCAB, dtype=np.float32)[2] * 0.4 for row in REF_TABLE]  # same ranking, shifted mass
    probe = gate.evaluate(
        Scripted(nudged), reference, Gate(k=2, mode="forced", min_positions=1).settings(quantized=False)
    )
    assert probe.kl_mean > 0 and probe.test.floor == "mean"  # no per-position floor stored: the mean pairs
    assert 0 < probe.test.rise_low < probe.test.rise  # the paired test is recorded beside the tier
    low = probe.kl_ratio  # the tier: mean KL over mean floor, judged only with min_positions reached

    def verdict(drift, fail, fail_on_drift=False):
        config = Gate(
            k=2, mode="forced", drift_factor=drift, fail_factor=fail, fail_on_drift=fail_on_drift, min_positions=1
        ).settings(quantized=False)
        return gate.evaluate(Scripted(nudged), reference, config).verdict

    assert verdict(low * 2, low * 4) == "pass"
    assert verdict(low / 2, low * 4) == "drift"
    assert verdict(low / 2, low * 4, fail_on_drift=True) == "fail"
    assert verdict(low / 4, low / 2) == "fail"


def test_no_kl_verdict_on_fewer_positions_than_min_positions():
    reference = reference_from(REF_TABLE)  # 3 teacher-forced positions
    reference.noise_floor["kl_mean"] = 1e-4
    nudged = [row + np.eye(VOCAB, dtype=np.float32)[2] * 0.4 for row in REF_TABLE]
    few = gate.evaluate(
        Scripted(nudged), reference, Gate(k=2, mode="forced", min_positions=4).settings(quantized=False)
    )
    # the mean alone is not judged, and the point is not passed either (before: "pass" with a note)
    assert few.test is None and few.verdict == "not judged" and few.kl_ratio > 100 and not few.notes
    assert few.reasons == ["KL tier not judged: 3 teacher-forced positions, fewer than gate.min_positions=4"]
    assert few.phases.prefill.pooled and few.phases.decode.pooled and few.phases.decode.verdict is None
    enough = gate.evaluate(
        Scripted(nudged), reference, Gate(k=2, mode="forced", min_positions=3).settings(quantized=False)
    )
    assert enough.test.positions == 3 and enough.verdict == "fail" and not enough.notes
    assert enough.phases.prefill.pooled and enough.phases.prefill.test is None  # 1 position: pooled, not judged


def test_gate_prompt_selection():
    assert [kind for kind, _ in select_gate_prompts("ci")] == ["plain", "chat"]
    selected = select_gate_prompts("all")
    assert len(selected) == 16 and sum(kind == "chat" for kind, _ in selected) == 8
    assert len(select_gate_prompts(5)) == 5


# --- the reference store, on the tiny model ----------------------------------------------------


def test_reference_is_stored_reused_and_refused_when_stale(tmp_path, tiny_llama):
    store = ReferenceStore(tmp_path)
    pairs = select_gate_prompts(2)
    settings = ReferenceSettings(tokens=6, threads=2)
    first, path, reused = store.get_or_compute(tiny_llama, pairs, settings)
    assert not reused and path.exists()
    assert [len(p.tokens) for p in first.prompts] == [6, 6]
    assert len(first.prompts[0].top_ids[0]) == 64 and first.noise_floor["kl_mean"] > 0
    second, _, reused = store.get_or_compute(tiny_llama, pairs, settings)
    assert reused and second.prompts[0].tokens == first.prompts[0].tokens

    data = json.loads(path.read_text())
    data["model"]["checksum"] = "0" * 64
    path.write_text(json.dumps(data))  # edited: its digest no longer holds
    with pytest.raises(StoredContentError, match=r"content differs from its digest in model\.checksum"):
        store.get_or_compute(tiny_llama, pairs, settings)
    path.write_text(json.dumps(sealed.seal(data)))  # sealed again: the key check still refuses it
    with pytest.raises(ReferenceMismatch, match="model checksum 000000000000… != .*--refresh-reference"):
        store.get_or_compute(tiny_llama, pairs, settings)
    _, _, reused = store.get_or_compute(tiny_llama, pairs, settings, refresh=True)
    assert not reused


def test_a_model_of_the_same_name_gets_its_own_reference(tmp_path, tiny_llama, cache_dir):
    from harness.scenario.schema import ModelSpec

    other = sources.resolve(ModelSpec(source="tiny-llama", seed=1), cache_dir)
    store = ReferenceStore(tmp_path)
    settings = ReferenceSettings(tokens=3, threads=2)
    first, path, _ = store.get_or_compute(tiny_llama, select_gate_prompts(1), settings)
    renamed = sources.ResolvedModel(name=tiny_llama.name, hf_dir=other.hf_dir, checksum=other.checksum)
    second, other_path, reused = store.get_or_compute(renamed, select_gate_prompts(1), settings)
    assert not reused and other_path != path and other_path.parent == path.parent
    assert second.model["checksum"] == other.checksum and first.model["checksum"] == tiny_llama.checksum


class BrokenHF(StaleKVCache):
    name = "hf-broken"


GATED = """
model: tiny-llama
generation: {max_new_tokens: 4}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}
gate: {tokens: 8, prompts: 2}
sweep:
  adapter: [hf]
"""


def test_harness_verify_passes_then_reuses_the_reference(write_scenario, tmp_path, capsys, tiny_llama, monkeypatch):
    monkeypatch.chdir(tmp_path)  # without --results, references go to ./results/references
    path = write_scenario(GATED)
    args = ["verify", str(path), "--isolation", "none"]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "reference: computed in" in out and "PASS   scenario::hf-cpu-bf16: top-5 both" in out
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "reference: reused" in out and "records written" not in out
    # Without --results no record is written (with it, tests/cli/test_verify_records.py): the references only.
    assert [p.name for p in (tmp_path / "results").iterdir()] == ["references"]


def test_harness_run_records_the_verdict_and_fails_a_broken_engine(write_scenario, tmp_path, capsys, tiny_llama):
    from harness.adapters import registry
    from harness.records import store as record_store

    registry.register_adapter(BrokenHF)
    try:
        path = write_scenario(GATED.replace("adapter: [hf]", "adapter: [hf, hf-broken]"))
        assert cli.main(["run", str(path), "--results", str(tmp_path), "--no-progress", "--isolation", "none"]) == 1
    finally:
        registry.unregister_adapter("hf-broken")
    out = capsys.readouterr().out
    assert "gate FAIL" in out and "reference top-k" in out
    df = record_store.load(tmp_path / "scenario").set_index("point_id")
    assert df.loc["hf-cpu-bf16", "gate_verdict"] == "pass"
    assert df.loc["hf-broken-cpu-bf16", "gate_verdict"] == "fail"
    assert df.loc["hf-broken-cpu-bf16", "status"] == "ok"  # it ran; it is wrong
    assert df.loc["hf-broken-cpu-bf16", "tpot_ms"] > 0


def test_verify_refuses_scenarios_without_a_gate(write_scenario, capsys, tiny_llama):
    path = write_scenario(GATED.replace("gate: {tokens: 8, prompts: 2}\n", ""))
    assert cli.main(["verify", str(path)]) == 2
    assert "no gate section" in capsys.readouterr().err


def test_diagnosis_localises_a_skipped_layer(tiny_llama):
    from harness.adapters.base import LoadSettings
    from harness.adapters.hf import HFAdapter
    from harness.scenario.sweep import Point
    from tests.faults import SkippedLayer

    point = Point(adapter="hf", device="cpu", id="diag")
    healthy, broken = HFAdapter(), SkippedLayer()
    for adapter in (healthy, broken):
        adapter.load(tiny_llama, point, LoadSettings(dtype="fp32", threads=2))
    tokens = tiny_llama.tokenizer().encode("The harbour town woke slowly").ids
    assert diagnosis.diagnose(healthy, healthy, tokens).departs_at is None
    report = diagnosis.diagnose(broken, healthy, tokens)
    assert report.departs_at == "decoder layer 1"  # tiny-llama has 2 layers; the fault skips the middle one
    assert report.components[1].cosine == pytest.approx(1.0)


# --- phase-aware KL and the KL distribution (issue #20) -----------------------------------------


def with_phase_floors(reference: Reference, prefill: float, decode: float) -> Reference:
    reference.noise_floor["phases"] = {
        "prefill": {"kl_mean": prefill, "positions": 1},
        "decode": {"kl_mean": decode, "positions": len(reference.prompts[0].tokens) - 1},
    }
    return reference


def decode_only_error():
    """The prefill position exact, every decode position nudged (same ranking, shifted mass)."""
    return [REF_TABLE[0]] + [row + np.eye(VOCAB, dtype=np.float32)[2] * 0.4 for row in REF_TABLE[1:]]


def test_a_decode_only_error_is_judged_against_the_decode_floor_not_averaged_away():
    reference = reference_from(REF_TABLE)
    probe = gate.evaluate(Scripted(decode_only_error()), reference, Gate(k=2, mode="forced").settings(quantized=False))
    decode_kl = probe.phases.decode.kl_mean
    assert probe.phases.prefill.kl_mean == 0 and decode_kl > 0
    # A noisy prefill position and a quiet decode phase: the overall floor sits between them, so the
    # overall mean stays under drift_factor x its floor while the decode phase is far above its own.
    reference.noise_floor["kl_mean"] = decode_kl / 3
    with_phase_floors(reference, prefill=decode_kl, decode=decode_kl / 20)
    result = gate.evaluate(
        Scripted(decode_only_error()),
        reference,
        Gate(k=2, mode="forced", drift_factor=5, fail_factor=100, fail_on_drift=True, min_positions=1).settings(
            quantized=False
        ),
    )
    assert result.kl_ratio < 5  # the overall tier alone (before phases) passed this point
    decode, prefill = result.phases.decode, result.phases.prefill
    assert decode.verdict == "drift" and decode.kl_ratio == pytest.approx(20, rel=1e-3)
    assert decode.noise_floor == pytest.approx(decode_kl / 20) and decode.floor_source == "phase"
    assert (decode.positions, prefill.positions) == (2, 1)
    assert prefill.verdict == "pass" and prefill.kl_ratio == 0
    assert result.verdict == "fail" and result.phases.note is None
    assert any(r.startswith("decode-phase mean KL is 20.0x") and "drift above 5x" in r for r in result.reasons)


def test_a_reference_without_phase_floors_judges_both_phases_against_its_overall_floor():
    reference = reference_from(REF_TABLE)  # noise_floor holds kl_mean only, as before phases
    reference.noise_floor["kl_mean"] = 0.01
    result = gate.evaluate(Scripted(decode_only_error()), reference, Gate(k=2, mode="forced").settings(quantized=False))
    assert result.phases.prefill.noise_floor == result.phases.decode.noise_floor == result.noise_floor == 0.01
    assert {result.phases.prefill.floor_source, result.phases.decode.floor_source} == {"overall"}
    assert "overall floor" in result.phases.note


def test_kl_distribution_pools_positions_in_both_directions():
    table = [logits([1, 2, 3, 4]), logits([3, 2, 1, 4]), logits([4, 3, 2, 1])]  # top-1 agrees at position 0 only
    result = gate.evaluate(
        Scripted(table), reference_from(REF_TABLE), Gate(k=4, mode="forced").settings(quantized=False)
    )
    spread = result.distribution
    for direction in (spread.forward, spread.reverse):
        assert direction.positions == 3
        assert 0 <= direction.median <= direction.p90 <= direction.p99 <= direction.max
    assert spread.forward.max == pytest.approx(max(result.prompts[0].position_kl))
    assert spread.reverse.max == pytest.approx(max(result.prompts[0].position_kl_reverse))
    assert spread.top1_positions == 3 and spread.top1_agreement == pytest.approx(1 / 3)
    top1_only = gate.evaluate_top1(
        ChosenOnly([1, 1, 3]), reference_from(REF_TABLE), Gate(k=2).settings(quantized=False)
    )
    assert top1_only.distribution.forward is None and top1_only.phases is None
    assert top1_only.distribution.top1_agreement == pytest.approx(2 / 3)


def test_reverse_coarse_kl_is_zero_for_identical_and_never_above_the_true_reverse_kl():
    from harness.correctness.logprobs import coarse_kl_reverse

    rng = np.random.default_rng(1)
    ref, dev = log_softmax(rng.normal(size=50) * 3), log_softmax(rng.normal(size=50) * 3)
    ids = top_ids(ref, 10)
    assert coarse_kl_reverse(ids, ref[ids], ref) == pytest.approx(0, abs=1e-9)
    true_reverse = float(np.sum(np.exp(dev) * (dev - ref)))
    assert 0 < coarse_kl_reverse(ids, ref[ids], dev) <= true_reverse + 1e-9


def test_a_decode_only_fault_fails_by_its_decode_phase_on_the_tiny_model(tmp_path, tiny_llama):
    from harness.adapters.base import LoadSettings
    from harness.adapters.hf import HFAdapter
    from harness.records.correctness import Correctness
    from harness.scenario.sweep import Point
    from tests.faults import PositionOffByOne

    store = ReferenceStore(tmp_path)
    pairs, settings = select_gate_prompts("ci"), ReferenceSettings(tokens=32, threads=2)
    reference, path, _ = store.get_or_compute(tiny_llama, pairs, settings)
    floors = reference.noise_floor["phases"]
    assert floors["prefill"]["positions"] == 16 and floors["decode"]["positions"] == sum(
        len(p.tokens) - 1 for p in reference.prompts
    )

    def check(adapter_cls, dtype, reference):
        adapter = adapter_cls()
        adapter.load(tiny_llama, Point(adapter="hf", device="cpu", id="phases"), LoadSettings(dtype=dtype, threads=2))
        try:
            return gate.evaluate(adapter, reference, Gate().settings(quantized=False))
        finally:
            adapter.close()

    clean = check(HFAdapter, "fp32", reference)  # the floor's own engine: 1x in both phases
    assert clean.verdict == "pass" and clean.phases.decode.verdict == "pass"
    assert clean.test.rise == pytest.approx(1, rel=0.01) and clean.test.floor == "positions"
    # the last 8 prompt positions of each of the two prompts (gate.prefill_positions): judged on their own
    assert not clean.phases.prefill.pooled and clean.phases.prefill.verdict == "pass"
    assert clean.phases.prefill.positions == 16
    assert clean.phases.prefill.kl_ratio == pytest.approx(1, rel=0.01)
    assert clean.phases.decode.kl_ratio == pytest.approx(1, rel=0.01)

    broken = check(PositionOffByOne, "bf16", reference)
    decode = broken.phases.decode
    assert broken.verdict == "fail" and decode.verdict == "fail" and decode.kl_ratio > 3 * 100
    assert decode.test.rise_low > 2 * 100 and broken.test.margin > 3  # paired: >= 279x, 56x the 5x line
    assert decode.noise_floor == pytest.approx(floors["decode"]["kl_mean"]) and decode.floor_source == "phase"
    assert broken.phases.prefill.kl_ratio < 1  # the prompt's own forward is untouched
    part = Correctness.model_validate(broken.model_dump())  # what the record stores, read back
    assert part.phases.decode.kl_ratio == decode.kl_ratio and part.distribution.forward.positions == 64
    assert part.test == broken.test and part.min_positions == 8

    data = json.loads(path.read_text())  # a reference stored before per-phase floors
    del data["noise_floor"]["phases"]
    del data["noise_floor"]["positions"]
    path.write_text(json.dumps(sealed.seal(data)))
    old, _, reused = store.get_or_compute(tiny_llama, pairs, settings)
    assert reused and "phases" not in old.noise_floor
    again = check(PositionOffByOne, "bf16", old)
    assert again.verdict == "fail" and again.phases.decode.floor_source == "overall"
    assert again.test.floor == "mean"  # no per-position floor either: each phase's mean pairs with every position
    assert again.phases.decode.noise_floor == again.noise_floor and "overall floor" in again.phases.note
