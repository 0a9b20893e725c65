"""The prefill phase at the last N prompt positions (issue #29): ``gate.prefill_positions``.

One prefill position per prompt left the prefill phase two positions on the ``ci`` prompts, pooled into the
overall mean: a fault only the prefill runs (tests/faults.py ``PrefillQueryOffset``: the last layer's
queries rotated a position ahead in a multi-token forward, the cache and every decode step exact) passed.
With each prompt's last 8 prefixes prefilled on the point's own path, the phase has 8 x prompts positions,
is judged against its own floor, and fails the fault; the clean engine passes.
"""

from __future__ import annotations

import json
import re

import pytest

from harness import cli
from harness.records import store
from tests import faults
from tests.conftest import registered


class PrefillFaultHF(faults.PrefillQueryOffset):
    name = "hf-prefillfault"


SCENARIO = """
model: tiny-llama
generation: {max_new_tokens: 4}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}
gate: {tokens: 16, prompts: 2, length: short, PREFILL}
sweep:
  adapter: [hf, hf-prefillfault]
  device: [cpu]
"""


@pytest.fixture
def prefill_fault(tiny_llama):
    yield from registered([PrefillFaultHF])


def run(write_scenario, tmp_path, reference_dir, prefill: str = "k: 5"):
    path = write_scenario(SCENARIO.replace("PREFILL", prefill))
    results = ["--results", str(tmp_path / "results"), "--reference-dir", str(reference_dir)]
    code = cli.main(["run", str(path), *results, "--no-progress", "--isolation", "none"])
    records = {r.point["adapter"]: r.correctness for _, r in store.iter_records(tmp_path / "results" / "scenario")}
    return code, records


def test_a_prefill_only_fault_fails_by_its_prefill_phase_through_harness_run(
    write_scenario, tmp_path, capsys, prefill_fault, reference_dir
):
    code, records = run(write_scenario, tmp_path, reference_dir)
    clean, broken = records["hf"], records["hf-prefillfault"]
    for gate in (clean, broken):  # 8 prefill positions on each of the 2 prompts, judged on their own
        assert gate.phases.prefill.positions == 16 and not gate.phases.prefill.pooled
        assert [len(p.prefill_kl) for p in gate.prompts] == [8, 8]
        assert len(gate.reference.noise_floor["prefill_positions"][0]) == 8
    assert clean.verdict == "pass" and clean.phases.prefill.verdict == "pass", clean.reasons
    assert code == 1 and broken.verdict == "fail", broken.reasons
    prefill = broken.phases.prefill
    assert prefill.verdict in ("drift", "fail") and prefill.test.margin >= 3, prefill
    assert broken.phases.decode.verdict == "pass"  # the cache is right: every decode step is exact
    assert any(r.startswith("prefill-phase mean KL") for r in broken.reasons), broken.reasons
    out = capsys.readouterr().out
    assert "prefill-phase mean KL is" in out and "over 16 positions" in out  # the printed failure


def test_the_same_fault_passes_with_one_prefill_position_per_prompt(
    write_scenario, tmp_path, prefill_fault, reference_dir
):
    """What the gate did before the prefill phase was widened: the prompt's last position only."""
    code, records = run(write_scenario, tmp_path, reference_dir, "prefill_positions: 1")
    broken = records["hf-prefillfault"]
    assert broken.phases.prefill.positions == 2 and broken.phases.prefill.pooled
    assert code == 0 and broken.verdict == "pass", broken.reasons


def test_harness_verify_prints_the_prefill_phase_and_fails_the_fault(
    write_scenario, tmp_path, capsys, prefill_fault, reference_dir
):
    path = write_scenario(SCENARIO.replace("PREFILL", "k: 5"))  # the reference of the harness run test above
    results = ["--results", str(tmp_path / "results"), "--reference-dir", str(reference_dir)]
    assert cli.main(["verify", str(path), *results, "--isolation", "none"]) == 1
    out = capsys.readouterr().out
    clean = next(line for line in out.splitlines() if line.startswith("PASS   scenario::hf-cpu-bf16:"))
    assert re.search(r"prefill phase [0-9.]+x its floor \(16 positions\)", clean), clean
    assert "FAIL   scenario::hf-prefillfault-cpu-bf16:" in out


LONG = """
model: tiny-llama
generation: {max_new_tokens: 4}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}
gate: {tokens: 4, prompts: 1, length: 200, long_prompts: 2}
sweep:
  adapter: [hf]
"""


