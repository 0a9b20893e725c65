"""The gate at the lengths a point runs: faults that act only past the sliding window, or past position
256, fail on the long prompts by the bucket where they start, and pass the short prompts unseen.

On tiny-mistral (every layer a 64-token sliding window), through ``harness run``: the point's
``prompt_len`` 380 plus 4 new tokens gives a gate length of 384 (``gate.length: auto``); the faults
(tests/faults_long.py) wrap the HF model, the gate's code is the same for all of them.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.adapters.hf import HFAdapter
from harness.cli import app as cli
from harness.records import store
from tests import faults_long


class Fp32HF(HFAdapter):
    """Benign: the device runs fp32 (accumulates and stores in fp32) against the bf16 reference."""

    name = "hf-fp32"

    def load(self, model, point, settings):
        super().load(model, point, dataclasses.replace(settings, dtype="fp32"))


BENIGN = [Fp32HF, *faults_long.BENIGN]
FAIL_FACTOR = 100.0  # the scenario's (the default) fail line

SCENARIO = """
model: tiny-mistral
generation: {max_new_tokens: 4}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 1}
gate: {tokens: 32, prompts: ci, LENGTH}
sweep:
  adapter: [ADAPTERS]
  prompt_len: [380]
"""


def run_gate(write_scenario, tmp_path, name: str, adapters, length: str) -> tuple[int, dict, Path]:
    """``harness run`` on these adapters: (exit code, record by adapter, the results directory)."""
    from harness.adapters import registry

    for cls in adapters:
        registry.register_adapter(cls)
    try:
        text = SCENARIO.replace("ADAPTERS", ", ".join(cls.name for cls in adapters)).replace("LENGTH", length)
        path = write_scenario(text, f"{name}.yaml")
        results = tmp_path / "results"
        args = ["run", str(path), "--results", str(results), "--isolation", "none", "--no-progress"]
        args += ["--reference-dir", str(tmp_path / "references")]
        code = cli.main(args)
    finally:
        for cls in adapters:
            registry.unregister_adapter(cls.name)
    records = {record.point["adapter"]: record for _, record in store.iter_records(results / name)}
    return code, records, results


@pytest.fixture(scope="module")
def mistral(cache_dir):
    from harness.models import sources
    from harness.scenario.schema import ModelSpec

    return sources.resolve(ModelSpec(source="tiny-mistral"), cache_dir)


@pytest.fixture(scope="module")
def long_run(mistral, tmp_path_factory):
    """Every fault and benign variant, with two long prompts (the default)."""
    return _run(tmp_path_factory, "long", [HFAdapter, *BENIGN, *faults_long.FAULTS], "long_prompts: 2")


def _run(tmp_path_factory, name, adapters, length):
    import textwrap

    tmp = tmp_path_factory.mktemp(name)

    def write(text, file):
        path = tmp / "scenarios" / file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
        return path

    return run_gate(write, tmp, name, adapters, length)


def _rises(correctness):
    """(start of the first bucket judged drift or fail, its KL ratio)."""
    first = next(b for b in correctness.buckets if b.verdict in ("drift", "fail"))
    return first.start, first.kl_ratio


# Where each fault starts: the window (64) or position 256.
STARTS = {
    faults_long.SlidingWindowOff: 64,
    faults_long.SlidingWindowDoubled: 64,
    faults_long.KVCacheInt3PastN: 256,
    faults_long.RopePositionsInBf16: 256,
}


def test_the_point_is_gated_at_its_length_with_kl_per_position_bucket(long_run):
    code, records, _ = long_run
    assert code == 1  # the faults fail the run
    clean = records["hf"].correctness
    assert clean.verdict == "pass" and clean.length == 384
    assert [(b.start, b.end) for b in clean.buckets] == [(0, 63), (64, 255), (256, 511)]
    # 2 short prompts x 32 positions, a `long` prompt from position 16 to 383, a `long-prefill` one's last 32
    assert sum(b.positions for b in clean.buckets) == 64 + 368 + 32
    assert all(b.floor_source == "bucket" and b.verdict == "pass" for b in clean.buckets)
    window_off = records[faults_long.SlidingWindowOff.name].correctness.report
    assert "(long)" in window_off and "(sequence position " in window_off  # where in the sequence it failed


@pytest.mark.parametrize("fault", faults_long.FAULTS, ids=lambda f: f.__name__)
def test_a_fault_past_the_window_fails_by_the_bucket_where_it_starts(long_run, fault):
    _, records, _ = long_run
    correctness = records[fault.name].correctness
    assert correctness.verdict == "fail", correctness.reasons
    start, ratio = _rises(correctness)
    assert start == STARTS[fault]
    assert ratio >= 3 * FAIL_FACTOR, ratio  # measured: 535x (KV int3) to 2000x (window off)
    assert correctness.buckets[0].verdict == "pass"  # positions 0-63 are right
    assert f"rises at positions {start}-" in correctness.report  # the printed failure says where


@pytest.mark.parametrize("variant", BENIGN, ids=lambda f: f.__name__)
def test_benign_variants_pass_with_two_long_prompts(long_run, variant):
    _, records, _ = long_run
    correctness = records[variant.name].correctness
    assert correctness.verdict == "pass", correctness.reasons
    assert max(b.kl_ratio for b in correctness.buckets) < 3


def test_benign_variants_pass_with_one_long_prompt(mistral, tmp_path_factory):
    code, records, _ = _run(tmp_path_factory, "one", [HFAdapter, *BENIGN], "long_prompts: 1")
    assert code == 0
    for variant in (HFAdapter, *BENIGN):
        correctness = records[variant.name].correctness
        assert correctness.verdict == "pass" and correctness.length == 384, correctness.reasons
        assert len(correctness.prompts) == 3


def test_the_short_prompts_alone_miss_every_fault(mistral, tmp_path_factory):
    code, records, _ = _run(tmp_path_factory, "short", [HFAdapter, *faults_long.FAULTS], "length: short")
    assert code == 0  # the issue: each fault passes the short gate prompts (~45 positions, inside the window)
    for fault in faults_long.FAULTS:
        correctness = records[fault.name].correctness
        assert correctness.verdict == "pass" and correctness.length is None
        assert [b.start for b in correctness.buckets] == [0]


def test_the_report_plots_and_tabulates_kl_by_position(long_run, tmp_path):
    import pandas as pd

    _, _, results = long_run
    out = tmp_path / "report"
    assert cli.main(["report", str(results), "-o", str(out)]) == 0
    assert (out / "plots" / "gate_positions.png").stat().st_size > 0
    table = pd.read_csv(out / "gate_positions.csv")
    window_off = table[table.point_id.str.startswith(faults_long.SlidingWindowOff.name)]
    assert list(window_off.positions) == ["0-63", "64-255", "256-511"]
    assert list(window_off.verdict) == ["pass", "fail", "fail"]
    assert "Correctness by position" in (out / "index.html").read_text()
