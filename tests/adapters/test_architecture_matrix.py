"""Your own model on every engine: tiny random-weight checkpoints of six architectures, built offline, run on
hf, OpenVINO and llama.cpp (llama.cpp's own ``convert_hf_to_gguf.py`` makes the GGUF) with the gate and the text
path. ``MATRIX`` is what these tests run; docs/own-model.md's table must say the same."""

from __future__ import annotations

import re
from importlib.util import find_spec
from pathlib import Path

import pytest

from harness.run import planning
from harness.run.runner import Runner
from harness.run.settings import RunSettings
from harness.scenario.sweep import expand

ENGINES = ("hf", "openvino", "llamacpp")
# architecture (the tiny source's suffix) -> the engines the tests run it on and prove; none is left out now
MATRIX: dict[str, tuple[str, ...]] = {
    "llama": ENGINES,
    "qwen2": ENGINES,
    "gemma3-text": ENGINES,
    "mistral": ENGINES,
    "phi3": ENGINES,
    "mixtral": ENGINES,
}
DOCS = Path(__file__).parents[2] / "docs" / "own-model.md"

SCENARIO = """
model: tiny-{arch}
prompts: ["The river"]
generation: {{max_new_tokens: 4}}
measurement: {{warmup_rounds: 0, min_rounds: 1, threads: 2}}
gate: {{k: 5, tokens: 8, prompts: ci}}
sweep:
  adapter: [{adapter}]
  device: [{device}]
  quantization: [none]
"""
DEVICES = {"openvino": "CPU"}  # OpenVINO's own device names; cpu for the rest


def run(arch: str, adapters, cache_dir, results: Path) -> dict:
    """One CPU point per adapter at quantization none, run in one runner (one HF reference for all)."""
    settings = RunSettings(results_dir=results, cache_dir=cache_dir, energy=False, reference_dir=results / "references")
    runner = Runner(settings)
    records = {}
    for adapter in adapters:
        text = SCENARIO.format(arch=arch, adapter=adapter, device=DEVICES.get(adapter, "cpu"))
        loaded = planning.loads(text, "<matrix>", f"matrix_{arch}")
        records.update({point.adapter: runner.run_point(loaded, point) for point in expand(loaded)})
    return records


def test_the_docs_table_is_the_matrix_the_tests_run():
    rows = {}
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        match = re.match(r"\| `tiny-([\w-]+)` .*\|", line)
        if match:
            cells = [cell.strip() for cell in line.strip("|").split("|")][2:]  # source, architecture, engines...
            rows[match.group(1)] = tuple(e for e, cell in zip(ENGINES, cells) if cell.startswith("yes"))
    assert rows == MATRIX


@pytest.mark.skipif(
    not all(find_spec(m) for m in ("llama_cpp", "openvino_genai", "transformers")), reason="an engine extra is missing"
)
@pytest.mark.parametrize("arch", sorted(MATRIX))
def test_each_architecture_passes_the_gate_and_the_text_path_on_every_engine(arch, cache_dir, tmp_path):
    from harness.adapters.llamacpp import converter

    records = run(arch, MATRIX[arch], cache_dir, tmp_path)
    for adapter, record in records.items():
        assert record.status == "ok", (adapter, record.reason)
        assert record.correctness.verdict == "pass", (adapter, record.correctness.reasons)
        text_path = record.correctness.text_path
        assert text_path is not None and text_path.failed() == [], (adapter, text_path)
    made = records["llamacpp"].engine.extra["converter"]  # the record names the converter that made the GGUF
    assert made["converter"] == converter.identity() and made["outtype"] == "f16"


@pytest.mark.skipif(find_spec("llama_cpp") is None, reason="the llamacpp extra is not installed")
def test_a_fault_in_llama_cpps_converted_gguf_fails_the_gate(cache_dir, tmp_path):
    from harness.adapters import registry
    from tests import faults_gguf

    faulty = faults_gguf.converted_adapter()
    registry.register_adapter(faulty)
    try:
        records = run("qwen2", ["llamacpp", faulty.name], cache_dir, tmp_path)
    finally:
        registry.unregister_adapter(faulty.name)
    assert records["llamacpp"].correctness.verdict == "pass", records["llamacpp"].correctness.reasons
    fault = records[faulty.name]
    assert fault.status == "ok" and fault.correctness.verdict == "fail", fault.correctness.reasons
