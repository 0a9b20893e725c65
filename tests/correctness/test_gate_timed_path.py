"""The gate runs on the path that was timed (issue #29): the point's cache and prefill chunking.

A fault that lives only on the chunked-prefill path (tests/faults.py ``ChunkPositionsRestart``) is invisible
to a gate that prefills the whole prompt in one forward; gated on the point's own path it fails, through
``harness run``, with the record saying where the checks ran.
"""

from __future__ import annotations

import pytest

from harness import cli
from harness.records import store
from harness.scenario.gate_section import Gate
from tests import faults
from tests.conftest import registered


class ChunkFaultHF(faults.ChunkPositionsRestart):
    name = "hf-chunkfault"


TIMED = """
model: tiny-llama
generation: {max_new_tokens: 4}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}
gate: {tokens: 16, prompts: 2, length: short}  # the short prompts alone: this is about the timed path, not length
sweep:
  adapter: [hf, hf-chunkfault]
  max_seq_len: [96]
  moe_chunk_size: [4]
"""


@pytest.fixture
def chunk_fault(tiny_llama):
    yield from registered([ChunkFaultHF])


def test_a_fault_only_the_chunked_static_path_runs_fails_through_harness_run(
    write_scenario, tmp_path, capsys, chunk_fault
):
    path = write_scenario(TIMED)
    assert cli.main(["run", str(path), "--results", str(tmp_path), "--no-progress", "--isolation", "none"]) == 1
    out = capsys.readouterr().out
    records = {record.point_id: record for _, record in store.iter_records(tmp_path / "scenario")}
    clean = records["hf-cpu-bf16-seq96-chunk4"].correctness
    broken = records["hf-chunkfault-cpu-bf16-seq96-chunk4"].correctness
    for gate in (clean, broken):  # where the checks ran: the timed path's static cache and chunks
        assert gate.path.device == "cpu" and gate.path.cache == "static(96)" and gate.path.prefill_chunk == 4
        assert gate.path.checks == ["topk-free", "topk-forced", "kl"] and not gate.path.notes
    assert clean.verdict == "pass", clean.reasons
    assert broken.verdict == "fail" and broken.test.margin >= 3, (broken.test, broken.reasons)
    fault_row = next(line for line in out.splitlines() if line.startswith("scenario::hf-chunkfault"))
    assert fault_row.split()[-1] == "fail" and "KL is" in out and "fail above 100x" in out


def test_the_same_fault_passes_a_gate_that_prefills_in_one_forward(tmp_path, tiny_llama):
    """What the gate did before it followed the point's path: one forward, dynamic cache; the fault never runs."""
    from harness.adapters.base import LoadSettings
    from harness.correctness import gate
    from harness.correctness.reference import ReferenceSettings, ReferenceStore
    from harness.models.prompts import select_gate_prompts
    from harness.scenario.sweep import Point

    reference, _, _ = ReferenceStore(tmp_path).get_or_compute(
        tiny_llama, select_gate_prompts(2), ReferenceSettings(tokens=16, threads=2)
    )
    adapter = ChunkFaultHF()
    adapter.load(tiny_llama, Point(adapter="hf", device="cpu", id="unchunked"), LoadSettings(threads=2))
    try:
        result = gate.evaluate(adapter, reference, Gate().settings(quantized=False))
    finally:
        adapter.close()
    assert result.verdict == "pass" and result.test.rise < 2, result.reasons


