"""The machine-speed canary's verdicts, the bounded re-runs of disturbed launches, and old point ids renamed
as records load (issue #30). No wall-clock ratio is asserted: readings are built by hand, or the tolerance
is 0 so every real launch counts as moved."""

from __future__ import annotations

import pytest

from harness.measure import canary
from harness.records.record import Record, launch_values
from harness.records.samples import CanaryCalibration, Launch
from harness.run import planning
from harness.run.runner import Runner
from harness.run.settings import RunSettings
from harness.scenario.sweep import expand
from tests.records import record
from tests.tiny_scenario import tiny


def test_a_moved_canary_or_a_noisy_machine_excludes_a_launch():
    calibration = CanaryCalibration(seconds=0.1)
    steady = canary.reading(calibration, 0.105, 0.098)
    assert canary.exclusion(steady, None, 0.15) is None
    slow_after = canary.reading(calibration, 0.1, 0.13)
    why = canary.exclusion(slow_after, None, 0.15)
    assert why and why.startswith("canary 1.30x its calibration after the timed window (tolerance 15%")
    assert canary.exclusion(steady, None, 0) is not None  # 0: every launch counts as moved
    assert canary.exclusion(None, "other processes used 90% of 2 cores", 0.15) == (
        "noisy machine: other processes used 90% of 2 cores"
    )
    assert canary.exclusion(None, None, 0.15) is None  # no canary ran (an older record): nothing to say
    assert slow_after.ratio == pytest.approx(1.15)


def test_excluded_launches_stay_in_the_record_but_not_in_the_tested_values():
    r = record("p", tpot_ms=10.0)
    r.samples.launches = [
        Launch(index=0, medians={"tpot_ms": 10.0}),
        Launch(index=1, medians={"tpot_ms": 30.0}, excluded="canary 1.50x ..."),
        Launch(index=2, medians={"tpot_ms": 11.0}),
    ]
    assert launch_values(r, "tpot_ms") == [10.0, 11.0]
    again = Record.from_dict(r.to_dict())
    assert again.samples.launches[1].excluded == "canary 1.50x ..."


def test_a_real_calibration_and_reading_are_positive():
    calibration = canary.calibrate(runs=2)
    assert calibration.seconds > 0 and len(calibration.readings_s) == 2
    with canary.around(calibration) as edges:
        pass
    reading = edges.result()
    assert reading is not None and reading.before_s > 0 and reading.after_s > 0
    with canary.around(None) as nothing:
        pass
    assert nothing.result() is None


@pytest.mark.parametrize("reruns, expected", [(0, 2), (3, 5)])
def test_disturbed_launches_are_rerun_a_bounded_number_of_times(
    write_scenario, tmp_path, fake_adapters, reruns, expected
):
    loaded = planning.load(
        write_scenario(
            tiny(
                generation={"max_new_tokens": 3},
                measurement={"launches": 2, "canary_tolerance": 0, "disturbed_reruns": reruns},
            )
        )
    )
    runner = Runner(RunSettings(results_dir=tmp_path, isolation="none", energy=False))
    (point,) = expand(loaded)
    merged = runner.run_point(loaded, point)
    assert len(merged.samples.launches) == expected
    assert all(entry.excluded and entry.canary is not None for entry in merged.samples.launches)
    assert merged.environment["canary"]["seconds"] > 0


def test_old_llamacpp_ids_are_renamed_as_records_load():
    def old(pid: str, file_type, device="cpu", quantization="none") -> dict:
        data = record(pid, adapter="llamacpp", device=device).to_dict()
        data["point"]["quantization"] = quantization
        data["settings"] = {"model": {"dtype": "bf16"}}
        del data["engine"]  # version 2: the adapter's description, a flat dict
        data["schema_version"] = 2
        data["adapter"] = {"engine": "llama.cpp"} | ({"file_type": file_type} if file_type else {})
        return data

    assert Record.from_dict(old("llamacpp-cpu-bf16", "MOSTLY_Q4_K_M")).point_id == "llamacpp-cpu-q4_k_m"
    assert Record.from_dict(old("llamacpp-cpu-bf16-prompt32", "MOSTLY_F16")).point_id == "llamacpp-cpu-f16-prompt32"
    assert Record.from_dict(old("llamacpp-gpu-bf16", "MOSTLY_Q4_K_M", device="gpu")).point_id == "llamacpp-gpu-q4_k_m"
    renamed = Record.from_dict(old("llamacpp-cpu-bf16", "MOSTLY_Q4_K_M"))
    assert Record.from_dict(renamed.to_dict()).point_id == "llamacpp-cpu-q4_k_m"  # idempotent
    assert Record.from_dict(old("llamacpp-cpu-int8_sym", "MOSTLY_Q8_0", quantization="int8_sym")).point_id == (
        "llamacpp-cpu-int8_sym"  # a quantization level names itself
    )
    assert Record.from_dict(old("llamacpp-cpu-bf16", None)).point_id == "llamacpp-cpu-bf16"  # nothing says what ran


def test_disturbed_launches_are_one_warning_line_per_point_and_none_for_a_single_launch():
    from harness.cli.output import run_table_lines
    from tests.records import launch_record

    three = launch_record(10.0, 10.1, 10.2, excluded=(0, 2))
    three.samples.launches[2].excluded = "noisy machine: other processes used 90% of 2 cores"
    lines = [line.strip() for line in run_table_lines([three]) if "disturbed" in line]
    assert lines == [
        "warning: 2 of 3 launches excluded from the significance test as disturbed (launch 1: canary moved; "
        "launch 3: noisy machine: other processes used 90% of 2 cores)"
    ]
    same = launch_record(10.0, 10.1, 10.2, excluded=(0, 1))
    assert [line.strip() for line in run_table_lines([same]) if "disturbed" in line] == [
        "warning: 2 of 3 launches excluded from the significance test as disturbed (launches 1, 2: canary moved)"
    ]
    single = launch_record(10.0, excluded=(0,))  # one launch: no significance test reads the exclusion
    assert not any("excluded" in line for line in run_table_lines([single]))
