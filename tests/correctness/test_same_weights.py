"""The same-weights reference (#20): a quantized point against its own weights on a trusted engine path.

Device-side faults (tests/faults_ov.py) on an OpenVINO INT8 point fail through that comparison, one of
them while the HF gate alone calls it quantization drift; the clean INT8 point stays drift (or pass)
against HF and passes against its own weights; unquantized points and adapters without a twin say why.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from importlib.util import find_spec

import numpy as np
import pytest

from harness.adapters import registry
from harness.adapters.trusted_twin import Twin
from harness.correctness import same_weights as sw
from harness.correctness.stored_reference import PromptReference, Reference, ReferenceMismatch
from harness.errors import StoredContentError
from harness.io import sealed
from harness.run import planning
from harness.run.runner import Runner
from harness.run.settings import RunSettings

needs_openvino = pytest.mark.skipif(find_spec("openvino_genai") is None, reason="the openvino extra is not installed")
needs_llamacpp = pytest.mark.skipif(find_spec("llama_cpp") is None, reason="the llamacpp extra is not installed")

SCENARIO = """
model: tiny-llama
generation: {max_new_tokens: 4}
measurement: {threads: 2}
gate: {tokens: 8, prompts: 2}
sweep:
  adapter: ADAPTERS
  device: [DEVICE]
  quantization: QUANTIZATIONS
