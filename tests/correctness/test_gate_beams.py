"""The beam path is gated (issue #39): a point timed with ``beam_width`` > 1 has its engine's best beam compared
with the HF reference's beam search at the same width, and the reference teacher-forced along it. A KV cache not
reordered with its beams (tests/faults.py ``BeamCacheNotReordered``) passes every greedy check and fails the beam
check; clean beams pass; an engine without beam search output says so in the record's path notes."""

from __future__ import annotations

import pytest

from harness import cli
from harness.correctness import beams
from harness.records import store
from tests import faults
from tests.conftest import registered


class BeamFaultHF(faults.BeamCacheNotReordered):
    name = "hf-beamfault"


class Fp32HF(faults.HFAdapter):
    """Benign: the engine in fp32 against the bf16 reference (its beams may differ where two are close)."""

    name = "hf-fp32"

    def load(self, model, point, settings):
        from dataclasses import replace

        super().load(model, point, replace(settings, dtype="fp32"))


class NoBeamOutput(faults.HFAdapter):
    """An engine that times beams but exposes no beam search output."""

    name = "hf-nobeams"
    supports_beam_search = False


BEAMS = """
model: tiny-llama
generation: {max_new_tokens: 4}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}
gate: {tokens: 16, prompts: 2}
sweep:
  adapter: [hf, hf-beamfault, hf-fp32, hf-nobeams]
  beam_width: [4]
"""


@pytest.fixture
def beam_adapters(tiny_llama):
    yield from registered([BeamFaultHF, Fp32HF, NoBeamOutput])


def test_a_beam_only_fault_fails_the_beam_check_and_clean_beams_pass_through_harness_run(
    write_scenario, tmp_path, capsys, beam_adapters
):
    path = write_scenario(BEAMS)
    assert cli.main(["run", str(path), "--results", str(tmp_path), "--no-progress", "--isolation", "none"]) == 1
    records = {record.point_id: record.correctness for _, record in store.iter_records(tmp_path / "scenario")}
    clean, broken = records["hf-cpu-bf16-beam4"], records["hf-beamfault-cpu-bf16-beam4"]
    fp32, blind = records["hf-fp32-cpu-bf16-beam4"], records["hf-nobeams-cpu-bf16-beam4"]
    for gate in (clean, broken, fp32):
        assert "beams" in gate.path.checks and any("4 beams" in note for note in gate.path.notes), gate.path
    assert clean.verdict == "pass" and clean.beams.verdict == "pass", clean.reasons
    assert all(p.identical for p in clean.beams.prompts) and clean.beams.worst < 0.1 * beams.LINE  # bf16 sums
    assert fp32.beams.verdict == "pass", fp32.beams
    # every greedy check passes the fault: only the beams see it
    assert not [r for r in broken.reasons if not r.startswith("beams:")], broken.reasons
    assert broken.verdict == "fail" and broken.beams.verdict == "fail"
    assert broken.beams.margin >= 3, broken.beams
    print({k: (v.beams.worst, v.beams.margin) for k, v in records.items() if v.beams and v.beams.worst is not None})
    # an engine that cannot expose beams: said in the record, not passed silently as if beams were gated
    assert blind.beams.skipped and "exposes no beam search output" in blind.beams.skipped
    assert any("gated: one greedy sequence only" in note for note in blind.path.notes)


def test_path_notes_name_every_timed_difference():  # (unit)
    from harness.scenario.sweep import Point

    class Engine:
        name, supports_beam_search = "x", False

    notes = beams.path_notes(Point(adapter="x", device="cpu", id="p", beam_width=4, batch_size=2), Engine())
    assert len(notes) == 2 and "4 beams" in notes[0] and "batch of 2" in notes[1]
    assert beams.path_notes(Point(adapter="x", device="cpu", id="p"), Engine()) == []
