"""``pytest scenarios/ --benchmark-json out.json``: one test and one benchmark per sweep point."""

from __future__ import annotations

import json
import textwrap

import pytest

from harness.records.columns import round_values

FAKE_SWEEP = """
model: tiny-llama
prompts: ["The river"]
generation: {max_new_tokens: 5}
measurement: {warmup_rounds: 0, min_rounds: 3}
markers: [nightly]
sweep:
  adapter: [fake, fake-failing]
  device: [cpu, npu]
"""


# Points run in pytest's own process where the worker path is not what a test is about (a worker costs a
# fresh interpreter per engine); test_one_test_per_point_... and the fresh-process test keep the default.
IN_PROCESS = ("--harness-isolation", "none")


def write(pytester, text, name="sweep.yaml"):
    path = pytester.path / "scenarios" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def test_one_test_per_point_with_readable_ids_and_outcomes(pytester, fake_adapters):
    write(pytester, FAKE_SWEEP)
    result = pytester.runpytest("scenarios/", "-v", "-ra", "-p", "no:cacheprovider", "--benchmark-json", "out.json")
    result.assert_outcomes(passed=1, failed=1, skipped=2)
    result.stdout.fnmatch_lines(
        [
            "*scenarios/sweep.yaml::fake-cpu-bf16 PASSED*",
            "*scenarios/sweep.yaml::fake-failing-cpu-bf16 FAILED*",
            "*_ fake-failing-cpu-bf16 _*",
            "RuntimeError: fake engine fault at step 3",
            "*SKIPPED*fake:npu unavailable: no fake NPU on this machine*",
        ]
    )
    (bench,) = json.loads((pytester.path / "out.json").read_text())["benchmarks"]
    assert bench["name"] == "fake-cpu-bf16"
    info = bench["extra_info"]
    for key in ("ttft_ms", "tpot_ms", "decode_tokens_per_s", "adapter", "device", "max_seq_len", "quantization"):
        assert key in info
    assert info["adapter"] == "fake" and info["status"] == "ok"
    # stats are seconds per generated token: every inter-token gap of every round
    record = json.loads((pytester.path / "results" / "sweep" / "fake-cpu-bf16.json").read_text())
    gaps = [g for r in record["samples"]["rounds"] for g in r["gaps_s"]]
    assert bench["stats"]["rounds"] == len(gaps) == 3 * 4
    assert bench["stats"]["mean"] == pytest.approx(sum(gaps) / len(gaps))
    # the benchmark file carries the record, so reports and gates read it like a results directory
    from harness.records import store

    (carried,) = [r for _, r in store.iter_records(pytester.path / "out.json")]
    assert carried.point_id == "fake-cpu-bf16" and carried.metrics == record["metrics"]
    assert len(round_values(carried)["tpot_ms"]) == 3


def test_markers_select_by_adapter_device_and_scenario(pytester, fake_adapters):
    write(pytester, FAKE_SWEEP)
    result = pytester.runpytest("scenarios/", "-m", "fake and cpu and nightly", "--strict-markers", *IN_PROCESS)
    result.assert_outcomes(passed=1)
    result = pytester.runpytest("scenarios/", "-k", "failing and npu", *IN_PROCESS)
    result.assert_outcomes(skipped=1)


def test_malformed_scenario_is_a_collection_error_naming_file_line_and_field(pytester, fake_adapters):
    write(pytester, "model: tiny-llama\nsweep:\n  adapter: [fake]\n  beam_width: [one]\n", "broken.yaml")
    result = pytester.runpytest("scenarios/")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*scenarios/broken.yaml:4: sweep.beam_width.0: *"])
    assert "Traceback" not in result.stdout.str()


def test_yaml_outside_scenario_directories_is_not_collected(pytester, fake_adapters):
    (pytester.path / "config.yaml").write_text("not: a scenario\n")
    pytester.makepyfile(test_plain="def test_ok(): pass")
    pytester.runpytest().assert_outcomes(passed=1)


def test_real_engine_end_to_end_in_a_fresh_process(pytester, tiny_llama):
    write(
        pytester,
        """
        model: tiny-llama
        generation: {max_new_tokens: 4}
        measurement: {warmup_rounds: 1, min_rounds: 2, threads: 2}
        sweep:
          adapter: [hf]
          prompt_len: [16]
        """,
        "tiny.yaml",
    )
    result = pytester.runpytest_subprocess(
        "scenarios/tiny.yaml", "--benchmark-json", "out.json", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1)
    (bench,) = json.loads((pytester.path / "out.json").read_text())["benchmarks"]
    assert bench["name"] == "hf-cpu-bf16-prompt16"
    assert bench["extra_info"]["prompt_tokens"] == 16 and bench["extra_info"]["tpot_ms"] > 0