def test_openvino_steps_the_ir_compiled_for_the_points_device_with_the_pipelines_properties(tiny_llama):
    pytest.importorskip("openvino_genai", reason="the openvino extra is not installed: pip install 'harness[openvino]'")
    from harness.adapters.base import LoadSettings, PointSkipped
    from harness.adapters.openvino import OpenVINOAdapter, compile_probe, ir_export
    from harness.scenario.sweep import Point

    adapter = OpenVINOAdapter()
    # one thread: not this machine's default, so a request compiled without the point's properties shows it
    try:
        adapter.load(tiny_llama, Point(adapter="openvino", device="CPU", id="path"), LoadSettings(threads=1))
    except PointSkipped as skipped:  # a CPU where the plugin dies compiling bf16 at one thread (AMX): said, not died
        assert compile_probe.at_risk("CPU", {"INFERENCE_NUM_THREADS": 1}, ir_export.inference_precision("CPU"))
        assert "dies of SIG" in str(skipped) and "measurement.threads to 2" in str(skipped)
        pytest.skip(f"this CPU cannot compile the one-thread request: {skipped}")
    try:
        adapter.prefill(tiny_llama.tokenizer().encode("The river").ids)
        compiled = adapter._request.get_compiled_model()
        assert int(compiled.get_property("INFERENCE_NUM_THREADS")) == 1
        path = adapter.gate_path()
        assert path["device"] == "CPU" and path["config"] == {"INFERENCE_NUM_THREADS": "1"}
        assert "scheduler" in path["notes"][0]  # what the step-wise path does not reach, said
    finally:
        adapter.close()


POWERED = """
model: tiny-llama
generation: {max_new_tokens: 4}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}
gate: {tokens: 8, prompts: 2, power: POWER}
sweep:
  adapter: [hf]
  device: [cpu]
"""


def test_gate_power_adds_shipped_prompts_until_the_target_rise_is_detectable(write_scenario, tmp_path, capsys):
    import re

    results = ["--results", str(tmp_path / "results")]
    path = write_scenario(POWERED.replace("POWER", "5"))
    assert cli.main(["verify", str(path), *results, "--isolation", "none"]) == 0
    out = capsys.readouterr().out
    assert "target 5x): a target at or below drift_factor (5x) is never detectable" in out
    assert "gated on cpu (dynamic cache, topk-free+topk-forced+kl)" in out
    two = float(
        re.search(r"power: 2 prompts \(\d+ positions\) detect ([0-9.]+)x", out).group(1)
    )  # this point's spread, 2 prompts
    assert two > 5
    target = 5 * (two / 5) ** 0.6  # needs (1 / 0.6)^2 = 2.8x the positions
    path = write_scenario(POWERED.replace("POWER", f"{target:.4f}"))
    assert cli.main(["verify", str(path), *results, "--isolation", "none"]) == 0
    out = capsys.readouterr().out
    found = re.search(r"power: (\d+) prompts \(\d+ positions\) detect ([0-9.]+)x \(target ([0-9.]+)x\)", out)
    assert found, out
    prompts, detectable = int(found.group(1)), float(found.group(2))
    assert prompts > 2 and detectable <= target + 0.05, out
    assert "reference: computed" in out  # the wider set's reference, stored like any other


SHORT = """
model: tiny-llama
generation: {max_new_tokens: 4}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}
gate: {tokens: 4, prompts: 1, mode: forced, min_positions: 14POWER}
sweep:
  adapter: [hf]
  device: [cpu]
"""


def test_gate_power_adds_shipped_prompts_until_min_positions_is_reached(write_scenario, tmp_path, capsys):
    """One prompt of 4 tokens gives 4 teacher-forced positions: below gate.min_positions=14 the point is not
    judged; with gate.power the shipped prompts are added until 14 are reached, and the record says so."""
    results = tmp_path / "results"
    path = write_scenario(SHORT.replace("POWER", ""))
    assert cli.main(["verify", str(path), "--results", str(results), "--isolation", "none"]) == 0
    out = capsys.readouterr().out
    assert "KL tier not judged: 4 teacher-forced positions, fewer than gate.min_positions=14" in out
    path = write_scenario(SHORT.replace("POWER", ", power: 1000"))  # a target any KL test reaches
    assert cli.main(["verify", str(path), "--results", str(results), "--isolation", "none"]) == 0
    out = capsys.readouterr().out
    assert "power: 4 prompts (16 positions) detect" in out and "not judged" not in out, out
    [record] = [r for _, r in store.iter_records(results / "scenario") if r.correctness.power is not None]
    gate = record.correctness
    assert gate.verdict == "pass" and gate.test.positions == 16
    assert (gate.power.prompts, gate.power.positions, gate.power.reached) == (4, 16, True)
