"""Progress in a log that is not a terminal: lines, never ``\\r`` frames; a line when a phase changes kind,
a heartbeat within a long one, one line per finished launch."""

from __future__ import annotations

from harness.cli.app import main
from harness.run.progress import HEARTBEAT_S, PhaseLines
from tests.tiny_scenario import tiny


def test_a_line_per_kind_of_phase_and_a_heartbeat_within_one():
    written, now = [], [0.0]
    lines = PhaseLines(written.append, clock=lambda: now[0], watch=False)
    phase = lines.for_scenario("s")
    for j in range(1, 9):
        phase(f"p: gate prompt {j}/8")
        now[0] += 1.0
    now[0] += HEARTBEAT_S
    phase("p: gate prompt 8/8")
    phase("p: timing round 1/3+")
    phase("p: timing round 2/3+")
    lines.launch_done(1, 4, "s::p", "ok", 12.34)
    phase("p: timing round 2/3+")
    assert written == [
        "s::p: gate prompt 1/8",
        "s::p: gate prompt 8/8",  # the heartbeat: still alive after HEARTBEAT_S
        "s::p: timing round 1/3+",
        "[1/4] s::p: ok in 12.3 s",
        "s::p: timing round 2/3+",  # after a finished launch, the next phase always shows
    ]


def test_a_quiet_phase_is_repeated_with_its_elapsed_time_and_idle_is_silent():
    written, now = [], [100.0]
    lines = PhaseLines(written.append, clock=lambda: now[0], watch=False)
    lines.for_scenario("s")("p: gate reference (computed once, then reused)")
    now[0] += HEARTBEAT_S - 1
    lines.beat()  # not yet: written less than HEARTBEAT_S ago
    now[0] += 1
    lines.beat()
    now[0] += HEARTBEAT_S
    lines.beat()
    lines.idle()
    now[0] += 10 * HEARTBEAT_S
    lines.beat()  # between points: nothing under way, nothing said
    assert written == [
        "s::p: gate reference (computed once, then reused)",
        f"s::p: gate reference (computed once, then reused) (still running, {HEARTBEAT_S:.0f} s)",
        f"s::p: gate reference (computed once, then reused) (still running, {2 * HEARTBEAT_S:.0f} s)",
    ]


def test_run_writes_lines_not_progress_frames_when_stderr_is_not_a_terminal(
    write_scenario, tmp_path, fake_adapters, capsys
):
    path = write_scenario(tiny(name="log", measurement={"launches": 2}, sweep={"prompt_len": [16, 32]}))
    argv = ["run", str(path), "--results", str(tmp_path / "r"), "--isolation", "none", "--no-energy"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "\r" not in err, err
    done = [line for line in err.splitlines() if line.startswith("[")]
    assert [line.split(": ")[0] for line in done] == [
        "[1/4] log::fake-cpu-bf16-prompt16",
        "[2/4] log::fake-cpu-bf16-prompt32",
        "[3/4] log::fake-cpu-bf16-prompt16",
        "[4/4] log::fake-cpu-bf16-prompt32",
    ]
    assert all(": ok in " in line for line in done)
    for phase in ("launch 1/2", "launch 2/2", "converting/resolving the model", "loading fake on cpu"):
        assert f"log::fake-cpu-bf16-prompt16: {phase}" in err, err
    assert main([*argv, "--no-progress"]) == 0
    # --no-progress: no progress at all; a note on the machine (the canary's) may still be said
    assert [line for line in capsys.readouterr().err.splitlines() if not line.startswith("canary: ")] == []
