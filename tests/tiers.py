"""Every test file's tier, in one table, and the guard that makes the ``unit`` tier a checked claim.

Tiers (registered in pyproject.toml, applied by ``tests/conftest.py`` at collection):

- ``unit``: in-process, no engine, no model, no subprocess. A unit test that starts a process or imports
  an engine (torch, openvino, llama_cpp, transformers) fails, at collection or when it runs (``guard``).
- ``engine``: real tiny engines or models, or another program (a browser, a database server, worker
  processes), driven from Python below the user's entry point.
- ``acceptance``: a command a user or contributor types — ``harness ...``, a pytest run, the static
  checks and the docs build — on real engines or as a subprocess.
- ``slow``: also the real Gemma 3 270M model (seconds to minutes); on top of one of the three.

A file's entry is its tier; a file that mixes tiers gives its default and the tests that differ, by
function name (every parametrization of that function). ``tests/project/test_tiers.py`` fails when a
test file is missing here or an entry names a file or a test that does not exist.
"""

from __future__ import annotations

import builtins
import importlib
import multiprocessing.util
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

TIERS = ("unit", "engine", "acceptance")
ENGINES = ("torch", "openvino", "llama_cpp", "transformers")


@dataclass(frozen=True)
class Tier:
    """A file's tier, the tests that differ from it (function name -> tier) and its slow tests."""

    default: str
    differ: dict[str, str] = field(default_factory=dict)
    slow: tuple[str, ...] = ()  # function names, or ("*",) for the whole file

    def of(self, function: str) -> str:
        return self.differ.get(function, self.default)

    def is_slow(self, function: str) -> bool:
        return "*" in self.slow or function in self.slow


U, E, A = Tier("unit"), Tier("engine"), Tier("acceptance")

