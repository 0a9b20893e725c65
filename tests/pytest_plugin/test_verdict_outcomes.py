"""The pytest plugin's verdict accounts for every point: a known failure that passes is XPASS (a failure with
`strict`), skipped points are counted with their reasons in the terminal summary, and
`--harness-require-all` (or the scenario's `require_all`) fails the session on a skipped point."""

from __future__ import annotations

import pytest

from tests.conftest import registered
from tests.fakes import RefusingAdapter
from tests.tiny_scenario import tiny

NO_NPU = "fake:npu unavailable: no fake NPU on this machine"


@pytest.fixture
def engines(fake_adapters):
    yield from registered([RefusingAdapter])


IN_PROCESS = ("--harness-isolation", "none")  # verdicts are read from records: no worker needed


def write(pytester, text: str) -> None:
    path = pytester.path / "scenarios" / "sweep.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)


def known(strict: bool = False) -> str:
    entry = {"match": {"adapter": "fake"}, "reason": "bug 1234", **({"strict": True} if strict else {})}
    return tiny(name="sweep", known_failures=[entry])


def test_a_known_failure_that_passes_is_xpass(pytester, engines):
    write(pytester, known())
    result = pytester.runpytest("scenarios/", "-rX", "-p", "no:cacheprovider", *IN_PROCESS)
    result.assert_outcomes(xpassed=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "*harness verdict*",
            "1 points (1 ok); 1 known failure(s) now pass",
            "FIXED: 1 known failure(s) now pass: sweep::fake-cpu-bf16 (bug 1234)",
            "XPASS scenarios/sweep.yaml::fake-cpu-bf16 - known failure now passes: bug 1234",
        ]
    )


def test_a_strict_known_failure_that_passes_fails(pytester, engines):
    write(pytester, known(strict=True))
    result = pytester.runpytest("scenarios/", "-p", "no:cacheprovider", *IN_PROCESS)
    result.assert_outcomes(failed=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*[[]XPASS(strict)[]]*known failure now passes: bug 1234*"])


def test_pytests_xfail_strict_ini_applies_to_known_failures(pytester, engines):
    write(pytester, known())
    pytester.makeini("[pytest]\nxfail_strict = true\n")
    pytester.runpytest("scenarios/", "-p", "no:cacheprovider", *IN_PROCESS).assert_outcomes(failed=1)


SKIPPING = tiny(
    name="sweep",
    sweep={"adapter": ["fake", "fake-refusing"], "batch_size": [1, 2]},
    include=[{"adapter": "fake", "device": "npu"}],
)


def test_skips_are_counted_with_their_reasons_in_the_terminal_summary(pytester, engines):
    write(pytester, SKIPPING)
    result = pytester.runpytest("scenarios/", "-p", "no:cacheprovider", *IN_PROCESS)
    result.assert_outcomes(passed=2, skipped=3)
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        ["*harness verdict*", "5 points (2 ok, 3 skipped)", f"3 skipped: 2 × {RefusingAdapter.refusal}, 1 × {NO_NPU}"]
    )


def test_require_all_fails_the_session_on_a_skipped_point(pytester, engines):
    write(pytester, SKIPPING)
    result = pytester.runpytest("scenarios/", "--harness-require-all", "-p", "no:cacheprovider", *IN_PROCESS)
    result.assert_outcomes(passed=2, failed=3)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            f"*required point skipped (every selected point must run): {NO_NPU}*",
            f"REQUIRED sweep::fake-npu-bf16-bs1 was skipped: {NO_NPU}",
        ]
    )
    # what -k (or -m, --harness-shard) leaves out is not required
    kept = pytester.runpytest("scenarios/", "--harness-require-all", "-k", "not npu and not refusing", *IN_PROCESS)
    kept.assert_outcomes(passed=2)


def test_a_scenario_can_require_all_its_points(pytester, engines):
    write(pytester, tiny(name="sweep", require_all=True, sweep={"device": ["cpu", "npu"]}))
    result = pytester.runpytest("scenarios/", "-p", "no:cacheprovider", *IN_PROCESS)
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == 1
