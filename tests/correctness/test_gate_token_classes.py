"""KL and top-1 agreement per token class, and the flip rate (issue #39): a fault that corrupts only digits
(tests/faults.py ``DigitPositionsNoise``: the last hidden state of every position fed a digit perturbed) passes
the gate's overall KL tiers, pooled with the words around it, and fails by its token class on the shipped
copy-fidelity prompts (``gate.copy_prompts``); the clean engine, the engine in fp32 and eager attention pass."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness import cli
from harness.correctness import class_check, token_classes
from harness.records import store
from tests import faults
from tests.conftest import registered


class DigitFaultHF(faults.DigitPositionsNoise):
    name = "hf-digitfault"


class Fp32HF(faults.HFAdapter):
    """Benign: the engine in fp32 against the bf16 reference."""

    name = "hf-fp32"

    def load(self, model, point, settings):
        super().load(model, point, replace(settings, dtype="fp32"))


class EagerHF(faults.EagerAttention):
    name = "hf-eager"


SCENARIO = """
model: tiny-llama
generation: {max_new_tokens: 4}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}
gate: {tokens: 16, prompts: all, length: short, COPY}
sweep:
  adapter: [hf, hf-fp32, hf-eager, hf-digitfault]
"""


@pytest.fixture
def variants(tiny_llama):
    yield from registered([DigitFaultHF, Fp32HF, EagerHF])


def verify(write_scenario, tmp_path, copy: str):
    path = write_scenario(SCENARIO.replace("COPY", copy))
    results = ["--results", str(tmp_path / "results"), "--reference-dir", str(tmp_path / "refs")]
    code = cli.main(["verify", str(path), *results, "--isolation", "none"])
    records = {r.point["adapter"]: r.correctness for _, r in store.iter_records(tmp_path / "results" / "scenario")}
    return code, records


def show(gates, tmp_path) -> None:
    from harness.correctness import stored_reference

    found = [stored_reference.read(p, "reference") for p in (tmp_path / "refs").rglob("*.json")]
    reference = max(found, key=lambda r: len(r.prompts))  # the gate's, not the stop prompts'
    for name, gate in gates.items():
        margins = [
            ref.top_logprobs[i][0] - ref.top_logprobs[i][1]
            for r, ref in zip(gate.prompts, reference.prompts)
            for i, agree in enumerate(r.position_top1)
            if not agree
        ]
        print(f"{name}: flipped at reference margins {sorted(round(m, 3) for m in margins)}; {gate.reasons}")
    for name, gate in gates.items():
        classes = ", ".join(
            f"{c.name} {c.kl_ratio:.2f}x/{c.positions} top1 {c.top1_agreement:.2f} flips {c.flips}/{c.decided}"
            for c in gate.classes.classes
        )
        phases = gate.phases
        print(
            f"{name}: {gate.verdict} overall {gate.kl_ratio:.2f}x prefill {phases.prefill.kl_ratio:.2f}x "
            f"decode {phases.decode.kl_ratio:.2f}x; flips {gate.classes.flips}; {classes}"
        )


def test_a_digits_only_fault_fails_by_its_token_class_while_the_overall_tiers_pass(
    write_scenario, tmp_path, capsys, variants
):
    code, gates = verify(write_scenario, tmp_path, "copy_prompts: 2")
    with capsys.disabled():
        show(gates, tmp_path)
    assert code == 1
    broken = gates["hf-digitfault"]
    digits = next(c for c in broken.classes.classes if c.name == token_classes.DIGITS)
    assert digits.positions >= class_check.MIN_POSITIONS
    assert digits.verdict in ("drift", "fail") and digits.kl_ratio >= 3 * 5, digits  # 3x over the drift line
    assert broken.verdict == "fail" and any(r.startswith("digits positions' mean KL") for r in broken.reasons)
    # the overall tiers alone pass it: every one under the drift line
    assert broken.kl_ratio < 5 and broken.phases.prefill.kl_ratio < 5 and broken.phases.decode.kl_ratio < 5
    assert broken.reasons == [r for r in broken.reasons if "positions' mean KL" in r]  # nothing else failed it
    assert broken.classes.flips.flips > 0 and broken.classes.flips.verdict == "pass"  # flips, under the line
    for name in ("hf", "hf-fp32", "hf-eager"):
        gate = gates[name]
        assert gate.verdict == "pass", (name, gate.reasons)
        assert all(c.verdict in (None, "pass") for c in gate.classes.classes), (name, gate.classes)
        assert gate.classes.flips.flips == 0 and gate.classes.flips.verdict == "pass", (name, gate.classes.flips)
    out = capsys.readouterr().out
    assert "token classes drift (worst digits" in out and "token classes pass (worst" in out
