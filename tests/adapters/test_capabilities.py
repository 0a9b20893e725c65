"""Optional adapter methods are declared by ``supports_*`` flags, read before anything is called; a
``NotImplementedError`` from inside an engine (torch's missing kernel) is a failure, never a skip."""

from __future__ import annotations

import numpy as np
import pytest

from harness.adapters.base import Adapter
from harness.adapters.capabilities import OPTIONAL_METHODS
from harness.correctness import gate
from harness.correctness.logprobs import log_softmax, top_ids
from harness.correctness.outcome import NotRun
from harness.correctness.stored_reference import PromptReference, Reference
from harness.errors import HarnessError, Unsupported
from harness.records.correctness import Correctness
from harness.scenario.gate_section import Gate
from tests.fakes import FakeAdapter


class _Base(Adapter):
    name = "capability-test"
    devices = ("cpu",)

    @classmethod
    def available(cls):
        return True, "test"

    def load(self, model, point, settings):
        pass

    def generate(self, prompts, max_new_tokens):
        raise AssertionError("not used")

    def describe(self):
        return {}


class MissingKernel(_Base):
    """Declares step-wise logits, but the engine's prefill hits a missing kernel (as torch on MPS/XPU)."""

    supports_logits = True

    def prefill(self, tokens):
        raise NotImplementedError("aten::_fused_op is not implemented for the 'mps' backend")

    def decode(self, token):
        raise NotImplementedError("aten::_fused_op is not implemented for the 'mps' backend")


class ChosenTokens(_Base):
    def __init__(self, chosen):
        self.chosen = chosen

    def teacher_forced_top1(self, prompt_ids, tokens):
        return self.chosen


def reference() -> Reference:
    rows = [np.arange(8, dtype=np.float32)[::-1].copy() for _ in range(3)]  # token 0 first everywhere
    tops = [top_ids(log_softmax(r), 8).tolist() for r in rows]
    lps = [log_softmax(r)[t].tolist() for r, t in zip(rows, tops)]
    prompt = PromptReference("plain", "x", [1], [0, 0, 0], tops, lps)
    return Reference(
        model={},
        settings={"top_m": 8, "eos_ids": [7], "tokens": 3},
        versions={},
        noise_floor={"kl_mean": 1e-3},
        prompts=[prompt],
    )


def test_flags_follow_the_methods_a_class_overrides_unless_it_sets_them():
    assert not any(getattr(_Base, flag) for flag in OPTIONAL_METHODS)
    assert FakeAdapter.supports_logits and not FakeAdapter.supports_score  # overrides prefill/decode only
    assert ChosenTokens.supports_forced_top1 and not ChosenTokens.supports_logits

    class Declined(MissingKernel):
        supports_logits = False

    class Inherits(Declined):
        def prefill(self, tokens):
            return np.zeros(8)

    assert not Declined.supports_logits and not Inherits.supports_logits  # an explicit flag is inherited


def test_shipped_adapters_declare_their_capabilities():
    from harness.adapters import registry

    expected = {
        "hf": {
            "supports_logits",
            "supports_score",
            "supports_hidden_states",
            "supports_routing",
            "supports_batch_logits",
            "supports_beam_search",
            "supports_stopping",
            "supports_speculative",
        },
        "openvino": {  # logits, score and forced top-1 narrowed per point in load; GenAI's own text path
            "supports_logits",
            "supports_score",
            "supports_forced_top1",
            "supports_tokenize",
            "supports_chat_template",
            "supports_text_generation",
            "supports_stopping",
            "supports_speculative",
        },
        "llamacpp": {
            "supports_logits",
            "supports_tokenize",
            "supports_chat_template",
            "supports_stopping",
            "supports_speculative",
        },  # its own text path
        "xrt": {"supports_logits"},
        "coreml": {"supports_logits"},
    }
    for name, flags in expected.items():
        cls = registry.get(name)
        assert {flag for flag in OPTIONAL_METHODS if getattr(cls, flag)} == flags, name


def test_default_optional_methods_raise_the_harness_exception():
    adapter = _Base()
    for method, args in (
        ("prefill", ([1],)),
        ("decode", (1,)),
        ("score", ([1], 1)),
        ("teacher_forced_top1", ([1], [2])),
        ("hidden_states", ([1],)),
        ("tokenize", ("text",)),
        ("detokenize", ([1],)),
        ("chat_prompt", ([{"role": "user", "content": "hi"}],)),
        ("prefill_batch", ([[1], [2]],)),
    ):
        with pytest.raises(Unsupported):
            getattr(adapter, method)(*args)
    assert issubclass(Unsupported, HarnessError)


