from __future__ import annotations

from harness.records import store
from harness.run import planning
from harness.run.runner import Runner
from harness.run.settings import RunSettings
from harness.scenario.sweep import expand
from tests.fakes import FakeAdapter
from tests.tiny_scenario import tiny


def run_all(write_scenario, tmp_path, text):
    loaded = planning.load(write_scenario(text, "sweep.yaml"))
    runner = Runner(RunSettings(results_dir=tmp_path / "results"))
    return {r.point_id: r for r in runner.run([loaded], progress=False)}


def test_a_crashing_or_truncating_engine_fails_its_point_and_the_sweep_goes_on(write_scenario, tmp_path, fake_adapters):
    records = run_all(
        write_scenario,
        tmp_path,
        tiny(
            prompts=None,
            generation={"max_new_tokens": 6},
            measurement={"min_rounds": 2},
            sweep={"adapter": ["fake-failing", "fake-truncating", "fake"]},
        ),
    )
    failing = records["fake-failing-cpu-bf16"]
    assert failing.status == "failed"
    assert failing.reason == "RuntimeError: fake engine fault at step 3"
    assert "fake engine fault" in failing.failure.traceback
    truncating = records["fake-truncating-cpu-bf16"]
    assert truncating.status == "failed" and "generated 2 tokens, 6 were asked for" in truncating.reason
    healthy = records["fake-cpu-bf16"]
    assert healthy.status == "ok" and healthy.metrics["generated_tokens"] == 6
    assert len(store.load(tmp_path / "results")) == 3  # every outcome is on disk


def test_points_an_adapter_cannot_run_are_skipped_with_a_precise_reason(write_scenario, tmp_path, fake_adapters):
    records = run_all(
        write_scenario,
        tmp_path,
        tiny(
            prompts=["x"],
            measurement={"threads": 2},
            sweep={"adapter": ["fake", "hf"], "device": ["cpu", "npu"], "beam_width": [1, 2]},
            include=[{"adapter": "fake", "prompt_len": 30, "max_seq_len": 16}],
        ),
    )
    assert records["fake-npu-bf16-beam1"].reason == "fake:npu unavailable: no fake NPU on this machine"
    assert records["fake-cpu-bf16-beam2"].reason == "fake has no beam search (beam_width=2)"
    assert records["hf-npu-bf16-beam1"].reason.startswith("hf has no device 'npu'")
    too_long = records["fake-cpu-bf16-seq16-prompt30-beam1"]
    assert too_long.status == "skipped"
    assert too_long.reason == "prompt (30 tokens) + max_new_tokens (4) exceeds max_seq_len 16"
    assert records["fake-cpu-bf16-beam1"].status == "ok" and records["hf-cpu-bf16-beam2"].status == "ok"
    from harness.scenario.sweep import Point

    int4 = Point(adapter="fake", device="cpu", quantization="int4_sym", id="x")
    assert FakeAdapter.supports(int4).startswith("fake does not support quantization 'int4_sym'")


def test_record_holds_config_metrics_samples_and_environment(write_scenario, tmp_path, tiny_llama):
    from tests.conftest import TINY_SCENARIO

    loaded = planning.load(write_scenario(TINY_SCENARIO))
    (point,) = expand(loaded)
    record = Runner(RunSettings(results_dir=tmp_path)).run_point(loaded, point)
    assert record.status == "ok", record.reason
    assert record.point["adapter"] == "hf" and record.settings["generation"]["max_new_tokens"] == 6
    m = record.metrics
    for key in (
        "ttft_ms",
        "tpot_ms",
        "ms_per_token_p99",
        "decode_tokens_per_s",
        "throughput_tokens_per_s",
        "prefill_tokens_per_s",
        "peak_rss_mb",
        "load_s",
        "first_call_s",
    ):
        assert m[key] is not None and m[key] > 0, key
    assert record.units["tpot_ms"] == "ms/token"
    assert len(record.samples.rounds) == m["rounds"] >= 2
    assert all(len(r.gaps_s) == 5 for r in record.samples.rounds)
    assert record.model.checksum == tiny_llama.checksum
    assert record.engine.name == "transformers"
    assert record.environment["harness_version"] and record.environment["python"]
    assert set(record.outputs) == {"0", "1"}
    assert store.read(tmp_path / "scenario" / "hf-cpu-bf16.json") == record


def test_warmup_new_tokens_sets_each_warm_up_rounds_length_and_the_record_says_it(
    write_scenario, tmp_path, fake_adapters
):
    from harness.records.fingerprint import fingerprint

    records = run_all(
        write_scenario,
        tmp_path,
        tiny(
            prompts=None,
            generation={"max_new_tokens": 6},
            measurement={"warmup_rounds": 2, "min_rounds": 2, "warmup_new_tokens": 3},
            sweep={"adapter": ["fake"]},
        ),
    )
    record = records["fake-cpu-bf16"]
    assert record.status == "ok", record.reason
    assert record.samples.warmup_tokens == [3, 3]  # a fresh engine, yet the scenario's length
    assert record.metrics["generated_tokens"] == 6 and record.metrics["first_call_s"] > 0
    assert '"warmup_new_tokens": 3' in fingerprint(record)["workload"]  # a different workload from the default's
