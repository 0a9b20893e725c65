"""The run's verdict accounts for every point, through `harness run` and `harness summary`: skips are counted
with their reasons (and fail the run under `--require-all` or a scenario's `require_all`), a known failure
that passes is reported as fixed (and fails the run when `strict`), and every non-zero exit ends with a line
that says why."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness import cli
from tests.conftest import registered
from tests.fakes import RefusingAdapter
from tests.tiny_scenario import tiny

NO_NPU = "fake:npu unavailable: no fake NPU on this machine"
NO_EXPORT = RefusingAdapter.refusal


@pytest.fixture
def engines(fake_adapters):
    yield from registered([RefusingAdapter])


def run(tmp_path, capsys, text: str, *options: str) -> tuple[int, str]:
    path = tmp_path / "sweep.yaml"
    path.write_text(text)
    argv = ["run", str(path), "--results", str(tmp_path / "results"), "--isolation", "none", "--no-progress"]
    code = cli.main([*argv, "--no-energy", *options])
    captured = capsys.readouterr()
    return code, captured.err + captured.out  # stdout last: its closing line, not a warning on stderr (canary)


# fake on cpu runs; fake-refusing (cannot run the model) and fake on npu (no such device here) skip
SKIPPING = tiny(
    name="sweep",
    sweep={"adapter": ["fake", "fake-refusing"], "batch_size": [1, 2]},
    include=[{"adapter": "fake", "device": "npu"}],
)


def test_skips_are_counted_with_their_reasons_and_pass_by_default(tmp_path, capsys, engines):
    code, out = run(tmp_path, capsys, SKIPPING)
    assert code == 0, out
    assert "5 points (2 ok, 3 skipped)" in out
    assert f"3 skipped: 2 × {NO_EXPORT}, 1 × {NO_NPU}" in out
    assert "exit 1" not in out


def test_require_all_fails_the_run_on_every_kind_of_skip(tmp_path, capsys, engines):
    code, out = run(tmp_path, capsys, SKIPPING, "--require-all")
    assert code == 1, out
    assert f"REQUIRED sweep::fake-npu-bf16-bs1 was skipped: {NO_NPU}" in out  # absent hardware
    assert f"REQUIRED sweep::fake-refusing-cpu-bf16-bs2 was skipped: {NO_EXPORT}" in out  # the engine refuses the model
    assert out.rstrip().splitlines()[-1] == "exit 1: 3 required point(s) skipped"


def test_a_scenario_can_require_all_its_points(tmp_path, capsys, engines):
    code, out = run(tmp_path, capsys, tiny(name="sweep", require_all=True, sweep={"device": ["cpu", "npu"]}))
    assert code == 1, out
    assert "exit 1: 1 required point(s) skipped" in out
    # the points a run does not select are not required
    assert (
        run(tmp_path, capsys, tiny(name="sweep", require_all=True, sweep={"device": ["cpu", "npu"]}), "-k", "cpu")[0]
        == 0
    )


def known(reason: str, strict: bool = False, adapter: str = "fake") -> str:
    entry = {"match": {"adapter": adapter}, "reason": reason, **({"strict": True} if strict else {})}
    return tiny(name="sweep", sweep={"adapter": ["fake", "fake-failing"]}, known_failures=[entry])


def test_a_known_failure_that_passes_is_reported_fixed(tmp_path, capsys, engines):
    code, out = run(tmp_path, capsys, known("bug 1234"))
    assert code == 1, out  # fake-failing is not a known failure: it fails the run
    assert "FIXED: 1 known failure(s) now pass: sweep::fake-cpu-bf16 (bug 1234)" in out
    assert "known failure: bug 1234 (now passes)" in out  # under its row of the run table
    assert out.rstrip().splitlines()[-1] == "exit 1: 1 point(s) failed"
    capsys.readouterr()
    assert cli.main(["summary", str(tmp_path / "results")]) == 0
    summary = capsys.readouterr().out
    assert "known failure(s) now pass" in summary and "FIXED: 1 known failure(s) now pass" in summary


def test_a_known_failure_that_still_fails_does_not_fail_the_run(tmp_path, capsys, engines):
    code, out = run(tmp_path, capsys, known("bug 99", adapter="fake-failing"), "-k", "failing")
    assert code == 0, out
    assert "KNOWN FAILURE sweep::fake-failing-cpu-bf16: RuntimeError: fake engine fault at step 3" in out


def test_a_strict_known_failure_that_passes_fails_the_run(tmp_path, capsys, engines):
    code, out = run(tmp_path, capsys, known("bug 1234", strict=True), "-k", "fake-cpu")
    assert code == 1, out
    assert out.rstrip().splitlines()[-1] == (
        "exit 1: 1 strict known failure(s) now pass (remove them from known_failures)"
    )


def test_a_failed_point_is_named_in_the_closing_lines(tmp_path, capsys, engines):
    code, out = run(tmp_path, capsys, tiny(name="sweep", sweep={"adapter": ["fake", "fake-failing"]}))
    assert code == 1, out
    lines = out.rstrip().splitlines()
    assert "FAILED sweep::fake-failing-cpu-bf16: RuntimeError: fake engine fault at step 3" in lines
    assert lines[-1] == "exit 1: 1 point(s) failed"


def test_a_real_engine_and_an_absent_npu_under_require_all(tmp_path, tiny_llama):
    """The command a nightly types, in its own process: hf runs tiny-llama, the xrt NPU point is skipped
    (no AMD NPU here), and `--require-all` turns that skip into exit 1 with the line that says why."""
    path = tmp_path / "nightly.yaml"
    path.write_text(
        tiny(
            name="nightly",
            measurement={"threads": 2},
            sweep={"adapter": ["hf"]},
            include=[{"adapter": "xrt", "device": "npu", "max_seq_len": 64}],
        )
    )
    argv = [sys.executable, "-m", "harness.cli", "run", str(path), "--results", str(tmp_path / "r")]
    argv += ["--isolation", "none", "--no-progress", "--no-energy"]
    plain = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "2 points (1 ok, 1 skipped)" in plain.stdout and "1 skipped: 1 × xrt:npu unavailable: " in plain.stdout
    required = subprocess.run([*argv, "--require-all"], capture_output=True, text=True, timeout=600)
    assert required.returncode == 1, required.stdout + required.stderr
    assert "REQUIRED nightly::xrt-npu-" in required.stdout
    assert required.stdout.rstrip().splitlines()[-1] == "exit 1: 1 required point(s) skipped"
