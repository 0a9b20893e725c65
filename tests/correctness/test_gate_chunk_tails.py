"""Chunked prefill brings gate prompts that end in a partial tail chunk (issue #39): at a chunk larger than
every shipped short prompt, a fault of the tail chunk alone (tests/faults.py ``TailChunkPositionsRestart``)
never runs on the short prompts; the point's ``moe_chunk_size`` brings long prompts whose prefill is a full
chunk and a tail of half a chunk, and the fault fails through ``harness run``."""

from __future__ import annotations

import json

import pytest

from harness import cli
from harness.correctness import lengths
from harness.records import store
from tests import faults
from tests.conftest import registered


@pytest.mark.parametrize(
    "setting, prompt_len, chunk, expected",
    [
        ("auto", None, None, None),  # no length axis, no chunks: the short prompts only
        ("auto", None, 64, 64 + 32 + 16),  # one chunk, a tail of half a chunk, then the teacher-forced tokens
        ("auto", None, 4, 4 + 3 + 16),  # small chunks: a tail of chunk - 1
        ("auto", 200, 64, 200),  # the context's prefill (184) is 2 chunks and a tail of 56: kept
        ("auto", 176, 64, 176),  # a prefill of 160 = 2 chunks + 32: a tail of 32 already
        ("auto", 144, 64, 112),  # a prefill of 128 ends on a chunk boundary: lowered to one chunk and a tail
        ("short", None, 64, None),
        (300, None, 64, 300),  # an explicit length is the user's
    ],
)
def test_a_chunked_point_gets_long_prompts_ending_in_a_partial_tail_chunk(
    tmp_path, setting, prompt_len, chunk, expected
):  # (unit)
    (tmp_path / "config.json").write_text(json.dumps({"max_position_embeddings": 8192}))
    found = lengths.plan(setting, 2, prompt_len, None, 0, tmp_path, chunk=chunk, tokens=16)
    assert (found.length if found else None) == expected
    if found is not None and chunk and setting == "auto":
        head = found.length - 16  # the long-prefill prompt's prefill
        assert head >= chunk and head % chunk >= lengths.chunk_tail(chunk), (head, chunk)


class TailFaultHF(faults.TailChunkPositionsRestart):
    name = "hf-tailfault"


CHUNKED = """
model: tiny-llama
generation: {max_new_tokens: 4}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}
gate: {tokens: 16, prompts: 2, length: LENGTH}
sweep:
  adapter: [hf, hf-tailfault]
  moe_chunk_size: [64]
"""


@pytest.fixture
def tail_fault(tiny_llama):
    yield from registered([TailFaultHF])


def test_a_tail_chunk_fault_at_a_chunk_larger_than_the_short_prompts_fails_through_harness_run(
    write_scenario, tmp_path, tail_fault
):
    path = write_scenario(CHUNKED.replace("LENGTH", "auto"))
    assert cli.main(["run", str(path), "--results", str(tmp_path), "--no-progress", "--isolation", "none"]) == 1
    records = {record.point_id: record for _, record in store.iter_records(tmp_path / "scenario")}
    clean = records["hf-cpu-bf16-chunk64"].correctness
    broken = records["hf-tailfault-cpu-bf16-chunk64"].correctness
    assert clean.length == broken.length == 112
    assert clean.verdict == "pass", clean.reasons
    assert broken.verdict == "fail", broken.reasons
    ratios = [broken.kl_ratio, broken.phases.prefill.kl_ratio, broken.phases.decode.kl_ratio]
    ratio = max(r for r in ratios if r is not None)
    print(f"tail fault: kl ratios {ratios}, clean {clean.kl_ratio} {clean.phases.prefill.kl_ratio}")
    assert ratio >= 3 * 100, (ratio, broken.reasons)  # 3x over the fail line


def test_the_same_fault_passes_the_short_prompts_alone(write_scenario, tmp_path, tail_fault):
    """The gate before chunks brought long prompts: every short prompt is one partial chunk, the fault never runs."""
    path = write_scenario(CHUNKED.replace("LENGTH", "short"))
    assert cli.main(["verify", str(path), "--results", str(tmp_path), "--isolation", "none"]) == 0
    records = {record.point_id: record for _, record in store.iter_records(tmp_path / "scenario")}
    broken = records["hf-tailfault-cpu-bf16-chunk64"].correctness
    assert broken.verdict == "pass" and broken.kl_ratio < 2, broken.reasons
