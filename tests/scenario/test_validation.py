"""Scenario validation: every error names file, line and field, and loads nothing."""

from __future__ import annotations

import pytest

from harness import cli
from harness.errors import ScenarioErrors
from harness.run import planning
from tests.conftest import TINY_SCENARIO


def errors_of(path) -> list[str]:
    with pytest.raises(ScenarioErrors) as info:
        planning.load(path)
    return [str(e) for e in info.value.errors]


def test_valid_scenario_loads_with_defaults(write_scenario):
    loaded = planning.load(write_scenario(TINY_SCENARIO, "tiny.yaml"))
    assert loaded.name == "tiny"
    assert loaded.model.source == "tiny-llama" and loaded.model.dtype == "bf16"
    assert loaded.sweep.quantization == ["none"]
    assert loaded.explicit_axes == {"adapter", "device"}


def test_wrong_type_names_file_line_and_field(write_scenario):
    path = write_scenario("""
        model: tiny-llama
        sweep:
          adapter: [hf]
          batch_size: eight
        """)
    (error,) = errors_of(path)
    assert error.startswith(f"{path}:4: sweep.batch_size: ")
    assert "list" in error and "'eight'" in error


def test_wrong_item_type_points_at_the_item_line(write_scenario):
    path = write_scenario("""
        model: tiny-llama
        sweep:
          adapter: [hf]
          max_seq_len:
            - 128
            - lots
        """)
    (error,) = errors_of(path)
    assert error.startswith(f"{path}:6: sweep.max_seq_len.1: ")


def test_unknown_field_suggests_the_closest(write_scenario):
    path = write_scenario("""
        model: tiny-llama
        sweep:
          adapter: [hf]
          max_seq: [128]
        """)
    (error,) = errors_of(path)
    assert f"{path}:4: sweep.max_seq: unknown field; did you mean 'max_seq_len'?" in error


def test_unknown_adapter_suggests_the_closest(write_scenario):
    path = write_scenario("""
        model: tiny-llama
        sweep:
          adapter: [hf, hff]
        """)
    (error,) = errors_of(path)
    assert error.startswith(f"{path}:3: sweep.adapter.1: unknown adapter 'hff'; did you mean 'hf'?")


def test_unknown_device_and_unknown_axis_in_exclude(write_scenario):
    path = write_scenario("""
        model: tiny-llama
        sweep:
          adapter: [hf]
          device: [cpu, tpu]
        exclude:
          - {devise: cpu}
        """)
    errors = errors_of(path)
    assert any(e.startswith(f"{path}:4: sweep.device.1: no adapter in this sweep has device 'tpu'") for e in errors)
    assert any(
        e.startswith(f"{path}:6: exclude.0.devise: unknown axis 'devise'; did you mean 'device'?") for e in errors
    )


def test_empty_sweep_is_an_error(write_scenario):
    path = write_scenario("""
        model: tiny-llama
        sweep:
          adapter: [hf]
        exclude:
          - {adapter: hf}
        """)
    (error,) = errors_of(path)
    assert "sweep is empty" in error and error.startswith(f"{path}:2: sweep")


def test_empty_axis_list_is_an_error(write_scenario):
    path = write_scenario("""
        model: tiny-llama
        sweep:
          adapter: []
        """)
    (error,) = errors_of(path)
    assert error.startswith(f"{path}:3: sweep.adapter: ")


def test_missing_model_path_is_reported_before_loading(write_scenario, tmp_path):
    path = write_scenario(f"""
        model: {tmp_path}/nowhere
        sweep:
          adapter: [hf]
        """)
    (error,) = errors_of(path)
    assert error.startswith(f"{path}:1: model.source: ") and "nor an existing path" in error


def test_missing_required_field(write_scenario):
    (error,) = errors_of(write_scenario("model: tiny-llama\n"))
    assert "sweep: required field is missing" in error


def test_invalid_yaml_reports_the_line(write_scenario):
    path = write_scenario("model: tiny-llama\nsweep:\n  adapter: [hf\n")
    (error,) = errors_of(path)
    assert error.startswith(f"{path}:") and "invalid YAML" in error


def test_yaml_object_tags_are_refused(write_scenario):
    path = write_scenario("model: !!python/object/apply:os.system ['echo owned']\nsweep: {adapter: [hf]}\n")
    (error,) = errors_of(path)
    assert "invalid YAML" in error


def test_bad_scenario_name_cannot_escape_results(write_scenario):
    path = write_scenario("name: ../../etc\nmodel: tiny-llama\nsweep: {adapter: [hf]}\n")
    (error,) = errors_of(path)
    assert error.startswith(f"{path}:1: name: ")


