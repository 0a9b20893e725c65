"""Diagnosis names the component where a fault sits: embedding, a decoder layer, the final norm, or a
decode step. Faults (tests/faults.py) are injected into the device side only; HF is the reference."""

from __future__ import annotations

import numpy as np
import pytest

from harness.adapters.base import LoadSettings
from harness.adapters.check_outputs import Activations
from harness.adapters.hf import HFAdapter
from harness.correctness import diagnosis, gate
from harness.correctness.reference import ReferenceSettings, ReferenceStore
from harness.models import sources
from harness.models.prompts import select_gate_prompts
from harness.records.correctness import Correctness, PromptResult
from harness.scenario.gate_section import Gate
from harness.scenario.schema import ModelSpec
from harness.scenario.sweep import Point
from tests import faults

POINT = Point(adapter="hf", device="cpu", id="diagnosis")


@pytest.fixture(scope="module")
def tiny_gemma(cache_dir):
    return sources.resolve(ModelSpec(source="tiny-gemma3-text"), cache_dir)


@pytest.fixture(scope="module")
def healthy(tiny_gemma):
    adapter = load(HFAdapter, tiny_gemma)
    yield adapter
    adapter.close()


@pytest.fixture(scope="module")
def tokens(tiny_gemma):
    return tiny_gemma.tokenizer().encode("The harbour town woke slowly to the sound of gulls").ids


@pytest.fixture(scope="module")
def reference(tiny_gemma, tmp_path_factory):
    store = ReferenceStore(tmp_path_factory.mktemp("references"))
    ref, _, _ = store.get_or_compute(tiny_gemma, select_gate_prompts("ci"), ReferenceSettings(tokens=8, threads=2))
    return ref


def load(cls, model):
    adapter = cls()
    adapter.load(model, POINT, LoadSettings(dtype="fp32", threads=2))
    return adapter


def test_hf_states_keep_the_last_layer_apart_from_the_final_norm(healthy, tokens):
    states = healthy.hidden_states(tokens)
    assert isinstance(states, Activations) and len(states) == 1 + 2  # embeddings + 2 layers, as a list
    # before: transformers' output_hidden_states ends with the final norm's output, not the last layer's
    legacy = healthy.model(input_ids=healthy._torch.tensor([tokens]), output_hidden_states=True).hidden_states
    np.testing.assert_allclose(states.final_norm, legacy[-1][0].detach().numpy(), rtol=1e-5, atol=1e-5)
    assert not np.allclose(states[-1], states.final_norm)
    # the logits the step-wise prefill returned, what the gate reads: the last position's
    assert states.logits.shape == (1, healthy.model.config.vocab_size)
    assert states.path == "dynamic cache" and states.forwards == [len(tokens)] and states.ran is None


def test_healthy_device_departs_nowhere(healthy, tokens):
    report = diagnosis.diagnose(healthy, healthy, tokens)
    assert report.departs_at is None and report.not_run is None
    assert [c.name for c in report.components] == [
        "embedding",
        "decoder layer 0",
        "decoder layer 1",
        "final norm",
        "logits",
    ]


@pytest.mark.parametrize(
    "fault, component",
    [
        (faults.MissingEmbedScale, "embedding"),
        (faults.SkippedLayer, "decoder layer 1"),  # the last of two: told apart from the final norm
        (faults.WrongFinalNorm, "final norm"),
    ],
    ids=lambda v: getattr(v, "__name__", v),
)
def test_diagnosis_names_the_faulty_component(tiny_gemma, healthy, tokens, fault, component):
    broken = load(fault, tiny_gemma)
    try:
        report = diagnosis.diagnose(broken, healthy, tokens)
    finally:
        broken.close()
    assert report.departs_at == component, [(c.name, c.relative_error) for c in report.components]
    assert report.phase == "prefill"
    assert report.model_dump()["departs_at"] == component


def test_a_decode_only_fault_is_diagnosed_on_a_decode_step(tiny_gemma, healthy, reference):
    broken = load(faults.PositionOffByOne, tiny_gemma)
    try:
        result = gate.evaluate(broken, reference, Gate().settings(quantized=False))
        report = diagnosis.diagnose_failure(broken, healthy, reference, result)
    finally:
        broken.close()
    assert report.phase == "decode" and report.not_run is None
    assert report.departs_at == "decoder layer 0"  # the first attention sees the wrong position
    assert report.components[0].relative_error == 0  # the embedding of the decoded token is right
    assert report.position != 0


class NoDecodeStates(faults.PositionOffByOne):
    supports_decode_hidden_states = False


def test_a_diagnosis_that_cannot_run_says_why(tiny_gemma, healthy, reference):
    broken = load(NoDecodeStates, tiny_gemma)
    try:
        result = gate.evaluate(broken, reference, Gate().settings(quantized=False))
        report = diagnosis.diagnose_failure(broken, healthy, reference, result)
    finally:
        broken.close()
    assert report.departs_at is None
    assert "cannot expose a decode step's hidden states" in report.not_run

    class Opaque:
        name, supports_hidden_states = "opaque", False

    found = diagnosis.diagnose_failure(Opaque(), healthy, reference, result).model_dump()
    assert found["not_run"] == "opaque exposes no hidden states"
    # The input ids come first; an engine without a tokenizer of its own only ever sees the reference's.
    assert "exposes no tokenizer of its own" in found["input_ids"]["not_compared"]


def test_first_failure_is_the_earliest_top_k_failure_else_the_highest_kl_prompt():
    prompts = [
        PromptResult(prompt=0, kind="a", free_ok=False, free_divergence=4, forced_first_violation=6, kl_mean=1.0),
        PromptResult(prompt=1, kind="b", free_ok=True, free_divergence=2, forced_first_violation=3, kl_mean=2.0),
    ]
    result = Correctness(
        verdict="fail",
        k=5,
        mode="both",
        kl_mean=1.0,
        noise_floor=1e-3,
        kl_ratio=1e3,
        top1_match_rate=0.5,
        free_divergence_index=2,
        prompts=prompts,
    )
    assert diagnosis.first_failure(result) == (1, 3)  # a free divergence inside top-k is no failure
    for prompt in prompts:
        prompt.free_ok, prompt.forced_first_violation = True, None
    assert diagnosis.first_failure(result) == (1, None)


def test_a_plain_list_is_compared_without_final_norm_and_logits(healthy, tokens):
    states = healthy.hidden_states(tokens)
    report = diagnosis.compare(list(states), states)
    assert [c.name for c in report.components] == ["embedding", "decoder layer 0", "decoder layer 1"]
    assert report.departs_at is None
