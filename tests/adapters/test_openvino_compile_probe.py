"""A plugin compile that kills its process is refused as a skip that says so, never a dead sweep.

OpenVINO 2026.4.1's CPU plugin dies of SIGFPE compiling the tiny Llama IR at bf16 with one inference thread on
AMX CPUs. ``compile_probe`` compiles first in a child process where the properties match that pattern."""

from __future__ import annotations

import pytest

from harness.adapters.openvino import compile_probe
from harness.cli.app import main
from harness.records import store


def test_only_the_one_thread_bf16_cpu_compile_is_probed():
    assert compile_probe.at_risk("CPU", {"INFERENCE_NUM_THREADS": 1}, "bf16")
    assert compile_probe.at_risk("CPU", {"INFERENCE_NUM_THREADS": 1, "INFERENCE_PRECISION_HINT": "bf16"}, "f32")
    assert not compile_probe.at_risk("CPU", {"INFERENCE_NUM_THREADS": 2}, "bf16")
    assert not compile_probe.at_risk("CPU", {"INFERENCE_NUM_THREADS": 1}, "f32")
    assert not compile_probe.at_risk("CPU", {"INFERENCE_NUM_THREADS": 1, "INFERENCE_PRECISION_HINT": "f32"}, "bf16")
    assert not compile_probe.at_risk("GPU", {"INFERENCE_NUM_THREADS": 1}, "bf16")


def test_a_child_killed_by_a_signal_is_named_and_a_clean_or_raising_one_is_not(tmp_path):
    dies = "import os, signal; os.kill(os.getpid(), signal.SIGFPE)"
    reason = compile_probe.crash_reason(tmp_path / "m.xml", "CPU", {"INFERENCE_NUM_THREADS": 1}, child=dies)
    assert reason is not None and "dies of SIGFPE" in reason and str(tmp_path / "m.xml") in reason
    assert '"INFERENCE_NUM_THREADS": 1' in reason and "measurement.threads to 2" in reason
    assert compile_probe.crash_reason(tmp_path / "m.xml", "CPU", {}, child="pass") is None
    raises = "raise SystemExit('no such file')"  # the in-process compile raises and names it itself
    assert compile_probe.crash_reason(tmp_path / "m.xml", "CPU", {}, child=raises) is None


ONE_THREAD = """
model: tiny-llama
prompts: ["The river"]
generation: {max_new_tokens: 4}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 1}
sweep: {adapter: [openvino], device: [CPU]}
"""


def test_harness_run_survives_a_plugin_that_dies_at_one_thread(tmp_path, write_scenario, capsys):
    """In-process (``--isolation none``) the compile that would kill the harness becomes a skip naming the signal;
    on a CPU where it compiles, the point runs. Either way the run returns and writes a record."""
    pytest.importorskip("openvino_genai", reason="the openvino extra is not installed: pip install 'harness[openvino]'")
    from harness.adapters.openvino import ir_export

    path = write_scenario(ONE_THREAD)
    argv = ["run", str(path), "--results", str(tmp_path / "results"), "--isolation", "none", "--no-progress"]
    assert main([*argv, "--no-energy"]) == 0
    [record] = [r for _, r in store.iter_records(tmp_path / "results")]
    at_risk = compile_probe.at_risk("CPU", {"INFERENCE_NUM_THREADS": 1}, ir_export.inference_precision("CPU"))
    if record.status == "skipped":
        assert at_risk and "dies of SIG" in (record.reason or ""), record.reason
    else:
        assert record.status == "ok", record.reason