"""


def verify(write_scenario, reference_dir, adapters, device, quantizations, classes=()):
    """``harness verify`` on a sweep; records by (adapter, quantization)."""
    text = (
        SCENARIO.replace("ADAPTERS", str(adapters))
        .replace("DEVICE", device)
        .replace("QUANTIZATIONS", str(quantizations))
        .replace("'", "")
    )
    for cls in classes:
        registry.register_adapter(cls)
    try:
        records = Runner(RunSettings(reference_dir=reference_dir, correctness_only=True)).run(
            [planning.load(write_scenario(text))], progress=False
        )
    finally:
        for cls in classes:
            registry.unregister_adapter(cls.name)
    for record in records:
        assert record.status == "ok", (record.point_id, record.reason)
    return {(r.point["adapter"], r.point["quantization"]): r for r in records}


# --- the verdict rule ------------------------------------------------------------------------------


def test_drift_against_its_own_weights_fails_the_point():
    assert sw.combine("drift", "pass") == ("drift", None)  # quantization cost, reported
    assert sw.combine("pass", "pass") == ("pass", None)
    assert sw.combine("drift", None) == ("drift", None)  # no own-weights verdict: the model's stands
    for own in ("drift", "fail"):
        verdict, why = sw.combine("drift", own)
        assert verdict == "fail" and "against its own weights" in why and "port bug" in why
        assert sw.combine("pass", own)[0] == "fail"
    assert sw.combine("fail", "pass") == ("fail", None)
    # the dequantized check: a converter bug the twin shares fails the point, whatever HF and the twin say
    for model in ("pass", "drift"):
        verdict, why = sw.combine(model, "pass", "fail")
        assert verdict == "fail" and "converter bug" in why
        assert sw.combine(model, "pass", "pass") == (model, None)


# --- storage, with an engine-free twin -------------------------------------------------------------


class Steps:
    """Deterministic logits from the last token and the position; ``skew`` perturbs them."""

    def __init__(self, skew: float = 0.0):
        self.skew, self.position, self.last = skew, 0, 0

    def _logits(self):
        ids = np.arange(50, dtype=np.float32)
        return np.sin(ids * (self.last + 1) + self.position) * 3 + self.skew * np.cos(ids)

    def prefill(self, tokens):
        self.position, self.last = len(tokens), tokens[-1]
        return self._logits()

    def decode(self, token):
        self.position, self.last = self.position + 1, token
        return self._logits()


def fake_twin(opened: list, key: str = "ir/int8_sym/123/cpu-f32", floor_skew: float = 0.0) -> Twin:
    @contextmanager
    def open_steps(variant):
        opened.append(variant)
        yield Steps(floor_skew if variant == "floor" else 0.0)

    return Twin(engine="fake trusted path", weights="model.bin", key=key, floor_method="fake", open=open_steps)


def hf_stub(checksum: str = "c0ffee") -> Reference:
    prompts = [PromptReference("plain", "a", [1, 2, 3], [], [], []), PromptReference("chat", "b", [4, 5], [], [], [])]
    return Reference(
        model={"name": "tiny", "checksum": checksum, "tokenizer_sha256": "t"},
        settings={"tokens": 6, "top_m": 8, "eos_ids": []},
        versions={},
        noise_floor={"kl_mean": 1e-3},
        prompts=prompts,
    )


def test_the_reference_is_computed_once_stored_and_checked(tmp_path):
    opened = []
    first, path, reused = sw.get_or_compute(tmp_path, fake_twin(opened), hf_stub())
    assert not reused and opened == ["reference", "floor"] and path.parent.name == "same-weights"
    assert [p.prompt_ids for p in first.prompts] == [[1, 2, 3], [4, 5]] and len(first.prompts[0].tokens) == 6
    assert first.model["engine"] == "fake trusted path" and first.model["key"] == "ir/int8_sym/123/cpu-f32"
    # bit-identical twin runs: the floor is the minimum, so rounding elsewhere is not a failure
    assert first.noise_floor["measured_kl_mean"] < 1e-9 and first.noise_floor["kl_mean"] == sw.MIN_FLOOR
    assert first.noise_floor["phases"]["decode"]["kl_mean"] == sw.MIN_FLOOR

    second, same_path, reused = sw.get_or_compute(tmp_path, fake_twin(opened), hf_stub())  # another runner
    assert reused and same_path == path and opened == ["reference", "floor"]
    assert second.prompts == first.prompts
    # another model of the same name (and, here, the same artefact key): its own reference
    assert sw.path_for(tmp_path, hf_stub(checksum="other"), fake_twin([])) != path
    data = json.loads(path.read_text())
    data["model"]["checksum"] = "other"
    path.write_text(json.dumps(data))  # edited in place: refused, naming the part
    with pytest.raises(StoredContentError, match=r"same-weights reference .*model\.checksum"):
        sw.get_or_compute(tmp_path, fake_twin(opened), hf_stub())
    path.write_text(json.dumps(sealed.seal(data)))  # sealed again: the key check refuses it
    with pytest.raises(ReferenceMismatch, match="model checksum differs"):
        sw.get_or_compute(tmp_path, fake_twin(opened), hf_stub())
    assert sw.path_for(tmp_path, hf_stub(), fake_twin([], key="ir/int4_sym/99/cpu-f32")) != path


def test_a_measured_floor_above_the_minimum_is_kept(tmp_path):
    reference, _, _ = sw.get_or_compute(tmp_path, fake_twin([], floor_skew=0.05), hf_stub())
    assert reference.noise_floor["kl_mean"] == reference.noise_floor["measured_kl_mean"] > sw.MIN_FLOOR


# --- end to end ------------------------------------------------------------------------------------


def test_unquantized_points_and_adapters_without_a_twin_say_why(write_scenario, reference_dir, tiny_llama):
    from harness.adapters.hf import HFAdapter

    class QuantizedHF(HFAdapter):
        """An engine whose weights are an approximation and that has no second path to run them on."""

        name = "hf-no-twin"

        def runs_quantized(self, point):
            return True

    records = verify(write_scenario, reference_dir, ["hf", "hf-no-twin"], "cpu", ["none"], [QuantizedHF])
    plain = records["hf", "none"].correctness
    assert plain.verdict == "pass" and plain.same_weights.skipped == sw.UNQUANTIZED
    no_twin = records["hf-no-twin", "none"].correctness
    assert (
        no_twin.same_weights.skipped
        == "hf-no-twin has no trusted twin: no second engine path runs this point's own weights"
    )
    assert no_twin.same_weights.verdict is None and no_twin.verdict == "pass"


@needs_openvino
def test_device_side_faults_on_an_int8_point_fail_against_its_own_weights(write_scenario, reference_dir, tiny_llama):
    from tests.faults_ov import DecodePosition, HalvedHead, ZeroedHead

    faults = [
        type(cls.__name__, (cls,), {"name": f"openvino-{cls.__name__.lower()}"})
        for cls in (DecodePosition, ZeroedHead, HalvedHead)
    ]
    stored = reference_dir / "tiny-llama" / "same-weights"
    before = set(stored.glob("*.json"))  # the session's store: other tests keep theirs here too
    records = verify(
        write_scenario, reference_dir, ["openvino", *(f.name for f in faults)], "CPU", ["none", "int8_sym"], faults
    )

    clean = records["openvino", "int8_sym"].correctness
    assert clean.verdict in ("drift", "pass") and clean.same_weights.model_verdict == clean.verdict
    own = clean.same_weights
    assert own.verdict == "pass", own.reasons
    assert own.kl_ratio < 5 and own.noise_floor >= sw.MIN_FLOOR and own.mode == "both"
    assert "CPU plugin" in own.engine and own.weights.endswith("int8_sym/openvino_model.bin")
    assert records["openvino", "none"].correctness.same_weights.skipped == sw.UNQUANTIZED

    for fault in faults:
        gate = records[fault.name, "int8_sym"].correctness
        assert gate.verdict == "fail" and gate.same_weights.verdict == "fail", (fault.name, gate.same_weights.reasons)
        assert gate.same_weights.report.startswith("gate FAIL")
    # Half of one head's output hides in the quantization cost against HF, not against its own weights.
    halved = records["openvino-halvedhead", "int8_sym"].correctness
    assert halved.same_weights.model_verdict == "drift"
    assert any("against its own weights the point is" in reason for reason in halved.reasons)
    # One twin reference for the IR, shared by every INT8 point (the faults live in the device path only).
    assert len(set(stored.glob("*.json")) - before) <= 1
    int8 = [records[name, "int8_sym"].correctness.same_weights for name in ["openvino", *(f.name for f in faults)]]
    assert len({part.created_at for part in int8}) == 1


@needs_openvino
def test_the_openvino_twin_runs_one_path_on_every_cpu(tiny_llama):
    """The twin pins f32 and dynamic quantization off: a CPU with int8 dot products (AVX512-VNNI, AVX-VNNI)
    would otherwise quantize its matmuls' inputs where an AVX2-only one does not, under one reference key."""
    from harness.adapters.openvino import ir_export, twin
    from harness.models.sources import cache_dir
    from harness.records.precision import from_openvino_type

    ir_dir = ir_export.artefact(tiny_llama, "int8_sym", {}, cache_dir())
    found = twin.twin(ir_dir, 2)
    with found.open("reference") as steps:
        steps.prefill([0, 1])
        compiled = steps._request.get_compiled_model()
        assert compiled.get_property("DYNAMIC_QUANTIZATION_GROUP_SIZE") == 0
        assert from_openvino_type(compiled.get_property("INFERENCE_PRECISION_HINT")) == "f32"
    assert "no dynamic quantization" in found.engine and found.key.endswith("/cpu-f32-nodq")


@needs_llamacpp
def test_a_quantized_gguf_passes_against_the_same_gguf_on_the_cpu_backend(write_scenario, reference_dir, tiny_llama):
    records = verify(write_scenario, reference_dir, ["llamacpp"], "cpu", ["int8_sym"])
    gate = records["llamacpp", "int8_sym"].correctness
    own = gate.same_weights
    assert own.verdict == "pass", own.reasons
    assert own.model_verdict == gate.verdict in ("drift", "pass")
    assert "llama.cpp CPU backend" in own.engine and own.weights.endswith("Q8_0/model.gguf")
