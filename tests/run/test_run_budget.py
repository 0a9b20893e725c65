"""A run with a time budget (`harness run --budget`, pytest's `--harness-budget`) starts no new point once the
budget is spent: each point it does not start is recorded as skipped with the reason, counted in the run's
verdict (and failed by `--require-all`), and run again by `--resume`. Each point here times rounds for at
least 1.2 s, so a 1 s budget is spent after the first point, whatever the machine's speed."""

from __future__ import annotations

import json

from harness import cli
from harness.records import store
from harness.run.budget import parse_budget
from tests.tiny_scenario import tiny

SLOW = {"min_time_s": 1.2}  # each point lasts at least this long
REASON = "budget 1s spent after 1 point"


def run(tmp_path, capsys, path, *options: str) -> tuple[int, str]:
    argv = ["run", str(path), "--results", str(tmp_path / "results"), "--isolation", "none", "--no-progress"]
    code = cli.main([*argv, "--no-energy", *options])
    captured = capsys.readouterr()
    return code, captured.err + captured.out


def on_disk(tmp_path) -> dict[str, tuple[str, str | None]]:
    return {
        r.point_id: (r.status, r.reason) for r in [record for _, record in store.iter_records(tmp_path / "results")]
    }


def test_a_spent_budget_skips_the_points_not_started_with_the_reason(write_scenario, tmp_path, capsys, fake_adapters):
    path = write_scenario(tiny(name="sweep", measurement=SLOW, sweep={"batch_size": [1, 2, 3]}))
    code, out = run(tmp_path, capsys, path, "--budget", "1s")
    assert code == 0, out
    assert "3 points (1 ok, 2 skipped)" in out
    assert f"2 skipped: 2 × {REASON}" in out
    assert on_disk(tmp_path) == {
        "fake-cpu-bf16-bs1": ("ok", None),
        "fake-cpu-bf16-bs2": ("skipped", REASON),
        "fake-cpu-bf16-bs3": ("skipped", REASON),
    }
    # --resume runs what the budget skipped (a skip for the budget says nothing of the point)
    code, out = run(tmp_path, capsys, path, "--resume")
    assert code == 0, out
    assert "3 points (3 ok)" in out


def test_require_all_fails_a_run_whose_budget_skipped_points(write_scenario, tmp_path, capsys, fake_adapters):
    path = write_scenario(tiny(name="sweep", measurement=SLOW, sweep={"batch_size": [1, 2]}))
    code, out = run(tmp_path, capsys, path, "--budget", "1s", "--require-all")
    assert code == 1, out
    assert f"REQUIRED sweep::fake-cpu-bf16-bs2 was skipped: {REASON}" in out
    assert out.rstrip().splitlines()[-1] == "exit 1: 1 required point(s) skipped"


def test_with_several_launches_a_started_point_keeps_its_launches(write_scenario, tmp_path, capsys, fake_adapters):
    path = write_scenario(tiny(name="sweep", measurement={**SLOW, "launches": 2}, sweep={"batch_size": [1, 2]}))
    code, out = run(tmp_path, capsys, path, "--budget", "1s")
    assert code == 0, out
    assert "2 points (1 ok, 1 skipped)" in out
    records = {r.point_id: r for _, r in store.iter_records(tmp_path / "results")}
    assert records["fake-cpu-bf16-bs1"].status == "ok"  # final, not incomplete: no launch is to come
    assert len(records["fake-cpu-bf16-bs1"].samples.launches) == 1
    assert records["fake-cpu-bf16-bs2"].reason == REASON


def test_the_pytest_plugin_skips_past_its_budget(pytester, fake_adapters):
    (pytester.path / "scenarios").mkdir()
    text = tiny(name="sweep", measurement=SLOW, sweep={"batch_size": [1, 2]})
    (pytester.path / "scenarios" / "sweep.yaml").write_text(text)
    result = pytester.runpytest(
        "scenarios/", "--harness-budget", "1s", "--harness-isolation", "none", "-rs", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*harness verdict*", f"1 skipped: 1 × {REASON}", f"SKIPPED [[]1[]] *: {REASON}"])


def test_budgets_are_written_in_seconds_minutes_or_hours():
    assert [parse_budget(text).seconds for text in ("90s", "45m", "2h", "1.5h", "30")] == [90, 2700, 7200, 5400, 30]
    assert str(parse_budget("60m")) == "60m"
    for bad in ("", "0s", "-5m", "1d", "soon"):
        try:
            parse_budget(bad)
        except ValueError as exc:
            assert "expected a positive duration such as 90s, 45m or 2h" in str(exc)
        else:
            raise AssertionError(f"{bad!r} was accepted")


def test_the_pytest_plugin_runs_the_gate_prompts_asked(pytester, tiny_llama, reference_dir):
    gate = {"prompts": "all", "tokens": 4, "length": "short"}  # 16 prompts, cut to 2 as harness run --gate-prompts
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "gated.yaml").write_text(tiny(name="gated", gate=gate, sweep={"adapter": ["hf"]}))
    options = ("--harness-reference-dir", str(reference_dir), "--harness-isolation", "none", "-p", "no:cacheprovider")
    # its own process: an inline run's engine imports are undone after it and break the tests that follow
    result = pytester.runpytest_subprocess("scenarios/", "--harness-gate-prompts", "2", *options)
    result.assert_outcomes(passed=1)
    record = json.loads((pytester.path / "results" / "gated" / "hf-cpu-bf16.json").read_text())
    kinds = [prompt["kind"] for prompt in record["correctness"]["prompts"]]
    assert sorted(kind for kind in kinds if kind in ("plain", "chat")) == ["chat", "plain"], kinds  # the ci pair
