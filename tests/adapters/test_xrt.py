"""The ``xrt`` adapter: AMD NPU detection on a fake sysfs tree, the NumPy runner of the NPU dataflow
against transformers, padding invariance, and a gated run through the adapter."""

from __future__ import annotations

import numpy as np
import pytest

from harness.adapters import xrt
from harness.adapters.xrt.npu_reference import NumpyLlamaRunner


@pytest.fixture
def fake_sysfs(tmp_path, monkeypatch):
    """A sysfs tree with one accel node; returns a function that binds it to a driver."""
    monkeypatch.setattr(xrt, "SYSFS_ROOT", tmp_path / "sys")
    monkeypatch.setattr(xrt, "XRT_ROOT", tmp_path / "opt" / "xilinx" / "xrt")

    def bind(driver: str, node: str = "accel0"):
        device = tmp_path / "sys" / "devices" / "pci0000:00" / node
        device.mkdir(parents=True)
        (device / "fw_version").write_text("1.5.2.380\n")
        target = tmp_path / "sys" / "bus" / "pci" / "drivers" / driver
        target.mkdir(parents=True, exist_ok=True)
        (device / "driver").symlink_to(target)
        accel = tmp_path / "sys" / "class" / "accel" / node
        accel.parent.mkdir(parents=True, exist_ok=True)
        accel.mkdir()
        (accel / "device").symlink_to(device)

    return bind


def test_no_accel_nodes_means_no_npu(fake_sysfs):
    assert xrt.amd_npus() == []
    assert xrt.XRTAdapter.device_reason("npu") == "no AMD NPU: no /dev/accel/accel* bound to the amdxdna driver"
    assert xrt.XRTAdapter.device_reason("cpu-reference") is None


def test_an_intel_npu_is_not_an_amd_npu(fake_sysfs):
    fake_sysfs("intel_vpu")
    assert xrt.amd_npus() == []


def test_amdxdna_without_xrt_says_what_is_missing(fake_sysfs, tmp_path):
    fake_sysfs("amdxdna")
    assert xrt.amd_npus() == [{"node": "/dev/accel/accel0", "fw_version": "1.5.2.380"}]
    reason = xrt.XRTAdapter.device_reason("npu")
    assert "AMD NPU present (/dev/accel/accel0) but XRT/pyxrt is not installed" in reason
    root = tmp_path / "opt" / "xilinx" / "xrt"
    (root / "python").mkdir(parents=True)
    (root / "version.json").write_text('{"BUILD_VERSION": "2.19.0"}')
    assert xrt.xrt_version() == "2.19.0"
    assert xrt.XRTAdapter.device_reason("npu") is None


@pytest.fixture(scope="module")
def hf_tiny(tiny_llama):
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    return AutoModelForCausalLM.from_pretrained(str(tiny_llama.hf_dir), dtype=torch.float32).eval()


def hf_logits(model, ids):
    import torch

    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0].numpy()


PROMPT = [1, 40, 77, 123, 9, 300, 41]


def test_numpy_runner_matches_transformers_at_every_step(tiny_llama, hf_tiny):
    runner = NumpyLlamaRunner()
    runner.prepare(tiny_llama.hf_dir, max_seq_len=64, prefill_len=16, eos_token_id=2)
    ours = [runner.prefill(PROMPT)]
    continuation = [5, 17, 250]
    for token in continuation:
        ours.append(runner.decode(token))
    theirs = hf_logits(hf_tiny, PROMPT + continuation)[len(PROMPT) - 1 :]
    np.testing.assert_allclose(np.stack(ours), theirs, rtol=1e-4, atol=1e-4)


def test_padding_does_not_change_logits_at_real_positions(tiny_llama):
    results = []
    for prefill_len in (len(PROMPT), 16, 48):
        runner = NumpyLlamaRunner()
        runner.prepare(tiny_llama.hf_dir, max_seq_len=64, prefill_len=prefill_len, eos_token_id=2)
        results.append([runner.prefill(PROMPT), runner.decode(5), runner.decode(6)])
    for other in results[1:]:
        np.testing.assert_allclose(np.stack(other), np.stack(results[0]), rtol=1e-5, atol=1e-5)


def test_a_prompt_longer_than_the_fixed_prefill_is_refused(tiny_llama):
    runner = NumpyLlamaRunner()
    runner.prepare(tiny_llama.hf_dir, max_seq_len=64, prefill_len=4, eos_token_id=2)
    with pytest.raises(ValueError, match="does not fit the fixed prefill of 4"):
        runner.prefill(PROMPT)


def test_runner_paths_are_checked():
    with pytest.raises(ValueError, match="expected 'module:Class'"):
        xrt.load_runner("harness.adapters.xrt.npu_reference")
    with pytest.raises(ValueError, match="cannot import 'harness.adapters.xrt.npu_reference:Nope'"):
        xrt.load_runner("harness.adapters.xrt.npu_reference:Nope")


SCENARIO = """
model: tiny-llama
prompts: ["The river", "A bakery on the corner"]
generation: {max_new_tokens: 6}
measurement: {warmup_rounds: 1, min_rounds: 2, threads: 2}
adapter_options:
  xrt: {prefill_len: 32}
gate: {k: 5, tokens: 8, prompts: ci}
sweep:
  adapter: [xrt]
  device: [cpu-reference, npu]
  max_seq_len: [64]
"""


def test_the_adapter_runs_the_reference_runner_with_the_gate(write_scenario, tmp_path):
    from harness.run import planning
    from harness.run.runner import Runner
    from harness.run.settings import RunSettings
    from harness.scenario.sweep import expand

    loaded = planning.load(write_scenario(SCENARIO))
    runner = Runner(RunSettings(results_dir=tmp_path / "results", energy=False))
    reference, npu = [runner.run_point(loaded, point) for point in expand(loaded)]
    assert reference.status == "ok", reference.reason
    assert reference.engine.emulated is True and "not NPU timing" in reference.engine.extra["prepared"]["runner"]
    assert reference.metrics["engine_prefill_padded_tokens"] == 32
    assert reference.metrics["engine_padding_waste"] == pytest.approx(1 - reference.metrics["prompt_tokens"] / 32)
    assert reference.metrics["engine_call_run_ms"] > 0
    assert reference.correctness.verdict == "pass", reference.correctness.report
    assert npu.status == "skipped" and "amdxdna" in npu.reason