def test_known_failures_are_xfail(pytester, fake_adapters):
    write(
        pytester,
        FAKE_SWEEP
        + """
known_failures:
  - match: {adapter: fake-failing, device: cpu}
    reason: engine bug 1234
""",
    )
    result = pytester.runpytest("scenarios/", "-rx", *IN_PROCESS)
    result.assert_outcomes(passed=1, xfailed=1, skipped=2)
    result.stdout.fnmatch_lines(["*known failure (engine bug 1234): RuntimeError: fake engine fault at step 3*"])


def test_remote_code_needs_the_command_line_to_confirm(pytester, fake_adapters):
    write(pytester, FAKE_SWEEP.replace("model: tiny-llama", "model: {source: tiny-llama, trust_remote_code: true}"))
    result = pytester.runpytest("scenarios/", *IN_PROCESS)
    result.stdout.fnmatch_lines(["*model.trust_remote_code: true runs code shipped with the model; confirm with*"])
    assert result.ret != 0
    pytester.runpytest("scenarios/", "--harness-trust-remote-code", *IN_PROCESS).assert_outcomes(
        passed=1, failed=1, skipped=2
    )


BASELINE_SWEEP = """
model: tiny-llama
prompts: ["The river"]
generation: {max_new_tokens: 5}
measurement: {warmup_rounds: 0, min_rounds: 3}
sweep:
  adapter: [fake]
  max_seq_len: [64, 128]
"""


AGAINST_NIGHTLY = ("--harness-baseline", "nightly", "--harness-baselines-dir", "baselines", "-p", "no:cacheprovider")


def save_baseline(pytester, tpot_ms, point_ids):
    from harness.records import store
    from harness.records.engine import EngineInfo
    from harness.regression import baseline
    from tests.records import record

    for pid in point_ids:
        made = record(pid, scenario="sweep", adapter="fake", tpot_ms=tpot_ms, ttft_ms=50.0, verdict=None)
        made.engine = EngineInfo(name="fake", version="0")  # the engine the session runs: comparable
        store.write(made, pytester.path / "base-records")
    baseline.save([pytester.path / "base-records"], "nightly", pytester.path / "baselines")


def test_harness_baseline_gates_the_session(pytester, fake_adapters):
    write(pytester, BASELINE_SWEEP)
    save_baseline(pytester, tpot_ms=0.5, point_ids=["fake-cpu-bf16-seq64", "fake-cpu-bf16-seq128"])
    gated = (*AGAINST_NIGHTLY, *IN_PROCESS)
    result = pytester.runpytest("scenarios/", *gated)  # the fake takes ~2 ms/token; the baseline says 0.5
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*harness regression check*",
            "FAIL sweep::fake-cpu-bf16-seq64: regression: tpot_ms 0.5* -> *worse; limit 5%*",
            "regression check vs nightly: FAIL (2 problem(s)); 2 point(s) compared",
        ]
    )
    relaxed = pytester.runpytest("scenarios/", *gated, "--harness-max-regression", "tpot=2000%,ttft=100000%")
    assert relaxed.ret == pytest.ExitCode.OK
    relaxed.stdout.fnmatch_lines(["regression check vs nightly: PASS; 2 point(s) compared"])


def test_harness_fdr_sets_the_false_discovery_rate_of_the_launch_test(pytester, fake_adapters):
    """Five launches in the baseline, eight now: a regression at the default rate even if a loaded machine has
    five of the eight excluded as disturbed, and one no launch count this small can show at ``--harness-fdr
    0.001`` (Mann-Whitney's smallest one-sided p is 1/1287, its q over the two metrics 0.0016)."""
    from harness.measure.launch_stats import combine, launch
    from harness.records import store
    from harness.records.engine import EngineInfo
    from harness.regression import baseline
    from tests.records import record

    write(pytester, BASELINE_SWEEP.replace("max_seq_len: [64, 128]", "max_seq_len: [64]"))
    parts = []
    for i in range(5):  # the baseline's launches: 0.5 ms/token, the fake takes ~2
        part = record("fake-cpu-bf16-seq64", scenario="sweep", adapter="fake", tpot_ms=0.5 * (1 + 0.01 * i), seed=i)
        part.samples.launches = [launch(part.metrics, part.samples.rounds)]
        parts.append(part)
    merged = combine(parts)
    merged.engine = EngineInfo(name="fake", version="0")
    store.write(merged, pytester.path / "base-records")
    baseline.save([pytester.path / "base-records"], "nightly", pytester.path / "baselines")
    gated = (
        *AGAINST_NIGHTLY,
        *IN_PROCESS,
        "--harness-launches",
        "8",
        "--harness-max-regression",
        "tpot=5%,ttft=100000%",
    )
    flagged = pytester.runpytest("scenarios/", *gated)
    assert flagged.ret == pytest.ExitCode.TESTS_FAILED
    flagged.stdout.fnmatch_lines(["FAIL sweep::fake-cpu-bf16-seq64: regression: tpot_ms*launches, Mann-Whitney p=*"])
    strict = pytester.runpytest("scenarios/", *gated, "--harness-fdr", "0.001")
    assert strict.ret == pytest.ExitCode.OK, strict.stdout.str()
    assert "too few launches to show it" in strict.stdout.str()


