"""Gate lengths (harness.correctness.lengths) and position buckets (harness.correctness.positions): the
rules, the shipped scenarios that sweep a length, and ``harness reference`` computing each length once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import app as cli
from harness.correctness import lengths, positions
from harness.records.correctness import PromptResult
from harness.run import planning
from harness.scenario.gate_section import Gate

REPO = Path(__file__).parents[2]
LENGTH_AXES = ("prompt_len", "max_seq_len", "moe_chunk_size")


def model_dir(tmp_path: Path, **config) -> Path:
    (tmp_path / "config.json").write_text(json.dumps(config))
    return tmp_path


@pytest.mark.parametrize(
    "setting, prompt_len, max_seq_len, config, expected",
    [
        ("auto", None, None, {"sliding_window": 512}, None),  # a point without a length axis: short only
        ("auto", 32, None, {"sliding_window": 512}, 1024),  # raised to twice the window
        ("auto", 1024, None, {"sliding_window": 512}, 1056),  # the point's context
        ("auto", 32, 256, {"sliding_window": 512}, 256),  # capped by the static cache
        ("auto", 32, 2048, {"sliding_window": 512}, 1024),
        ("auto", 4096, None, {"sliding_window": None, "max_position_embeddings": 2048}, 2048),
        ("auto", 32, None, {"sliding_window": 4096, "use_sliding_window": False}, 64),  # Qwen2: off
        ("auto", 32, None, {"text_config": {"sliding_window": 64}}, 128),  # multimodal configs
        (300, None, None, {}, 300),
        ("short", 1024, None, {"sliding_window": 512}, None),
    ],
)
def test_the_gate_length_follows_the_point_and_the_window(
    tmp_path, setting, prompt_len, max_seq_len, config, expected
):  # (unit)
    found = lengths.plan(setting, 2, prompt_len, max_seq_len, 32, model_dir(tmp_path, **config))
    assert (found.length if found else None) == expected


def test_long_prompts_alternate_kinds_and_split_at_their_head():  # (unit)
    kinds = [kind for kind, _ in lengths.pairs(3)]
    assert kinds == ["long", "long-prefill", "long"]
    ids = list(range(100))
    assert lengths.split("long", ids, 32) == (ids[:16], ids[16:])
    assert lengths.split("long-prefill", ids, 32) == (ids[:68], ids[68:])


def test_position_buckets_and_their_floors():  # (unit)
    assert [positions.bucket_of(p) for p in (0, 63, 64, 255, 256, 511, 512, 1500, 5000)] == [
        (0, 63),
        (0, 63),
        (64, 255),
        (64, 255),
        (256, 511),
        (256, 511),
        (512, 1023),
        (1024, 2047),
        (4096, 8191),
    ]
    floor = {"kl_mean": 1e-3, "buckets": positions.floors([[1e-3] * 100], [10])}
    found = positions.buckets([[1e-3] * 54 + [1.0] * 46], [10], floor, 5.0, 100.0)
    assert [(b.start, b.verdict) for b in found] == [(0, "pass"), (64, "fail")]
    assert positions.rises_at(found).start == 64
    assert "rises at positions 64-255" in positions.describe(found)
    one = positions.buckets([[1.0] * 20], [10], floor, 5.0, 100.0)
    assert one[0].verdict is None  # one bucket is the overall mean, judged already


def test_every_shipped_scenario_that_sweeps_a_length_has_a_gate_at_its_length():  # (unit)
    swept = []
    for path in sorted((REPO / "scenarios").glob("*.yaml")):
        scenario = planning.load(path)
        values = {
            axis: set(getattr(scenario.sweep, axis)) | {entry[axis] for entry in scenario.include if axis in entry}
            for axis in LENGTH_AXES
        }
        values = {axis: found for axis, found in values.items() if len(found) > 1}  # swept: several lengths
        if values:
            swept.append(path.name)
            assert scenario.gate is not None, f"{path.name} sweeps {sorted(values)} without a gate"
            assert scenario.gate.length != "short", path.name
    assert {"prompt_len.yaml", "max_seq_len.yaml", "nitro_max_seq.yaml", "moe_chunks.yaml"} <= set(swept)


SCENARIO = """
model: tiny-mistral
generation: {max_new_tokens: 4}
measurement: {threads: 1}
gate: {tokens: 8, prompts: 1, long_prompts: 1}
sweep:
  adapter: [hf]
  prompt_len: [40, 100, 200]
"""


def test_harness_reference_computes_each_gate_length_once(write_scenario, tmp_path, capsys):
    path = write_scenario(SCENARIO)
    store = tmp_path / "references"
    assert cli.main(["reference", str(path), "--reference-dir", str(store)]) == 0
    out = capsys.readouterr().out
    # prompt 40 and 100: twice the 64-token window (128); prompt 200: its context 204
    assert "gate length 128 for hf-cpu-bf16-prompt40: twice the sliding window 64" in out
    assert "gate length 204 for hf-cpu-bf16-prompt200: the point's context 204" in out
    stored = [json.loads(p.read_text()) for p in sorted((store / "tiny-mistral").glob("*.json"))]
    assert sorted(ref["settings"]["length"] for ref in stored) == [128, 204]  # 128 once, for two points
    for ref in stored:
        long = next(p for p in ref["prompts"] if p["kind"] == "long")
        assert len(long["prompt_ids"]) == lengths.HEAD
        assert len(long["prompt_ids"]) + len(long["tokens"]) == ref["settings"]["length"]
        assert [b["start"] for b in ref["noise_floor"]["buckets"]] == [0, 64]


def test_a_fault_in_one_late_bucket_fails_the_point_though_the_mean_stays_under_the_fail_line():  # (unit)
    from harness.correctness import gate
    from harness.correctness.stored_reference import PromptReference, Reference

    kls = [1e-3] * 240 + [0.2] * 40  # positions 16-255 at the floor, 256-295 at 200x
    prompt = PromptReference("long", "text", list(range(16)), [0] * 280, [[0]] * 280, [[0.0]] * 280)
    floor = {"kl_mean": 1e-3, "buckets": positions.floors([[1e-3] * 280], [16])}
    reference = Reference(
        model={}, settings={"top_m": 64, "eos_ids": []}, versions={}, noise_floor=floor, prompts=[prompt]
    )
    result = gate._conclude(
        [PromptResult(prompt=0, kind="long", forced_ok=True, kl_mean=sum(kls) / len(kls), position_kl=kls)],
        reference,
        Gate().settings(quantized=False),
        "forced",
    )
    assert result.kl_ratio < 100  # the mean over every position: 29x, under the fail line
    assert result.verdict == "fail"
    assert any(reason.startswith("positions 256-511 mean KL") for reason in result.reasons), result.reasons
