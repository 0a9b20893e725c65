"""A gate failure names the rule that failed it. A point failed by the drift rule (KL above the drift line
where drift fails the point) was printed by ``harness gate`` as "top-5 agreement fails" although every
top-k check held, sending the reader to the wrong check."""

from __future__ import annotations

from harness.cli.app import main
from harness.correctness import gate
from harness.correctness.stored_reference import PromptReference, Reference
from harness.records import store
from harness.records.correctness import PromptResult
from harness.records.gate_verdicts import DRIFT_RULE, KL_TIER, TOP_K
from harness.scenario.gate_section import Gate
from tests.records import record


def _conclude(prompts, fail_on_drift: bool):
    heads = [PromptReference("plain", f"p{i}", [1, 2], [3], [[3]], [[0.0]]) for i in range(len(prompts))]
    reference = Reference(
        model={}, settings={"top_m": 8, "eos_ids": []}, versions={}, noise_floor={"kl_mean": 0.01}, prompts=heads
    )
    settings = Gate(k=5, fail_on_drift=fail_on_drift).settings(quantized=False)
    return gate._conclude(prompts, reference, settings, "both")


def _prompt(kl: float, topk_ok: bool = True) -> PromptResult:
    return PromptResult(prompt=0, kind="plain", free_ok=topk_ok, forced_ok=True, kl_mean=kl, position_kl=[kl] * 10)


def test_the_gate_records_which_rule_failed_it():
    assert _conclude([_prompt(0.06)], fail_on_drift=True).failed_by == [DRIFT_RULE]  # 6x: drift, failing
    assert _conclude([_prompt(0.06)], fail_on_drift=False).failed_by == []  # drift reported, nothing failed
    assert _conclude([_prompt(5.0)], fail_on_drift=False).failed_by == [KL_TIER]  # 500x: above the fail line
    assert _conclude([_prompt(0.01, topk_ok=False)], fail_on_drift=False).failed_by == [TOP_K]
    both = _conclude([_prompt(5.0, topk_ok=False)], fail_on_drift=True)
    assert both.failed_by == [TOP_K, KL_TIER] and both.failure_label() == "top-5 agreement and KL tier"


def test_harness_gate_names_the_drift_rule_not_top_k_agreement(tmp_path, capsys):
    base, new = tmp_path / "base", tmp_path / "new"
    store.write(record("p", tpot_ms=40.0, seed=0), base)
    drifted = _conclude([_prompt(0.06)], fail_on_drift=True)
    assert drifted.verdict == "fail" and all(p.free_ok and p.forced_ok for p in drifted.prompts)
    failed = record("p", tpot_ms=40.0, seed=1, verdict="fail").model_copy(update={"correctness": drifted})
    store.write(failed, new)
    assert main(["gate", str(new), "--baseline", str(base)]) == 1
    out = capsys.readouterr().out
    assert "FAIL demo::p: correctness: drift rule fails: mean KL is 6.0x its noise floor" in out, out
    assert "agreement fails" not in out, out