def test_the_old_gate_json_spelling_still_writes_the_regression_json_and_warns(pytester, fake_adapters):
    """``--harness-gate-json`` (before the regression check stopped being called a gate) works for one more
    release: the same JSON file, and one warning line naming ``--harness-regression-json``."""
    write(pytester, BASELINE_SWEEP)
    save_baseline(pytester, tpot_ms=0.5, point_ids=["fake-cpu-bf16-seq64", "fake-cpu-bf16-seq128"])
    gated = (*AGAINST_NIGHTLY, *IN_PROCESS)
    relaxed = ("--harness-max-regression", "tpot=2000%,ttft=100000%")
    old = pytester.runpytest("scenarios/", *gated, *relaxed, "--harness-gate-json", "old.json")
    assert old.ret == pytest.ExitCode.OK
    old.stdout.fnmatch_lines(
        [
            "*PytestDeprecationWarning: --harness-gate-json is deprecated and will be removed in the next release; "
            "use --harness-regression-json",
        ]
    )
    new = pytester.runpytest("scenarios/", *gated, *relaxed, "--harness-regression-json", "new.json")
    assert new.ret == pytest.ExitCode.OK and "deprecated" not in new.stdout.str()
    written = {name: json.loads((pytester.path / name).read_text()) for name in ("old.json", "new.json")}
    assert [(w["baseline"], w["verdict"], w["compared"]) for w in written.values()] == [("nightly", "pass", 2)] * 2
    both = pytester.runpytest(
        "scenarios/", *gated, "--harness-gate-json", "a.json", "--harness-regression-json", "b.json"
    )
    assert both.ret == pytest.ExitCode.USAGE_ERROR
    both.stderr.fnmatch_lines(["*--harness-gate-json a.json and --harness-regression-json b.json: give one*"])


def test_harness_baseline_flags_lost_points_but_not_deselected_ones(pytester, fake_adapters):
    write(pytester, BASELINE_SWEEP)
    save_baseline(
        pytester, tpot_ms=2.0, point_ids=["fake-cpu-bf16-seq64", "fake-cpu-bf16-seq128", "fake-cpu-bf16-seq256"]
    )
    gated = (*AGAINST_NIGHTLY, "--harness-max-regression", "tpot=2000%,ttft=100000%", *IN_PROCESS)
    result = pytester.runpytest("scenarios/", "-k", "seq64", *gated)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["FAIL sweep::fake-cpu-bf16-seq256: missing: ran in the baseline, no record now"])
    assert "seq128" not in result.stdout.str()  # deselected with -k, so not expected
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_bad_regression_thresholds_stop_pytest_before_running(pytester, fake_adapters):
    write(pytester, BASELINE_SWEEP)
    result = pytester.runpytest("scenarios/", "--harness-max-regression", "tpot=fast")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--max-regression: 'tpot=fast': expected NAME=PERCENT*"])


def test_harness_shard_splits_points_like_harness_run(pytester, fake_adapters):
    write(pytester, BASELINE_SWEEP.replace("adapter: [fake]", "adapter: [fake, fake-failing]"))
    ran = []
    for shard in ("1/2", "2/2"):
        result = pytester.runpytest("scenarios/", "--harness-shard", shard, "-v", "-p", "no:cacheprovider", *IN_PROCESS)
        ran.append({line.split("::")[1].split()[0] for line in result.stdout.lines if line.startswith("scenarios/")})
    # one engine per shard: its two points share whatever that engine converts
    assert sorted(ran, key=sorted) == [
        {"fake-cpu-bf16-seq128", "fake-cpu-bf16-seq64"},
        {"fake-failing-cpu-bf16-seq128", "fake-failing-cpu-bf16-seq64"},
    ]
    bad = pytester.runpytest("scenarios/", "--harness-shard", "3/2")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
