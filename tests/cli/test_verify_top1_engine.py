"""``harness verify`` on an engine that exposes only its chosen tokens (the top-1 gate: no KL tier)."""

from __future__ import annotations

from harness.adapters import registry
from harness.cli.app import main
from harness.errors import Unsupported
from tests.fakes import FakeAdapter


class ForcedTop1Adapter(FakeAdapter):
    """Like GenAI's static NPU pipeline: no step-wise logits, only the token it picks at each position."""

    name = "fake-top1"
    supports_logits = False
    supports_forced_top1 = True
    wrong_at: int | None = None  # a position where it picks a token outside the reference's top-k

    def prefill(self, tokens):
        raise Unsupported("fake-top1 has no step-wise logits")

    def decode(self, token):
        raise Unsupported("fake-top1 has no step-wise logits")

    def teacher_forced_top1(self, prompt_ids, tokens):
        chosen = list(tokens)
        if self.wrong_at is not None:
            chosen[self.wrong_at] = 10**6  # never in a top-k
        return chosen


class WrongTop1Adapter(ForcedTop1Adapter):
    name = "fake-top1-wrong"
    wrong_at = 1


SCENARIO = """
model: tiny-llama
generation: {max_new_tokens: 4}
measurement: {threads: 2}
gate: {tokens: 4, prompts: 1}
sweep:
  adapter: [ADAPTER]
"""


def verify(write_scenario, tmp_path, adapter):
    registry.register_adapter(ForcedTop1Adapter)
    registry.register_adapter(WrongTop1Adapter)
    try:
        path = write_scenario(SCENARIO.replace("ADAPTER", adapter))
        return main(["verify", str(path), "--results", str(tmp_path / "results"), "--isolation", "none"])
    finally:
        registry.unregister_adapter(ForcedTop1Adapter.name)
        registry.unregister_adapter(WrongTop1Adapter.name)


def test_verify_prints_a_top1_verdict_without_kl_and_exits_by_it(write_scenario, tmp_path, capsys, tiny_llama):
    # Before: TypeError formatting kl_mean (None) with :.3g.
    assert verify(write_scenario, tmp_path, "fake-top1") == 0
    out = capsys.readouterr().out
    assert "PASS   scenario::fake-top1-cpu-bf16: top-5 forced-top1, top-1 match 100%, no KL tier" in out
    assert verify(write_scenario, tmp_path, "fake-top1-wrong") == 1
    out = capsys.readouterr().out
    assert "FAIL   scenario::fake-top1-wrong-cpu-bf16: top-5 forced-top1, top-1 match 75%, no KL tier" in out
