"""The gate has teeth: on Gemma 3 270M it passes benign variants and fails faults real ports suffer.

The faults (tests/faults.py) wrap the HF model; the gate's code is the same for every case. Free-running
top-5 alone — the field's standard gate — lets two of them through; the teacher-forced KL tier does not.
"""

from __future__ import annotations

import pytest

from harness.adapters.base import LoadSettings
from harness.adapters.hf import HFAdapter
from harness.correctness import diagnosis, gate
from harness.correctness.reference import ReferenceSettings, ReferenceStore
from harness.models import sources
from harness.models.prompts import select_gate_prompts
from harness.scenario.gate_section import Gate
from harness.scenario.schema import ModelSpec
from harness.scenario.sweep import Point
from tests import faults

POINT = Point(adapter="hf", device="cpu", id="gate-test")


@pytest.fixture(scope="module")
def gemma(cache_dir):
    return sources.resolve(ModelSpec(source="gemma3-270m"), cache_dir)


@pytest.fixture(scope="module")
def reference(gemma, reference_dir):
    """The quickstart's reference (ci prompts, 32 tokens), from the session's store: computed once per run."""
    store = ReferenceStore(reference_dir)
    ref, _, _ = store.get_or_compute(gemma, select_gate_prompts("ci"), ReferenceSettings(tokens=32, threads=2))
    return ref


def check(adapter_cls, gemma, reference, dtype="bf16", threads=2, **config):
    adapter = adapter_cls()
    adapter.load(gemma, POINT, LoadSettings(dtype=dtype, threads=threads))
    try:
        return gate.evaluate(adapter, reference, Gate(**config).settings(quantized=False))
    finally:
        adapter.close()


@pytest.fixture(scope="module")
def checked(gemma, reference):
    """``check`` run once per engine class and settings in this module: a fault's tests read one evaluation."""
    results = {}

    def get(adapter_cls, dtype="bf16", threads=2, **config):
        key = (adapter_cls, dtype, threads, tuple(sorted(config.items())))
        if key not in results:
            results[key] = check(adapter_cls, gemma, reference, dtype=dtype, threads=threads, **config)
        return results[key]

    return get


def prefill_positions(reference) -> int:
    """The prefill phase's positions at the default ``gate.prefill_positions`` (8): the last 8 prompt
    positions of each prompt, or all of a shorter prompt's (the ci chat prompt has 6 tokens)."""
    return sum(min(Gate().prefill_positions, len(p.prompt_ids)) for p in reference.prompts)


def test_reference_noise_floor_is_bf16_noise(reference):
    assert 1e-5 < reference.noise_floor["kl_mean"] < 5e-3


@pytest.mark.parametrize("dtype, threads", [("fp32", 2), ("bf16", 1)], ids=["fp32-vs-bf16", "one-thread"])
def test_benign_variants_pass(gemma, reference, dtype, threads):
    result = check(HFAdapter, gemma, reference, dtype=dtype, threads=threads)
    assert result.verdict == "pass", result.reasons
    assert result.kl_ratio < 3
    assert result.phases.decode.verdict == "pass"
    assert result.phases.prefill.verdict == "pass" and result.phases.prefill.positions == prefill_positions(reference)


@pytest.mark.parametrize("variant", faults.BENIGN, ids=lambda f: f.__name__)
def test_benign_implementation_changes_pass(gemma, reference, variant):
    result = check(variant, gemma, reference)  # measured: eager attention 1.7x the floor (paired 1.9x)
    assert result.verdict == "pass", result.reasons
    assert result.kl_ratio < 3 and result.test.rise < 3


@pytest.mark.parametrize("fault", faults.FAULTS, ids=lambda f: f.__name__)
def test_injected_faults_fail(checked, fault):
    result = checked(fault)
    assert result.verdict == "fail", (result.kl_ratio, result.reasons)
    assert result.kl_ratio > 5


def test_a_decode_only_fault_fails_by_its_decode_phase_against_the_decode_floor(reference, checked):
    settings = Gate().settings(quantized=False)
    result = checked(faults.PositionOffByOne)  # wrong position on decode steps only
    prefill, decode = result.phases.prefill, result.phases.decode
    assert result.verdict == "fail" and decode.verdict in ("drift", "fail")
    assert decode.kl_ratio > 1.5 * settings.drift_factor, decode  # measured: 10x on the ci prompts
    assert decode.noise_floor == pytest.approx(reference.noise_floor["phases"]["decode"]["kl_mean"])
    assert decode.positions == sum(len(p.tokens) - 1 for p in reference.prompts)
    assert prefill.positions == prefill_positions(reference) and prefill.kl_ratio < 1  # prefill untouched
    assert any(reason.startswith("decode-phase mean KL") for reason in result.reasons)
    spread = result.distribution.forward
    assert spread.median <= spread.p90 <= spread.p99 <= spread.max and spread.positions == 64


@pytest.mark.parametrize("fault", [faults.HeadMapping, faults.SkippedLayer], ids=lambda f: f.__name__)
def test_free_running_top5_alone_misses_what_the_kl_tier_catches(checked, fault):
    free_only = checked(fault, mode="free")
    assert free_only.verdict == "pass"  # the field's gate lets it through...
    assert free_only.free_divergence_index is not None  # ...although the output diverged
    assert checked(fault).verdict == "fail"


def test_diagnosis_points_at_the_faulty_layer(gemma, reference):
    healthy, broken = HFAdapter(), faults.HeadMapping()
    for adapter in (healthy, broken):
        adapter.load(gemma, POINT, LoadSettings(dtype="bf16", threads=2))
    first = reference.prompts[0]
    report = diagnosis.diagnose(broken, healthy, first.prompt_ids + first.tokens[:-1])
    assert report.departs_at == f"decoder layer {gemma_middle_layer(gemma)}"


def gemma_middle_layer(gemma) -> int:
    import json

    return json.loads((gemma.hf_dir / "config.json").read_text())["num_hidden_layers"] // 2