# Paths relative to tests/.
TABLE: dict[str, Tier] = {
    "accuracy/test_failed_margin_fails_run_and_check.py": A,
    "accuracy/test_lm_eval_hook_install.py": A,
    "accuracy/test_paired_verdicts.py": U,
    "accuracy/test_task_accuracy.py": E,
    "adapters/test_capabilities.py": Tier(
        "unit", {"test_a_missing_kernel_in_a_run_fails_the_point_instead_of_skipping_its_gate": "engine"}
    ),
    "adapters/test_coreml.py": E,
    "adapters/test_hf.py": E,
    "adapters/test_architecture_matrix.py": Tier("engine", {"test_the_docs_table_is_the_matrix_the_tests_run": "unit"}),
    "adapters/test_llamacpp.py": Tier("engine", slow=("test_an_already_quantized_gguf_is_not_quantized_again",)),
    "adapters/test_checkpoints_an_engine_cannot_take.py": A,
    "adapters/test_gguf_header.py": U,
    "adapters/test_given_gguf.py": A,
    "adapters/test_given_ir.py": A,
    "adapters/test_llamacpp_converter.py": Tier(
        "unit", {"test_an_architecture_the_converter_does_not_know_is_refused_in_one_line": "engine"}
    ),
    "adapters/test_openvino.py": E,
    "adapters/test_openvino_pipeline_properties.py": U,
    "adapters/test_openvino_compile_probe.py": Tier(
        "unit",
        {
            "test_a_child_killed_by_a_signal_is_named_and_a_clean_or_raising_one_is_not": "engine",
            "test_harness_run_survives_a_plugin_that_dies_at_one_thread": "acceptance",
        },
    ),
    "adapters/test_registry.py": Tier(
        "unit", {"test_core_import_loads_no_engine": "engine", "test_cli_help_works_without_engines": "acceptance"}
    ),
    "adapters/test_sdk.py": U,
    "adapters/test_third_party_adapter.py": A,
    "adapters/test_xrt.py": E,
    "cli/test_bad_values.py": Tier(
        "unit",
        {
            "test_an_engine_that_reports_nan_fails_only_its_point_and_records_stay_strict_json": "engine",
            "test_concurrent_runners_compute_a_reference_once_and_never_read_half_a_file": "engine",
            "test_tokens_beyond_the_model_context_skip_the_point_with_the_reason": "engine",
            "test_pytest_refuses_an_unusable_results_directory_before_any_point": "acceptance",
            "test_pytest_harness_baseline_refuses_a_baseline_with_nothing_to_compare": "acceptance",
            "test_pytest_refuses_two_scenario_files_with_one_name": "acceptance",
            "test_pytest_harness_max_points_raises_the_limit": "acceptance",
        },
    ),
    "cli/test_impossible_values.py": Tier(
        "unit",
        {"test_an_engine_that_reports_an_impossible_figure_fails_its_point_and_the_record_stays_readable": "engine"},
    ),
    "cli/test_budget_plan.py": A,
    "cli/test_run_verdict.py": A,
    "cli/test_unusable_input_files.py": A,
    "cli/test_verify_records.py": A,
    "cli/test_verify_top1_engine.py": A,
    "cli/test_verify_verdict.py": A,
    "cli/test_write_failures.py": A,
    "correctness/test_bucket_tiers.py": U,
    "correctness/test_dequantized_check.py": E,
    "correctness/test_dequantized_bias.py": Tier(
        "engine",
        {
            "test_harness_run_and_verify_fail_a_layers_scale_by_bias": "acceptance",
            "test_harness_run_fails_an_int8_asym_zero_point_off_by_one": "acceptance",
        },
        slow=("test_the_default_models_k_quant_gguf_reads_back_without_bias",),
    ),
    "correctness/test_dequantized_bias_formats.py": Tier(
        "engine", {"test_harness_run_and_verify_fail_a_k_quant_layers_slip": "acceptance"}
    ),
    "correctness/test_dequantized_bias_openvino.py": Tier(
        "engine", {"test_harness_run_fails_an_int4_asym_layers_slip": "acceptance"}
    ),
    "correctness/test_dequantized_model.py": A,
    "correctness/test_tokenizer_arbiter.py": Tier(
        "acceptance", {"test_the_checkpoints_tokenizer_json_says_the_reference_is_right": "engine"}
    ),
    "correctness/test_dequantized_model_openvino.py": Tier(
        "acceptance",
        {
            "test_settings_the_model_does_not_cover_keep_the_comparison_report_only": "unit",
            "test_an_f32_run_rounds_the_kv_cache_only": "unit",
            "test_a_bf16_run_rounds_every_weight_and_activation": "unit",
            "test_an_f32_run_with_dynamic_quantization_rounds_each_compressed_matmuls_input_to_int8_groups": "engine",
            "test_the_bf16_model_rounds_weights_and_the_tensors_between_ops": "engine",
            "test_a_bf16_run_with_dynamic_quantization_rounds_in_bf16_then_each_compressed_matmuls_input_to_int8_groups": "unit",
            "test_a_matmul_that_quantizes_its_input_takes_it_in_bf16_then_int8_and_keeps_its_stored_weight": "engine",
        },
    ),
    "correctness/test_diagnosis.py": E,
    "correctness/test_diagnosis_on_path.py": Tier(
        "acceptance",
        {
            "test_a_prefill_path_fault_names_layer_and_chunk": "engine",
            "test_a_padded_prefill_read_at_its_padded_end_departs_at_the_logits_it_returned": "engine",
        },
    ),
    "correctness/test_check_diagnosis.py": Tier(
        "unit", {"test_harness_verify_names_the_tokenizer_when_only_its_check_fails": "acceptance"}
    ),
    "correctness/test_gate.py": Tier(
        "unit",
        {
            "test_reference_is_stored_reused_and_refused_when_stale": "engine",
            "test_a_model_of_the_same_name_gets_its_own_reference": "engine",
            "test_diagnosis_localises_a_skipped_layer": "engine",
            "test_a_decode_only_fault_fails_by_its_decode_phase_on_the_tiny_model": "engine",
            "test_harness_verify_passes_then_reuses_the_reference": "acceptance",
            "test_harness_run_records_the_verdict_and_fails_a_broken_engine": "acceptance",
        },
    ),
    "correctness/test_gate_beams.py": Tier("acceptance", {"test_path_notes_name_every_timed_difference": "unit"}),
    "correctness/test_gate_catches_faults.py": Tier("engine", slow=("*",)),
    "correctness/test_gate_chunk_tails.py": Tier(
        "acceptance", {"test_a_chunked_point_gets_long_prompts_ending_in_a_partial_tail_chunk": "unit"}
    ),
    "correctness/test_gate_long_prompts.py": A,
    "correctness/test_gate_prefill.py": A,
    "correctness/test_gate_stopping.py": Tier(
        "acceptance",
        {
            "test_stops_are_judged_against_the_reference": "unit",
            "test_an_early_stop_at_a_near_tie_passes": "unit",
            "test_a_stop_prompt_whose_reference_never_ends_is_not_run_and_recorded_as_such": "unit",
        },
    ),
    "correctness/test_speculative_engines.py": A,
    "correctness/test_speculative_gate.py": A,
    "correctness/test_speculative_verdict.py": U,
    "correctness/test_gate_timed_path.py": A,
    "correctness/test_gate_token_classes.py": A,
    "correctness/test_token_classes.py": U,
    "correctness/test_topk_tie_margin.py": U,
    "correctness/test_expected_flips.py": U,
    "correctness/test_lengths.py": Tier(
        "unit",
        {
            "test_every_shipped_scenario_that_sweeps_a_length_has_a_gate_at_its_length": "engine",
            "test_harness_reference_computes_each_gate_length_once": "acceptance",
        },
    ),
    "correctness/test_not_judged.py": A,
    "correctness/test_reference_identity.py": A,
    "correctness/test_same_weights.py": E,
    "correctness/test_weight_bias.py": U,
    "correctness/test_stepwise.py": U,
    "correctness/test_text_path.py": A,
    "correctness/test_batch_padding.py": Tier("acceptance", {"test_every_row_but_the_first_is_padded": "unit"}),
    "correctness/test_text_path_openvino.py": A,
    "correctness/test_verdict_arithmetic.py": U,
    "history/test_changepoint_decisions.py": U,
    "history/test_changepoints.py": U,
    "history/test_excluded_launches.py": A,
    "history/test_history_databases.py": Tier(
        "engine", {"test_a_database_from_a_newer_harness_is_one_line_naming_it": "unit"}
    ),
    "history/test_persist_option.py": U,
    "history/test_persistence_rule.py": U,
    "history/test_run_into_history.py": A,
    "measure/test_speculation_figures.py": U,
    "measure/test_busy_machine_flagged.py": A,
    "measure/test_canary.py": Tier(
        "unit",
        {
            "test_a_real_calibration_and_reading_are_positive": "engine",
            "test_disturbed_launches_are_rerun_a_bounded_number_of_times": "engine",
        },
    ),
    "measure/test_calibration_reuse.py": Tier(
        "engine", {"test_the_calibration_is_kept_in_the_cache_dir_one_file_per_machine": "unit"}
    ),
    "measure/test_canary_in_a_run.py": A,
    "measure/test_canary_child.py": E,
    "measure/test_disturbed_calibration.py": E,
    "measure/test_energy.py": Tier(
        "engine",
        {
            "test_energy_per_token_reaches_the_benchmark_json": "acceptance",
            "test_roofline_bound_from_bytes_and_bandwidth": "unit",
            "test_bandwidth_is_measured_once_per_machine": "unit",
        },
    ),
    "measure/test_launch_intervals.py": U,
    "measure/test_launch_statistics.py": U,
    "measure/test_machine_state.py": E,
    "measure/test_rounds.py": U,
    "measure/test_variance_components.py": U,
    "models/test_default_model.py": Tier("acceptance", slow=("*",)),
    "models/test_gguf_tensors_read_in_place.py": U,
    "models/test_hostile_model_files.py": Tier(
        "acceptance", {"test_the_well_formed_gguf_these_are_built_from_passes": "unit"}
    ),
    "models/test_given_artefacts.py": Tier(
        "unit",
        {  # their sweeps run openvino: the check asks its plugin for the native precision
            "test_an_artefact_whose_adapter_every_point_excludes_is_refused": "engine",
            "test_artefacts_of_the_checkpoints_vocabulary_pass_the_check": "engine",
        },
    ),
    "models/test_sources.py": Tier(
        "unit",
        {
            "test_tiny_models_are_deterministic_per_seed": "engine",
            "test_a_chat_template_edited_in_place_changes_the_checksum_the_caches_are_keyed_by": "engine",
        },
    ),
    "moe/test_capacity.py": Tier("engine", {"test_shipped_moe_chunks_scenario_records_every_chunk_size": "acceptance"}),
    "moe/test_routing.py": E,
    "project/test_claims.py": U,
    "project/test_docs.py": A,
    "project/test_imports.py": Tier("unit", {"test_front_doors_import_no_engine": "engine"}),
    "project/test_inline_runs.py": E,
    "project/test_nightly_template.py": A,
    "project/test_one_address.py": U,
    "project/test_setup_environment_key.py": A,
    "project/test_suite_time.py": A,
    "project/test_tiers.py": U,
    "project/test_tooling.py": A,
    "pytest_plugin/test_nightly_selection.py": A,
    "pytest_plugin/test_baseline_verdict_options.py": A,
    "pytest_plugin/test_collection_reach.py": A,
    "pytest_plugin/test_exit_codes.py": A,
    "pytest_plugin/test_interleaved_launches.py": A,
    "pytest_plugin/test_points_as_tests.py": A,
    "pytest_plugin/test_verdict_outcomes.py": A,
    "record/test_flat_dequantized_columns.py": E,
    "record/test_llamacpp_precision_in_ids.py": A,
    "record/test_metric_catalogue.py": Tier("unit", {"test_every_metric_a_real_point_records_is_catalogued": "engine"}),
    "record/test_precision_in_ids.py": A,
    "record/test_reader_properties.py": U,
    "record/test_record_parts.py": U,
    "record/test_run_verdict.py": U,
    "record/test_store.py": U,
    "regression/test_bisect_finds_the_commit.py": A,
    "regression/test_baseline_compare_gate_commands.py": U,
    "regression/test_check.py": U,
    "regression/test_failure_names_its_rule.py": U,
    "regression/test_check_statistics.py": U,
    "regression/test_check_correctness_sides.py": U,
    "regression/test_check_texts.py": U,
    "regression/test_confirm_reruns.py": A,
    "regression/test_detectable_change.py": U,
    "regression/test_engine_options_comparability.py": U,
    "regression/test_incomparable_baseline.py": A,
    "regression/test_known_failures_gate.py": U,
    "regression/test_launch_test_protocol.py": U,
    "regression/test_three_outcome_verdicts.py": U,
    "regression/test_verdict_commands.py": A,
    "report/test_ci_pages.py": Tier(
        "unit",
        {
            "test_run_writes_its_page_and_bencher_metric_format": "engine",
            "test_pytest_writes_the_page_and_bmf_beside_the_benchmark_json": "acceptance",
        },
    ),
    "report/test_speculative_plot.py": U,
    "report/test_export_token_classes.py": U,
    "report/test_launch_views.py": Tier(
        "unit", {"test_the_report_with_launches_loads_in_chromium_with_every_plot": "engine"}
    ),
    "report/test_quickstart_outputs.py": Tier(
        "unit",
        {
            "test_steps_report_their_phase": "engine",
            "test_the_quickstart_report_loads_in_chromium_with_its_token_and_kl_plots": "engine",
        },
    ),
    "report/test_report.py": Tier(
        "unit",
        {
            "test_the_page_loads_in_chromium_without_console_errors_and_shows_its_plots": "engine",
            "test_the_chromium_check_catches_a_broken_page": "engine",
        },
    ),
    "report/test_report_from_benchmark_json.py": A,
    "run/test_draft_tokenizer.py": A,
    "run/test_auto_launches.py": A,
    "run/test_run_budget.py": Tier("acceptance", {"test_budgets_are_written_in_seconds_minutes_or_hours": "unit"}),
    "run/test_gate_records_through_workers.py": A,
    "run/test_interrupted_launches.py": A,
    "run/test_isolation.py": E,
    "run/test_launch_record_on_disk.py": A,
    "run/test_lifecycle.py": A,
    "run/test_load_point.py": Tier(
        "unit",
        {
            "test_lm_eval_loads_a_point_with_the_settings_harness_run_loads_it_with": "engine",
            "test_a_point_harness_run_skips_is_refused_by_load_point_with_the_same_reason": "engine",
        },
    ),
    "run/test_resume_settings.py": A,
    "run/test_runner.py": E,
    "run/test_default_reference_store.py": Tier(
        "engine", {"test_the_default_store_is_the_environments_else_results_references": "unit"}
    ),
    "run/test_step_errors.py": Tier(
        "engine",
        {
            "test_an_engine_message_over_several_lines_is_one_line_naming_the_step_and_the_file": "unit",
            "test_a_step_that_failed_once_fails_the_same_file_again_without_running_inside_a_run": "unit",
        },
    ),
    "pytest_plugin/test_progress_under_pytest.py": A,
    "scenario/test_point_selection.py": Tier("unit", {"test_run_k_keeps_what_the_expressions_select": "engine"}),
    "run/test_progress_lines.py": Tier(
        "engine",
        {
            "test_a_line_per_kind_of_phase_and_a_heartbeat_within_one": "unit",
            "test_a_quiet_phase_is_repeated_with_its_elapsed_time_and_idle_is_silent": "unit",
        },
    ),
    "project/test_scheduler_templates.py": Tier(
        "acceptance",
        {
            "test_shard_auto_reads_each_schedulers_variables": "unit",
            "test_shard_auto_refuses_missing_or_impossible_variables_naming_them": "unit",
        },
    ),
    "run/test_shard.py": Tier(
        "unit",
        {
            "test_shards_partition_the_points_and_keep_model_groups_together": "engine",
            "test_the_split_is_the_same_on_every_machine": "engine",
        },
    ),
    "run/test_point_imports.py": A,
    "run/test_worker_prefetch.py": U,
    "run/test_worker_start_accounting.py": U,
    "run/test_workers.py": E,
    "scenario/test_adapter_options.py": Tier(
        "unit", {"test_a_valid_option_reaches_the_engine_and_the_record_shows_it": "engine"}
    ),
    "scenario/test_axes.py": U,
    "scenario/test_speculative_axis.py": U,
    "scenario/test_check_refuses_late_failures.py": U,
    "scenario/test_check_names_skipping_points.py": Tier(
        "unit",
        {
            "test_an_architecture_the_converter_refuses_is_a_point_that_will_skip": "acceptance",
            "test_the_shipped_tiny_architectures_are_taken_by_the_converter": "acceptance",
            "test_check_and_run_keep_the_converters_lookup_and_gguf_in_the_cache_dir": "acceptance",
        },
    ),
    "scenario/test_malformed_yaml.py": U,
    "scenario/test_sweep.py": Tier("unit", {"test_quantization_replaces_the_dtype_in_ids": "engine"}),
    "scenario/test_validation.py": Tier(
        "unit",
        {
            "test_an_axis_value_no_point_can_run_is_an_error": "engine",
            "test_values_some_points_can_run_leave_the_rest_to_skip": "engine",
        },
    ),
}


