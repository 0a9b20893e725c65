"""lm-eval's ``--model harness`` (``harness.run.load_point``, ``PointLM``) and ``harness run`` load a point
the same way: the same ``LoadSettings`` reach the adapter, and a point one skips the other refuses with
the same reason."""

from __future__ import annotations

import pytest

from harness.errors import UsageError
from harness.run import planning
from harness.run.load_point import load_point
from harness.run.runner import Runner
from harness.run.settings import RunSettings
from harness.scenario.sweep import expand
from tests.conftest import registered
from tests.fakes import FakeAdapter


class RecordingAdapter(FakeAdapter):
    """Remembers what each ``load`` received."""

    name = "fake-recording"
    loads: list = []

    def load(self, model, point, settings):
        super().load(model, point, settings)
        RecordingAdapter.loads.append((point, settings))


@pytest.fixture
def recording(tiny_llama):
    RecordingAdapter.loads = []
    yield from registered([RecordingAdapter])


# Every scenario-level load setting differs from its default, so a loader that drops one is caught.
SCENARIO = """
model: {source: tiny-llama, dtype: fp32, trust_remote_code: true}
prompts: ["The river"]
generation: {max_new_tokens: 6}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}
quantization_options: {ratio: 0.5}
adapter_options: {fake-recording: {token_period: 3}}
sweep:
  adapter: [fake-recording]
  device: [cpu, npu]
include:
  - {adapter: fake-recording, beam_width: 2}
  - {adapter: fake-recording, prompt_len: 30, max_seq_len: 16}
"""


def _run(path, point_id, cache_dir, tmp_path):
    loaded = planning.load(path)
    (point,) = [p for p in expand(loaded) if p.id == point_id]
    runner = Runner(
        RunSettings(results_dir=tmp_path / "results", cache_dir=cache_dir, allow_remote_code=True, energy=False)
    )
    return runner.run_point(loaded, point)


def test_lm_eval_loads_a_point_with_the_settings_harness_run_loads_it_with(
    write_scenario, tmp_path, cache_dir, recording
):
    from harness.run.point_lm import PointLM

    path = write_scenario(SCENARIO)
    record = _run(path, "fake-recording-cpu-fp32", cache_dir, tmp_path)
    assert record.status == "ok", record.reason
    lm = PointLM.create_from_arg_string(
        f"scenario={path},point=fake-recording-cpu-fp32,cache_dir={cache_dir},trust_remote_code=True"
    )
    (run_point, run_settings), (lm_point, lm_settings) = RecordingAdapter.loads
    assert lm_settings == run_settings and lm_point == run_point
    assert run_settings.max_new_tokens == 6 and run_settings.trust_remote_code is True
    assert run_settings.dtype == "fp32" and run_settings.threads == 2
    assert run_settings.quantization["ratio"] == 0.5 and run_settings.options.token_period == 3
    assert lm.name == f"{record.model.name}:fake-recording-cpu-fp32"


@pytest.mark.parametrize(
    "point_id, reason",
    [
        ("fake-recording-npu-fp32", "fake-recording:npu unavailable: no fake NPU on this machine"),
        ("fake-recording-cpu-fp32-beam2", "fake-recording has no beam search (beam_width=2)"),
        (
            "fake-recording-cpu-fp32-seq16-prompt30",
            "prompt (30 tokens) + max_new_tokens (6) exceeds max_seq_len 16",
        ),
    ],
)
def test_a_point_harness_run_skips_is_refused_by_load_point_with_the_same_reason(
    write_scenario, tmp_path, cache_dir, recording, point_id, reason
):
    path = write_scenario(SCENARIO)
    record = _run(path, point_id, cache_dir, tmp_path)
    assert (record.status, record.reason) == ("skipped", reason)
    with pytest.raises(UsageError) as refused:
        load_point(scenario=str(path), point=point_id, cache_dir=str(cache_dir), trust_remote_code=True)
    assert str(refused.value) == f"{point_id}: {reason}"
    assert RecordingAdapter.loads == []  # neither loaded anything


def test_a_scenario_asking_for_remote_code_needs_the_confirmation(write_scenario, cache_dir, recording):
    path = write_scenario(SCENARIO)
    with pytest.raises(UsageError, match="trust_remote_code=True in --model_args"):
        load_point(scenario=str(path), point="fake-recording-cpu-fp32", cache_dir=str(cache_dir))
    assert RecordingAdapter.loads == []


def test_model_args_without_a_scenario_load_a_one_point_scenario(cache_dir, recording):
    loaded = load_point(model="tiny-llama", adapter="fake-recording", dtype="fp32", threads=2, cache_dir=str(cache_dir))
    ((point, settings),) = RecordingAdapter.loads
    assert point.id == "fake-recording-cpu-none" and loaded.name.endswith(":fake-recording-cpu-none")
    assert settings.dtype == "fp32" and settings.threads == 2 and settings.max_new_tokens == 32
    assert settings.cache_dir == str(cache_dir) and settings.trust_remote_code is False
    with pytest.raises(UsageError, match="--model_args: sweep.quantization.0"):
        load_point(model="tiny-llama", adapter="fake-recording", quantization="int3", cache_dir=str(cache_dir))
