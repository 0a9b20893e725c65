"""Under pytest a point's phases (converting, gate reference, loading, launch k/N) show on the terminal while it
runs, as ``harness run`` shows them, with one launch per point and with interleaved launches alike."""

from __future__ import annotations

import textwrap

import pytest

SWEEP = """
model: tiny-llama
prompts: ["The river"]
generation: {max_new_tokens: 4}
measurement: {warmup_rounds: 0, min_rounds: 1, launches: LAUNCHES}
sweep:
  adapter: [fake]
  prompt_len: [16, 32]
"""


@pytest.mark.parametrize("launches", [1, 2])
def test_phases_show_while_points_run(pytester, fake_adapters, launches):
    path = pytester.path / "scenarios" / "phases.yaml"
    path.parent.mkdir()
    path.write_text(textwrap.dedent(SWEEP.replace("LAUNCHES", str(launches))).lstrip())
    result = pytester.runpytest("scenarios/", "-q", "-p", "no:cacheprovider", "--harness-isolation", "none")
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    assert "\r" not in out
    for point in ("fake-cpu-bf16-prompt16", "fake-cpu-bf16-prompt32"):
        for launch in range(1, launches + 1):
            assert f"harness: phases::{point}: launch {launch}/{launches}" in out, out
        assert f"harness: phases::{point}: loading fake on cpu" in out, out
    assert "harness: phases::fake-cpu-bf16-prompt16: converting/resolving the model" in out, out