def test_cli_exits_2_with_one_line_per_error_and_no_traceback(write_scenario, capsys):
    path = write_scenario("""
        model: tiny-llama
        sweep:
          adapter: [hf]
          beam_width: [0]
        """)
    assert cli.main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ERROR {path}:4: sweep.beam_width.0: ")
    assert "Traceback" not in err


def test_cli_reports_errors_of_every_file(write_scenario, capsys):
    first = write_scenario("model: tiny-llama\nsweep: {adapter: [nope]}\n", "a.yaml")
    second = write_scenario("model: tiny-llama\n", "b.yaml")
    assert cli.main(["check", str(first), str(second)]) == 2
    err = capsys.readouterr().err
    assert str(first) in err and str(second) in err


def test_an_axis_value_no_point_can_run_is_an_error(write_scenario):
    path = write_scenario("""
        model: tiny-llama
        sweep:
          adapter: [openvino]
          device: [CPU]
          beam_width: [1, 4]
          prompt_len: [32]
        """)
    (error,) = errors_of(path)
    assert (
        error
        == f"{path}:5: sweep.beam_width.1: no point with beam_width=4 can run: openvino has no beam search (beam_width=4)"
    )


def test_a_prompt_longer_than_every_window_is_an_error(write_scenario):
    path = write_scenario("""
        model: tiny-llama
        generation: {max_new_tokens: 32}
        sweep:
          adapter: [hf]
          prompt_len: [64, 4096]
          max_seq_len: [1024, 2048]
        """)
    errors = errors_of(path)
    assert (
        f"{path}:5: sweep.prompt_len.1: no point with prompt_len=4096 can run: prompt_len 4096 + max_new_tokens 32 exceeds max_seq_len 1024"
        in errors
    )


def test_values_some_points_can_run_leave_the_rest_to_skip(write_scenario):
    loaded = planning.load(
        write_scenario("""
        model: tiny-llama
        sweep:
          adapter: [hf, openvino]
          device: [cpu, CPU]
          beam_width: [1, 4]
        """)
    )
    assert len(loaded.sweep.beam_width) == 2


def test_remote_code_is_refused_unless_confirmed(write_scenario, capsys, tmp_path):
    path = write_scenario("model: {source: tiny-llama, trust_remote_code: true}\nsweep: {adapter: [hf]}\n")
    assert cli.main(["run", str(path), "--results", str(tmp_path)]) == 2
    assert "model.trust_remote_code: true runs code shipped with the model" in capsys.readouterr().err
    assert cli.main(["check", str(path)]) == 0


def test_known_failures_name_real_axes(write_scenario):
    path = write_scenario("""
        model: tiny-llama
        sweep: {adapter: [hf]}
        known_failures:
          - match: {quantisation: int4_sym}
            reason: x
        """)
    (error,) = errors_of(path)
    assert error.startswith(
        f"{path}:4: known_failures.0.match.quantisation: unknown axis 'quantisation'; did you mean 'quantization'?"
    )


def test_include_entries_may_name_other_adapters(write_scenario):
    # regression: adapters named only in include entries crashed validation with a KeyError
    loaded = planning.load(
        write_scenario("""
        model: tiny-llama
        sweep:
          adapter: [hf]
        include:
          - {adapter: xrt, device: cpu-reference, max_seq_len: 64}
        """)
    )
    assert [p.id for p in __import__("harness.scenario.sweep", fromlist=["expand"]).expand(loaded)] == [
        "hf-cpu-bf16",
        "xrt-cpu-reference-bf16-seq64",
    ]
    path = write_scenario(
        """
        model: tiny-llama
        sweep:
          adapter: [hf]
        include:
          - {adapter: xtr, device: npu}
        """,
        "typo.yaml",
    )
    (error,) = errors_of(path)
    assert error.startswith(f"{path}:5: include.0.adapter: unknown adapter 'xtr'") and "did you mean 'xrt'" in error


def test_adapter_options_must_name_an_adapter_of_the_sweep(write_scenario):
    path = write_scenario("""
        model: tiny-llama
        adapter_options:
          llamacpp: {n_batch: 64}
        sweep:
          adapter: [hf]
        """)
    (error,) = errors_of(path)
    assert "adapter_options names 'llamacpp', which no point of this sweep uses" in error


def test_a_warm_up_longer_than_a_timed_round_is_refused_naming_both_fields(write_scenario):
    path = write_scenario("""
        model: tiny-llama
        generation: {max_new_tokens: 8}
        measurement: {warmup_new_tokens: 9}
        sweep:
          adapter: [hf]
        """)
    (error,) = errors_of(path)
    assert str(path) in error
    assert "measurement.warmup_new_tokens is 9, more than generation.max_new_tokens (8)" in error
