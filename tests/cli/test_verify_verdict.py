"""`harness verify` ends with the run's verdict, as `harness run` does (`harness.records.verdict`): a known
failure that still fails is a `KNOWN FAILURE` line and exits 0, one that passes is `FIXED` (exit 1 when
`strict`), `--require-all` fails the run on a skipped point, and every non-zero exit ends with its
`exit N: ...` line. On tiny-llama (transformers): hf passes its gate, hf-broken (a stale KV cache) fails
it, and the xrt NPU point is skipped (no AMD NPU here)."""

from __future__ import annotations

import pytest

from harness import cli
from harness.adapters import registry
from tests.correctness.test_gate import BrokenHF
from tests.tiny_scenario import tiny

pytest.importorskip("torch")


@pytest.fixture
def broken():
    registry.register_adapter(BrokenHF)
    yield
    registry.unregister_adapter(BrokenHF.name)


def verify(tmp_path, capsys, *options: str, known: list | None = None) -> tuple[int, str]:
    path = tmp_path / "nightly.yaml"
    path.write_text(
        tiny(
            name="nightly",
            measurement={"threads": 2},
            gate={"tokens": 8, "prompts": 2},
            sweep={"adapter": ["hf", "hf-broken"]},
            include=[{"adapter": "xrt", "device": "npu", "max_seq_len": 64}],
            known_failures=known,
        )
    )
    argv = ["verify", str(path), "--isolation", "none", "--reference-dir", str(tmp_path.parent / "references")]
    code = cli.main([*argv, *options])
    captured = capsys.readouterr()
    return code, captured.err + captured.out  # stdout last: its closing line, not a warning on stderr


def last(out: str) -> str:
    return out.rstrip().splitlines()[-1]


def test_a_failed_gate_is_named_in_the_closing_lines(tmp_path, capsys, tiny_llama, broken):
    code, out = verify(tmp_path, capsys)
    assert code == 1, out
    assert "3 points (2 ok, 1 skipped); 1 ok point(s) failed a verdict (gate or accuracy margin)" in out, out
    assert "FAILED nightly::hf-broken-cpu-bf16: " in out
    assert last(out) == "exit 1: 1 point(s) failed"


def test_a_known_failure_that_still_fails_exits_0_and_require_all_fails_on_the_skip(
    tmp_path, capsys, tiny_llama, broken
):
    known = [{"match": {"adapter": "hf-broken"}, "reason": "bug 12"}]
    code, out = verify(tmp_path, capsys, known=known)
    assert code == 0, out
    assert "KNOWN FAILURE nightly::hf-broken-cpu-bf16: " in out and "exit 1" not in out
    assert "1 skipped: 1 × xrt:npu unavailable: " in out
    code, out = verify(tmp_path, capsys, "--require-all", known=known)
    assert code == 1, out
    assert "REQUIRED nightly::xrt-npu-" in out
    assert last(out) == "exit 1: 1 required point(s) skipped"


def test_a_strict_known_failure_that_passes_fails_verify(tmp_path, capsys, tiny_llama, broken):
    known = [{"match": {"adapter": "hf"}, "reason": "bug 3", "strict": True}]
    code, out = verify(tmp_path, capsys, "-k", "hf-cpu", known=known)
    assert code == 1, out
    assert "FIXED: 1 known failure(s) now pass: nightly::hf-cpu-bf16 (bug 3)" in out
    assert last(out) == "exit 1: 1 strict known failure(s) now pass (remove them from known_failures)"