def test_a_missing_kernel_fails_the_gate_instead_of_skipping_it():
    # before: the runner caught NotImplementedError as "no step-wise logits", fell back to the top-1
    # gate, caught it again and recorded the gate as skipped
    with pytest.raises(NotImplementedError, match="not implemented for the 'mps' backend") as raised:
        gate.run(MissingKernel(), reference(), Gate(k=2).settings(quantized=False))
    assert not isinstance(raised.value, Unsupported)


def test_the_gate_picks_its_method_by_flags_and_says_why_it_cannot_run():
    ref = reference()
    full = gate.run(
        FakeAdapter(), ref, Gate(k=2).settings(quantized=False)
    )  # zero logits: argmax is token 0 everywhere
    assert isinstance(full, Correctness) and full.mode == "both"
    top1 = gate.run(ChosenTokens([0, 0, 0]), ref, Gate(k=2).settings(quantized=False))
    assert isinstance(top1, Correctness) and top1.mode == "forced-top1" and top1.verdict == "pass"
    not_run = gate.run(_Base(), ref, Gate(k=2).settings(quantized=False))
    assert isinstance(not_run, NotRun)
    assert not_run.why == "capability-test exposes neither step-wise logits nor forced top-1 tokens on this point"
    assert gate.unsupported_reason(_Base()) == not_run.why and gate.unsupported_reason(FakeAdapter()) is None


def test_a_flag_narrowed_on_the_loaded_instance_wins():
    adapter = FakeAdapter()
    adapter.supports_logits = False  # as the openvino adapter does for its static NPU pipeline
    assert isinstance(gate.run(adapter, reference(), Gate(k=2).settings(quantized=False)), NotRun)


def test_a_missing_kernel_in_one_pass_scoring_is_not_hidden_by_the_stepwise_fallback():
    pytest.importorskip("lm_eval", reason="lm-eval not installed")
    from harness.accuracy.lm_eval_model import HarnessLM

    class BrokenScore(FakeAdapter):
        def score(self, tokens, last):
            raise NotImplementedError("missing kernel")

    lm = HarnessLM.from_adapter(BrokenScore(), tokenizer=None, eos_ids=[7], name="x")
    with pytest.raises(NotImplementedError, match="missing kernel"):  # before: silently scored step-wise
        lm._logprobs([1, 2], [3])
    lm.adapter.supports_score = False
    assert len(lm._logprobs([1, 2], [3, 4])) == 2
    lm.adapter.supports_logits = False
    with pytest.raises(Unsupported, match="log-likelihood tasks cannot be scored"):
        lm._logprobs([1, 2], [3])


class MissingKernelEngine(FakeAdapter):
    """Times like the fake engine; its logits hit a missing kernel."""

    name = "fake-missing-kernel"

    def prefill(self, tokens):
        raise NotImplementedError("aten::_fused_op is not implemented for the 'mps' backend")


def test_a_missing_kernel_in_a_run_fails_the_point_instead_of_skipping_its_gate(write_scenario, tmp_path, tiny_llama):
    from harness.adapters import registry
    from harness.run import planning
    from harness.run.runner import Runner
    from harness.run.settings import RunSettings
    from harness.scenario.sweep import expand

    registry.register_adapter(MissingKernelEngine)
    try:
        loaded = planning.load(
            write_scenario("""
            model: tiny-llama
            prompts: ["The river"]
            generation: {max_new_tokens: 4}
            measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}
            gate: {k: 5, tokens: 4, prompts: ci}
            sweep:
              adapter: [fake-missing-kernel]
            """)
        )
        (point,) = expand(loaded)
        record = Runner(RunSettings(results_dir=tmp_path / "results")).run_point(loaded, point)
    finally:
        registry.unregister_adapter(MissingKernelEngine.name)
    # before: the runner read the NotImplementedError as "no step-wise logits", and the point passed
    # with its gate recorded as skipped
    assert record.status == "failed", (record.status, record.correctness)
    assert "not implemented for the 'mps' backend" in record.reason
