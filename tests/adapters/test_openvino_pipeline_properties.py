"""What GenAI's ``LLMPipeline`` is compiled with, per kind of device, decided without OpenVINO (a stand-in
for its ``SchedulerConfig``): the plugin's properties are what the gate's step-wise request compiles with."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from harness.adapters.base import LoadSettings, PointSkipped
from harness.adapters.openvino.pipeline_properties import properties
from harness.scenario.sweep import Point


class _Scheduler:
    max_num_batched_tokens = 256
    dynamic_split_fuse = False


GENAI = SimpleNamespace(SchedulerConfig=_Scheduler)


def _point(device: str, **axes) -> Point:
    return Point(adapter="openvino", device=device, id="test", **axes)


def test_a_dynamic_pipeline_gets_a_plain_scheduler_the_plugin_does_not(tmp_path):
    got = properties(GENAI, _point("CPU"), LoadSettings(threads=3), tmp_path)
    assert got.device == "CPU" and got.max_prompt is None and got.prefill_chunk is None
    assert isinstance(got.config["scheduler_config"], _Scheduler)
    assert got.plugin == {"CACHE_DIR": str(tmp_path), "INFERENCE_NUM_THREADS": 3}


def test_a_moe_chunk_size_becomes_the_split_fuse_budget_on_a_dynamic_device(tmp_path):
    got = properties(GENAI, _point("GPU", moe_chunk_size=16), LoadSettings(threads=3), tmp_path)
    assert got.prefill_chunk == 16 and got.config["scheduler_config"].dynamic_split_fuse
    assert "INFERENCE_NUM_THREADS" not in got.config  # a thread count is the CPU plugin's


def test_the_static_pipeline_is_sized_from_max_seq_len_and_the_emulated_one_runs_the_npu_plugin(tmp_path):
    settings = LoadSettings(threads=2, max_new_tokens=8)
    got = properties(GENAI, _point("NPU-emulated", max_seq_len=64), settings, tmp_path)
    assert (got.device, got.max_prompt, got.min_response) == ("NPU", 56, 8)
    assert got.config["MAX_PROMPT_LEN"] == 56 and got.config["MIN_RESPONSE_LEN"] == 8
    assert got.plugin == {"INFERENCE_NUM_THREADS": 2, "NPUW_DEVICES": "CPU", "NPUW_ONLINE_PIPELINE": "NONE"}


def test_a_static_pipeline_with_a_moe_chunk_size_is_skipped_naming_both(tmp_path):
    with pytest.raises(PointSkipped, match="static NPU pipeline.*moe_chunk_size=16"):
        properties(GENAI, _point("NPU", max_seq_len=64, moe_chunk_size=16), LoadSettings(), tmp_path)
