"""`harness plan SCENARIO... --budget`: a line per point with its cost (measured by its earlier record on this
runner, or estimated and said so), its launches and gate prompts and the change it could detect; the gate
prompts, then the launches, come down to fit; points that do not fit or skip here are left out with why;
the closing line is the `harness run` command of the plan."""

from __future__ import annotations

import json
import re
from importlib.util import find_spec

import pytest

from harness import cli
from tests.tiny_scenario import tiny

SPLIT = dict(process_start_s=0.0, imports_s=0.0, conversion_s=0.0, load_s=0.0, warmup_s=0.0, timed_s=0.0)


def plan(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(["plan", *argv])
    captured = capsys.readouterr()
    return code, captured.err + captured.out  # stdout last: the plan's closing line


def ran(tmp_path, capsys, path, *options: str) -> None:
    argv = ["run", str(path), "--results", str(tmp_path / "results"), "--isolation", "none", "--no-progress"]
    code = cli.main([*argv, "--no-energy", *options])
    captured = capsys.readouterr()  # the run's own output, not the plan's
    assert code == 0, captured.err + captured.out


def cost_on_disk(
    tmp_path, point_id: str, gate_s: float, timed_s: float, scenario: str = "sweep", reference_s=None, conversion_s=0.0
) -> None:
    """Give the point's record a known time split (its launches' sum), so the plan's arithmetic is exact;
    ``reference_s``: of its gate time, what getting the gate's reference took."""
    path = tmp_path / "results" / scenario / f"{point_id}.json"
    data = json.loads(path.read_text())
    data["time_split"] = {**SPLIT, "gate_s": gate_s, "timed_s": timed_s, "accuracy_s": 0.0, "other_s": 0.0}
    data["time_split"]["conversion_s"] = conversion_s
    if reference_s is not None:
        data["correctness"]["reference"]["obtained_s"] = reference_s
    path.write_text(json.dumps(data))


def test_a_point_without_a_record_is_estimated_and_says_so(write_scenario, tmp_path, capsys, fake_adapters):
    path = write_scenario(tiny(name="sweep", sweep={"batch_size": [1, 2]}))
    code, out = plan(capsys, str(path), "--budget", "10m", "--results", str(tmp_path / "results"))
    assert code == 0, out
    assert out.startswith("plan for budget 10m (600 s): 2 of 2 point(s), each scenario's own launches")
    assert "  sweep::fake-cpu-bf16-bs1: about " in out
    assert "launches 1 (estimated, no record (tiny model))" in out
    assert "detectable change: none (one launch: no significance test)" in out
    assert out.rstrip().splitlines()[-1] == f"run it with: harness run {path} --budget 10m"


def test_records_made_here_give_the_cost_and_the_detectable_change(write_scenario, tmp_path, capsys, fake_adapters):
    path = write_scenario(tiny(name="sweep", measurement={"launches": 3}))
    ran(tmp_path, capsys, path)
    cost_on_disk(tmp_path, "fake-cpu-bf16", gate_s=0.0, timed_s=30.0)  # 10 s a launch
    code, out = plan(capsys, str(path), "--budget", "1h", "--results", str(tmp_path / "results"))
    assert code == 0, out
    assert "  sweep::fake-cpu-bf16: about 30 s, launches 3 (measured 2026-" in out
    assert " on this runner)" in out
    # the figure `harness run` prints under the point, at the planned launches
    assert "detectable change if the baseline has this run's noise (80 % power, 3 vs 3 launches" in out


def test_launches_come_down_to_the_minimum_then_points_are_left_out(write_scenario, tmp_path, capsys, fake_adapters):
    path = write_scenario(tiny(name="sweep", measurement={"launches": 5}, sweep={"batch_size": [1, 2]}))
    ran(tmp_path, capsys, path)
    for point in ("fake-cpu-bf16-bs1", "fake-cpu-bf16-bs2"):
        cost_on_disk(tmp_path, point, gate_s=0.0, timed_s=50.0)  # 10 s a launch
    results = ("--results", str(tmp_path / "results"))
    code, out = plan(capsys, str(path), "--budget", "65s", *results)
    assert code == 0, out
    assert "2 of 2 point(s), 3 launch(es) a point, about 60 s" in out
    assert out.rstrip().endswith("--budget 65s --launches 3")
    code, out = plan(capsys, str(path), "--budget", "65s", "--min-launches", "4", *results)
    assert code == 0, out
    assert "1 of 2 point(s), 4 launch(es) a point, about 40 s" in out
    assert "  sweep::fake-cpu-bf16-bs2: does not fit: needs about 40 s at 4 launch(es), 25 s of the budget left" in out
    assert out.rstrip().endswith("--budget 65s --launches 4 -k fake-cpu-bf16-bs1")
    code, out = plan(capsys, str(path), "--budget", "30s", "--min-launches", "4", *results)
    assert code == 1, out
    assert out.rstrip().endswith("nothing fits: raise the budget or lower --min-launches")


def test_gate_prompts_come_down_before_launches(write_scenario, tmp_path, capsys, fake_adapters):
    ran(tmp_path, capsys, write_scenario(tiny(name="sweep", measurement={"launches": 2})))
    cost_on_disk(tmp_path, "fake-cpu-bf16", gate_s=32.0, timed_s=20.0)  # 2 s a gate prompt, 10 s a launch
    gate = {"prompts": "all"}  # 16 prompts: the same point, now gated
    path = write_scenario(tiny(name="sweep", gate=gate, measurement={"launches": 2}), "gated.yaml")
    code, out = plan(capsys, str(path), "--budget", "30s", "--results", str(tmp_path / "results"))
    assert code == 0, out
    assert "1 of 1 point(s), each scenario's own launches, 2 gate prompts a point, about 24 s" in out
    assert "sweep::fake-cpu-bf16: about 24 s, launches 2, gate prompts 2 (measured" in out
    assert out.rstrip().endswith("--budget 30s --gate-prompts 2")


def test_points_that_skip_here_are_left_out_with_the_reason(write_scenario, tmp_path, capsys, fake_adapters):
    path = write_scenario(tiny(name="sweep", sweep={"device": ["cpu", "npu"]}))
    code, out = plan(capsys, str(path), "--budget", "90s", "--results", str(tmp_path / "results"))
    assert code == 0, out
    assert "1 of 2 point(s)" in out
    assert "left out (1):\n  sweep::fake-npu-bf16: skips here: fake:npu unavailable: no fake NPU on this machine" in out


def test_a_bad_budget_is_refused_with_what_was_expected(write_scenario, capsys, fake_adapters):
    path = write_scenario(tiny(name="sweep"))
    with pytest.raises(SystemExit) as exited:
        cli.main(["plan", str(path), "--budget", "soon"])
    assert exited.value.code == 2
    assert "'soon': expected a positive duration such as 90s, 45m or 2h" in capsys.readouterr().err


def test_run_gate_prompts_runs_that_many_gate_prompts(write_scenario, tmp_path, capsys, tiny_llama, reference_dir):
    gate = {"prompts": "all", "tokens": 4, "length": "short"}  # 16 prompts, cut to 2
    path = write_scenario(tiny(name="sweep", gate=gate, sweep={"adapter": ["hf"]}))
    ran(tmp_path, capsys, path, "--gate-prompts", "2", "--reference-dir", str(reference_dir))
    record = json.loads((tmp_path / "results" / "sweep" / "hf-cpu-bf16.json").read_text())
    kinds = [prompt["kind"] for prompt in record["correctness"]["prompts"]]
    assert sorted(kind for kind in kinds if kind in ("plain", "chat")) == ["chat", "plain"], kinds  # the ci pair


def test_minus_m_plans_the_points_whose_markers_match_as_pytest_m(write_scenario, tmp_path, capsys, fake_adapters):
    night = write_scenario(tiny(name="night", markers=["nightly"], sweep={"adapter": ["fake", "fake-failing"]}))
    write_scenario(tiny(name="day"), "day.yaml")
    folder, results = str(night.parent), ("--results", str(tmp_path / "results"))
    code, out = plan(capsys, folder, "-m", "nightly", "--budget", "1h", *results)  # a folder, as pytest takes
    assert code == 0, out
    assert "2 of 2 point(s)" in out and "night::fake-failing-cpu-bf16: about" in out and "day::" not in out
    assert out.rstrip().splitlines()[-1] == f"run it with: harness run {night} --budget 1h"
    # the adapter and device are markers too, as on the plugin's items; harness run has no -m: -k names them
    code, out = plan(capsys, folder, "-m", "nightly and not fake_failing", "--budget", "1h", *results)
    assert code == 0, out
    assert "1 of 1 point(s)" in out and "night::fake-cpu-bf16: about" in out
    assert out.rstrip().splitlines()[-1] == f"run it with: harness run {night} --budget 1h -k fake-cpu-bf16"
    code, out = plan(capsys, folder, "-m", "not nightly", "--budget", "1h", *results)
    assert "1 of 1 point(s)" in out and "day::fake-cpu-bf16: about" in out and "night::" not in out


def test_minus_m_that_matches_nothing_or_is_no_expression_says_so(write_scenario, tmp_path, capsys, fake_adapters):
    path = write_scenario(tiny(name="day"))
    code, out = plan(capsys, str(path), "-m", "nightly", "--budget", "1h", "--results", str(tmp_path / "results"))
    assert code == 2, out
    assert "ERROR no point matches -m 'nightly'" in out
    code, out = plan(capsys, str(path), "-m", "nightly and", "--budget", "1h", "--results", str(tmp_path / "r"))
    assert code == 2, out
    assert "-m 'nightly and': expected a word, got the end" in out


def test_a_reference_computed_or_a_model_converted_by_the_run_is_not_counted_again(
    write_scenario, tmp_path, capsys, tiny_llama
):
    gate = {"prompts": "ci", "tokens": 4, "length": "short"}
    path = write_scenario(tiny(name="sweep", gate=gate, sweep={"adapter": ["hf"]}))
    ran(tmp_path, capsys, path, "--reference-dir", str(tmp_path / "references"))  # a store of its own: computed
    record = json.loads((tmp_path / "results" / "sweep" / "hf-cpu-bf16.json").read_text())
    assert record["correctness"]["reference"]["obtained_s"] > 0  # what computing it took, within the gate's time
    cost_on_disk(tmp_path, "hf-cpu-bf16", gate_s=30.0, timed_s=10.0, reference_s=20.0, conversion_s=50.0)
    code, out = plan(capsys, str(path), "--budget", "1h", "--results", str(tmp_path / "results"))
    assert code == 0, out
    assert "  sweep::hf-cpu-bf16: about 20 s, launches 1, gate prompts 2 (measured" in out  # not 90: both are stored


@pytest.mark.skipif(find_spec("llama_cpp") is None, reason="the llamacpp extra is not installed")
def test_every_stored_reference_a_point_computes_is_counted_as_paid_once(write_scenario, tmp_path, capsys, tiny_llama):
    """A quantized point's gate also computes its same-weights and dequantized-model references (stored, read
    next time): the record's ``obtained_s`` holds them all, or ``harness plan`` counts them in every later run."""
    gate = {"prompts": "ci", "tokens": 4, "length": "short"}
    scenario = tiny(name="sweep", gate=gate, sweep={"adapter": ["llamacpp"], "quantization": ["int8_sym"]})
    path = write_scenario(scenario)
    argv = ["run", str(path), "--results", str(tmp_path / "results"), "--isolation", "none", "--no-energy"]
    code = cli.main([*argv, "--reference-dir", str(tmp_path / "references")])
    captured = capsys.readouterr()
    out = captured.err + captured.out  # the run's notes go to stderr
    assert code == 0, out
    computed = [float(s) for s in re.findall(r"reference: computed in ([0-9.]+) s", out)]
    assert len(computed) >= 2, out  # the gate's and at least the same-weights twin's
    (stored,) = (tmp_path / "results" / "sweep").glob("llamacpp-*.json")
    record = json.loads(stored.read_text())
    assert record["correctness"]["reference"]["obtained_s"] >= sum(computed) - 0.1 * len(computed)  # 1-decimal log