def test_a_long_prompt_gets_fewer_prefill_positions_and_the_record_says_so(
    write_scenario, tmp_path, tiny_llama, monkeypatch
):
    from harness.correctness import prefill

    monkeypatch.setattr(prefill, "PREFILL_TOKENS", 512)  # 4096 in use: a 200-token prompt shows the cap here
    path = write_scenario(LONG)
    args = ["run", str(path), "--results", str(tmp_path / "results"), "--no-progress", "--isolation", "none"]
    assert cli.main(args) == 0
    ((_, record),) = store.iter_records(tmp_path / "results" / "scenario")
    gate = record.correctness
    # the short prompt and the `long` one (a 16-token head) get 8; the `long-prefill` one, 196 tokens
    # prefilled per position, gets 512 // 196 = 2
    assert [p.kind for p in gate.prompts] == ["plain", "long", "long-prefill"]
    assert [len(p.prefill_kl) for p in gate.prompts] == [8, 8, 2]
    assert gate.phases.prefill.positions == 18
    assert any("prompt 2 (196 tokens): 2" in note for note in gate.notes), gate.notes


def test_a_reference_stored_before_prefill_positions_is_refused_and_rebuilt_on_request(tmp_path, tiny_llama):
    from harness.correctness.reference import ReferenceSettings, ReferenceStore
    from harness.correctness.stored_reference import Reference, ReferenceMismatch
    from harness.models.prompts import select_gate_prompts

    store_ = ReferenceStore(tmp_path)
    pairs, settings = select_gate_prompts(2), ReferenceSettings(tokens=4, threads=2)
    first, path, _ = store_.get_or_compute(tiny_llama, pairs, settings)
    assert [len(p.prefill_top_ids) for p in first.prompts] == [8, 8] and first.schema_version == 3
    data = json.loads(path.read_text())  # as version 1 wrote it: no prefill positions, no digest
    data["schema_version"] = 1
    del data["noise_floor"]["prefill_positions"], data["content_sha256"]
    for prompt in data["prompts"]:
        del prompt["prefill_top_ids"], prompt["prefill_top_logprobs"]
    path.write_text(json.dumps(data))
    assert Reference.from_dict(data).prompts[0].prefill_top_ids == []  # still parses (same-weights ones)
    with pytest.raises(ReferenceMismatch, match=r"schema_version 1, this one reads 3\); rebuild it with --refresh"):
        store_.get_or_compute(tiny_llama, pairs, settings)
    again, again_path, reused = store_.get_or_compute(tiny_llama, pairs, settings, refresh=True)
    assert not reused and again_path == path
    assert json.loads(path.read_text())["schema_version"] == 3 and len(again.prompts[1].prefill_top_ids) == 8
    _, _, reused = store_.get_or_compute(tiny_llama, pairs, settings)
    assert reused
    fewer = ReferenceSettings(tokens=4, threads=2, prefill_positions=3)  # another setting, another reference
    other, other_path, _ = store_.get_or_compute(tiny_llama, pairs, fewer)
    assert other_path != path and [len(p.prefill_top_ids) for p in other.prompts] == [3, 3]


class TopSwapHF(faults.PrefillTailTopSwap):
    name = "hf-topswap"


