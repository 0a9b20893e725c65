"""The dequantized check's bias test (#39) on every GGUF format llama.cpp's quantizer writes, K-quants
included: the adapter's own levels (Q8_0, Q4_0, Q4_1), the default model's (Q5_0, Q4_K, Q6_K, Q8_0) and the
others a user's GGUF may hold (Q5_1, Q5_K, Q3_K, Q2_K). A tiny llama with 256-wide rows
(``tests/kquant_gguf.py``; K-quants pack 256-element super-blocks) is quantized to each; every clean file
passes, and one layer's scales off by 5 to 20 %, its quants one grid step up, or its block minimums one
step off fail at least 3x past the bias line, naming the tensor and the kind, through the audit and
through ``harness run`` / ``harness verify`` of the GGUF given as the model's artefact. Faults:
``tests/faults_gguf.py`` (``ONE_LAYER``)."""

from __future__ import annotations

import re
import shutil
from importlib.util import find_spec

import pytest

from harness.adapters import registry
from harness.cli import main
from harness.correctness import dequantized
from harness.records.store import iter_records
from tests import faults_gguf, kquant_gguf
from tests.correctness.test_dequantized_check import read

pytestmark = pytest.mark.skipif(find_spec("llama_cpp") is None, reason="the llamacpp extra is not installed")

TENSOR = "blk.1.attn_q.weight"  # one layer's query projection: in every file type below its main format
LAYER = "model.layers.1.self_attn.q_proj.weight"
# file type -> the format TENSOR is stored in
FORMATS = {
    "Q8_0": "Q8_0",
    "Q4_0": "Q4_0",
    "Q4_1": "Q4_1",
    "Q5_0": "Q5_0",
    "Q5_1": "Q5_1",
    "Q2_K": "Q2_K",
    "Q3_K_M": "Q3_K",
    "Q4_K_M": "Q4_K",
    "Q5_K_M": "Q5_K",
    "Q6_K": "Q6_K",
}
CASES = [
    (ftype, label)
    for ftype, kind in FORMATS.items()
    for label in faults_gguf.ONE_LAYER
    if label != "min+1" or faults_gguf.LAYOUTS[kind].minimum is not None
]


@pytest.fixture
def wide(wide_llama):
    return wide_llama


def gguf(wide, ftype):
    from harness.models.sources import cache_dir

    return kquant_gguf.quantized(wide, ftype, cache_dir())


@pytest.mark.parametrize("ftype", sorted(FORMATS))
def test_every_clean_gguf_format_reads_back_without_bias(wide, ftype):
    reference, stored = read(gguf(wide, ftype), wide)
    assert stored[LAYER].stored_type == FORMATS[ftype], {n: t.stored_type for n, t in stored.items()}
    found = dequantized.audit(reference, stored)
    assert found.verdict == "pass" and found.bias.verdict == "pass" and found.bias.ratio < 1, found.bias


@pytest.mark.parametrize("ftype, label", CASES)
def test_one_layers_slip_fails_by_bias_in_every_format(wide, tmp_path, ftype, label):
    patched = tmp_path / "model.gguf"
    shutil.copyfile(gguf(wide, ftype), patched)
    faults_gguf.ONE_LAYER[label](patched, TENSOR)
    found = dequantized.audit(*read(patched, wide))
    bias = found.bias
    assert found.verdict == "fail" and bias.verdict == "fail" and bias.ratio >= 3, (found.ratio, bias)
    assert bias.worst.startswith(LAYER) and f"{FORMATS[ftype]}" in bias.worst, bias
    assert any(r.startswith(f"dequantized artefact (bias): {LAYER}") for r in found.reasons), found.reasons


SCENARIO = """
model: {source: WIDE, artefacts: {llamacpp: GGUF}}
generation: {max_new_tokens: 2}
measurement: {threads: 2, warmup_rounds: 0, min_rounds: 1}
gate: {tokens: 6, prompts: 1}
sweep:
  adapter: [ADAPTERS]
  device: [cpu]
"""


@pytest.mark.parametrize("ftype", ["Q4_K_M", "Q2_K"])
def test_harness_run_and_verify_fail_a_k_quant_layers_slip(wide, write_scenario, tmp_path, capsys, ftype):
    labels = ["scales-x1.05", "min+1"]
    faulty = [faults_gguf.given_adapter(label, TENSOR) for label in labels]
    text = SCENARIO.replace("WIDE", str(wide)).replace("GGUF", str(gguf(wide, ftype)))
    path = write_scenario(text.replace("ADAPTERS", ", ".join(["llamacpp", *(c.name for c in faulty)])))
    results = ["--results", str(tmp_path / "results"), "--isolation", "none"]
    for cls in faulty:
        registry.register_adapter(cls)
    try:
        assert main(["run", str(path), *results]) == 1
        capsys.readouterr()
        code = main(["verify", str(path), *results])  # the stored audits reused
        out = capsys.readouterr().out
    finally:
        for cls in faulty:
            registry.unregister_adapter(cls.name)
    records = {r.point["adapter"]: r.correctness for _, r in iter_records(tmp_path / "results")}
    assert set(records) == {"llamacpp", *(c.name for c in faulty)}
    clean = records["llamacpp"].same_weights.dequantized
    assert clean.verdict == "pass" and clean.bias.verdict == "pass" and clean.bias.ratio < 1, clean.bias
    for cls in faulty:
        gate = records[cls.name]
        audit = gate.same_weights.dequantized
        assert gate.verdict == "fail" and audit.bias.verdict == "fail" and audit.bias.ratio >= 3, audit.bias
        assert any(reason.startswith(f"dequantized artefact (bias): {LAYER}") for reason in gate.reasons)
        assert re.search(
            rf"^FAIL   scenario::{cls.name}-cpu-\S+: .*bias fail \((scale|offset) \d+\.\dx line\)", out, re.M
        )
    assert code == 1, out
