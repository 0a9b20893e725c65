"""The diagnosis takes the device's layer outputs on the path the gate ran (issue #39): the point's static cache,
its prefill chunks and its padding. A fault that lives only on that path (tests/faults.py ``ChunkPositionsRestart``:
chunks after the first get positions from 0) departs nowhere in one forward without cache, which the diagnosis
ran before ("none found"); on the point's own path it names the layer, the phase and the chunk."""

from __future__ import annotations

import pytest

from harness import cli
from harness.adapters.base import LoadSettings
from harness.adapters.hf import HFAdapter
from harness.correctness import diagnosis, gate
from harness.correctness.reference import ReferenceSettings, ReferenceStore
from harness.models.prompts import select_gate_prompts
from harness.records import store
from harness.scenario.gate_section import Gate
from harness.scenario.sweep import Point
from tests import faults
from tests.conftest import registered
from tests.correctness.test_gate_timed_path import TIMED  # the chunked static path that fault lives on

STATIC_CHUNKED = dict(max_seq_len=96, moe_chunk_size=4)


class ChunkFaultHF(faults.ChunkPositionsRestart):
    name = "hf-chunkfault"


class OneForward(faults.ChunkPositionsRestart):
    """The same fault on an engine whose states come from one forward without cache (the diagnosis before)."""

    supports_path_hidden_states = False

    def hidden_states(self, tokens, decode=False):
        if decode:
            return super().hidden_states(tokens, decode)
        timed, self.point = self.point, Point(adapter="hf", device="cpu", id="plain")  # no cache size, no chunks
        try:
            return super().hidden_states(tokens)
        finally:
            self.point = timed


def load(cls, model, **axes):
    adapter = cls()
    adapter.load(model, Point(adapter="hf", device="cpu", id="on-path", **axes), LoadSettings(threads=2))
    return adapter


def test_a_prefill_path_fault_names_layer_and_chunk(tiny_llama, tmp_path):
    reference, _, _ = ReferenceStore(tmp_path).get_or_compute(
        tiny_llama, select_gate_prompts(2), ReferenceSettings(tokens=16, threads=2)
    )
    healthy = load(HFAdapter, tiny_llama)
    try:
        found = {}
        for cls in (HFAdapter, faults.ChunkPositionsRestart, OneForward):
            adapter = load(cls, tiny_llama, **STATIC_CHUNKED)
            try:
                result = gate.evaluate(adapter, reference, Gate().settings(quantized=False))
                prefill = diagnosis.diagnose(adapter, healthy, reference.prompts[0].prompt_ids)
                found[cls] = result, diagnosis.diagnose_failure(adapter, healthy, reference, result), prefill
            finally:
                adapter.close()
    finally:
        healthy.close()
    clean, _, clean_prefill = found[HFAdapter]
    assert clean.verdict == "pass" and clean_prefill.departs_at is None  # the static, chunked path departs nowhere
    assert clean_prefill.path == "static cache (96), prefill chunks of 4" and clean_prefill.chunks >= 2
    broken, named, _ = found[faults.ChunkPositionsRestart]
    assert broken.verdict == "fail"
    assert (named.departs_at, named.phase, named.chunk) == ("decoder layer 0", "prefill", 2), named.components
    assert named.where().startswith("decoder layer 0 (prefill on static cache (96), prefill chunks of 4: chunk 2 of")
    _, before, _ = found[OneForward]
    assert before.departs_at is None and before.path == diagnosis.ONE_FORWARD  # what it said before: none found


def test_a_padded_prefill_read_at_its_padded_end_departs_at_the_logits_it_returned(tiny_llama):
    """tests/faults.py ``RightPadding``: every real position's states agree; the logits the prefill returned
    (read at the last padded position) do not, and the record says how many positions the prefill ran."""
    tokens = tiny_llama.tokenizer().encode("The harbour town woke slowly to the sound of gulls").ids
    healthy, broken = load(HFAdapter, tiny_llama), load(faults.RightPadding, tiny_llama)
    try:
        found = diagnosis.diagnose(broken, healthy, tokens)
    finally:
        healthy.close()
        broken.close()
    assert found.departs_at == "logits" and found.ran > len(tokens), found.components
    assert found.where() == f"logits (prefill on dynamic cache, padded to {found.ran} positions)"


@pytest.fixture
def chunk_fault(tiny_llama):
    yield from registered([ChunkFaultHF])


def test_harness_verify_names_the_layer_and_prefill_chunk_of_a_fault_on_the_points_path(
    write_scenario, tmp_path, capsys, chunk_fault
):
    path = write_scenario(TIMED)
    assert cli.main(["verify", str(path), "--results", str(tmp_path), "--isolation", "none"]) == 1
    out = capsys.readouterr().out
    records = {record.point_id: record for _, record in store.iter_records(tmp_path / "scenario")}
    clean = records["hf-cpu-bf16-seq96-chunk4"].correctness
    broken = records["hf-chunkfault-cpu-bf16-seq96-chunk4"].correctness
    assert clean.verdict == "pass" and clean.diagnosis is None  # a benign point has no diagnosis
    found = broken.diagnosis
    assert broken.verdict == "fail" and found.departs_at == "decoder layer 0" and found.phase == "prefill"
    assert found.path == "static cache (96), prefill chunks of 4" and found.chunk == 2 and found.chunks >= 2
    assert (
        "diagnosis: activations depart from HF at decoder layer 0 (prefill on static cache (96), prefill chunks "
        "of 4: chunk 2 of" in out
    ), out