def test_a_top1_flip_at_a_prefill_position_fails_the_prefill_top_k_check(write_scenario, tmp_path, capsys, tiny_llama):
    """The fault flips the top-1 out of the reference's top-5 on the prefix two tokens short of each prompt:
    the whole prompt's prefill (teacher-forced position 0, free running) and every decode are exact, and one
    position of 8 per prompt moves the prefill phase's KL to drift at most, which a quantized point only
    reports. The prefill positions get the two-way top-k check every teacher-forced position gets, so the
    point fails by it (it drifted before), the table naming the prefix."""
    from harness.adapters import registry
    from harness.models.prompts import encode_gate_prompts, select_gate_prompts

    ids = encode_gate_prompts(tiny_llama.tokenizer(), tiny_llama.hf_dir, select_gate_prompts(2))
    whole = {len(p) for p in ids}
    cls = type("TopSwap", (TopSwapHF,), {"lengths": frozenset(len(p) - 2 for p in ids) - whole})
    assert len(cls.lengths) == 2, whole
    gate = "k: 5, fail_on_drift: false"  # as on a quantized point: the KL tier's drift is only reported
    path = write_scenario(SCENARIO.replace("PREFILL", gate).replace("hf-prefillfault", "hf-topswap"))
    registry.register_adapter(cls)
    try:
        args = ["verify", str(path), "--results", str(tmp_path / "results"), "--isolation", "none"]
        assert cli.main(args) == 1  # in this process: the fault's lengths are set here
    finally:
        registry.unregister_adapter(cls.name)
    out = capsys.readouterr().out
    records = {r.point["adapter"]: r.correctness for _, r in store.iter_records(tmp_path / "results" / "scenario")}
    clean, broken = records["hf"], records["hf-topswap"]
    assert clean.verdict == "pass" and all(p.prefill_ok for p in clean.prompts), clean.reasons
    assert broken.verdict == "fail", broken.reasons
    assert broken.reasons == ["prefill top-5 check failed on prompt(s) [0, 1]"]
    assert broken.phases.prefill.verdict in ("pass", "drift")  # alone, reported (drift fails no point here)
    assert [(p.forced_ok, p.free_ok, p.prefill_violations) for p in broken.prompts] == [(True, True, 1)] * 2
    length = len(ids[0]) - 2
    assert f"position {length}: prefill of the first {length} prompt tokens: device token" in out, out
    # The tie margin holds at the prefill positions only under the prefill fail line: on the chat prompt the
    # swapped-in 6th sat 0.078 nats under the 5th, inside the margin, but that position's KL is far over the line.
    line = broken.prefill_tie_line
    assert line == pytest.approx(100 * broken.phases.prefill.noise_floor) and broken.prompts[1].topk_ties == 0
    assert any(c.startswith("topk-prefill where the position's KL <= ") for c in broken.tie_margin_checks)
    (chat,) = [f for f in broken.prompts[1].failures if "prefill of the first" in f.why]
    found = re.search(
        r"\(([0-9.]+) nats, within the 0.1-nat tie margin, but the position's KL ([0-9.]+) is above", chat.why
    )
    assert found, chat.why
    gap, kl = map(float, found.groups())
    assert gap < 0.1 and kl >= 3 * line, (gap, kl, line)  # 0.078 nats; 0.17 nats against a line of 0.033


class NearTieHF(faults.PrefillNearTieFlip):
    name = "hf-neartie"


def test_a_near_tie_flipped_at_a_prefill_position_under_the_fail_line_passes(write_scenario, tmp_path, tiny_llama):
    """Rounding flips a near tie: on every shorter prefix where the top-1 leads its second by at most 0.08 nats,
    the engine swaps them. At k = 1 each flip misses the prefill top-1 check inside the 0.1-nat tie margin, while
    the position's KL stays far under the prefill fail line (drift fails this unquantized point: 5x its floor),
    so the point passes, with the near ties counted (it failed before the prefill positions took the margin)."""
    from harness.adapters import registry
    from harness.models.prompts import encode_gate_prompts, select_gate_prompts

    ids = encode_gate_prompts(tiny_llama.tokenizer(), tiny_llama.hf_dir, select_gate_prompts(2))
    shorter = frozenset(len(p) - j for p in ids for j in range(1, 8)) - {len(p) for p in ids}
    cls = type("NearTie", (NearTieHF,), {"lengths": shorter, "flips": []})
    path = write_scenario(SCENARIO.replace("PREFILL", "k: 1").replace("hf-prefillfault", "hf-neartie"))
    registry.register_adapter(cls)
    try:
        args = ["verify", str(path), "--results", str(tmp_path / "results"), "--isolation", "none"]
        assert cli.main(args) == 0  # in this process: the fault's lengths are set here
    finally:
        registry.unregister_adapter(cls.name)
    records = {r.point["adapter"]: r.correctness for _, r in store.iter_records(tmp_path / "results" / "scenario")}
    tied = records["hf-neartie"]
    assert cls.flips, "no near tie on these prompts: the test proves nothing"
    assert tied.verdict == "pass" and all(p.prefill_ok for p in tied.prompts), tied.reasons
    line = tied.prefill_tie_line
    assert line == pytest.approx(5 * tied.phases.prefill.noise_floor)  # drift fails an unquantized point
    assert sum(p.topk_ties for p in tied.prompts) == len(cls.flips)  # one near tie per flip, each counted
    assert max(kl for p in tied.prompts for kl in p.prefill_kl) * 3 <= line  # far under the line
    assert tied.phases.prefill.kl_ratio < 5  # under the drift line