class TierViolation(RuntimeError):
    """A unit test started a process or imported an engine. Not an ImportError: ``importorskip`` must not
    turn it into a skip."""


@contextmanager
def guard(violations: list[str]) -> Iterator[list[str]]:
    """While active, starting a process or importing an engine appends to ``violations`` and raises."""

    def refuse(what: str):
        violations.append(what)
        raise TierViolation(f"a unit test {what}")

    real_import, real_import_module = builtins.__import__, importlib.import_module

    def checked_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and name.partition(".")[0] in ENGINES:
            refuse(f"imports {name}")
        return real_import(name, globals, locals, fromlist, level)

    def checked_import_module(name, package=None):
        if name.partition(".")[0] in ENGINES:
            refuse(f"imports {name}")
        return real_import_module(name, package)

    def no_process(what):
        return lambda *args, **kwargs: refuse(f"starts a process ({what})")

    patches = [
        (builtins, "__import__", checked_import),
        (importlib, "import_module", checked_import_module),
        (subprocess.Popen, "_execute_child", no_process("subprocess")),
        (multiprocessing.util, "spawnv_passfds", no_process("multiprocessing")),
        *[
            (os, name, no_process(f"os.{name}"))
            for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system")
        ],
    ]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches if hasattr(owner, name)]
    for owner, name, replacement in patches:
        if hasattr(owner, name):
            setattr(owner, name, replacement)
    try:
        yield violations
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)
