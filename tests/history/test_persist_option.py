"""Issue 30: `harness history check` calls a worsening step a regression only once it has held for two
consecutive nights (``--persist N``); a one-night step is reported as suspicious and does not fail. Driven
through the command on a real SQLite history built by ingesting records."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.history.test_history_databases import commit, harness_history, write_night

pytest.importorskip("sqlalchemy")

NIGHTS = 30


def nights(root, url: str, stepped: int, step: float = 0.15, first: int = 0) -> None:
    """Nights ``first`` to ``NIGHTS + stepped - 1`` at 2 % CV around 50 ms/token for points p and q, the last
    ``stepped`` of them with p ``step`` slower, each added to the history as one run."""
    values = 50 * (1 + 0.02 * np.random.default_rng(3).standard_normal((NIGHTS + stepped, 2)))
    for night in range(first, NIGHTS + stepped):
        p, q = values[night]
        path = write_night(root, night, {"p": float(p * (1 + step) if night >= NIGHTS else p), "q": float(q)})
        assert harness_history("add", path, "--db", url) == 0


@pytest.fixture(scope="module")
def quiet(tmp_path_factory) -> Path:
    """The ``NIGHTS`` quiet nights, ingested once for the module; each test adds its own nights to a copy."""
    root = tmp_path_factory.mktemp("quiet")
    nights(root, f"sqlite:///{root / 'h.sqlite'}", stepped=0)
    return root / "h.sqlite"


def with_nights(quiet: Path, tmp_path: Path, stepped: int, step: float = 0.15) -> str:
    """A copy of the quiet history with ``stepped`` more nights, p ``step`` slower in them; its URL."""
    shutil.copyfile(quiet, tmp_path / "h.sqlite")
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    nights(tmp_path, url, stepped=stepped, step=step, first=NIGHTS)
    return url


def test_a_one_night_step_is_suspicious_and_passes(quiet, tmp_path, capsys):
    url = with_nights(quiet, tmp_path, 1)
    capsys.readouterr()
    assert harness_history("check", "--db", url) == 0
    out = capsys.readouterr().out
    (line,) = [line for line in out.splitlines() if line.startswith("SUSPICIOUS demo::p tpot_ms")]
    assert f"bisect {commit(NIGHTS - 1)}..{commit(NIGHTS)}" in line  # the bad night itself, not the one before
    assert "held 1 of the 2 night(s) a regression needs (--persist): not failed" in line
    assert "REGRESSION" not in out and "0 new change point(s)" in out and " suspicious (not yet 2 nights)" in out
    assert "demo::q" not in out
    assert harness_history("check", "--db", url, "--persist", "1") == 1  # one night is enough when asked
    assert "REGRESSION demo::p tpot_ms" in capsys.readouterr().out


def test_the_step_held_a_second_night_is_a_regression(quiet, tmp_path, capsys):
    url = with_nights(quiet, tmp_path, 2)
    capsys.readouterr()
    assert harness_history("check", "--db", url) == 1
    out = capsys.readouterr().out
    (line,) = [line for line in out.splitlines() if line.startswith("REGRESSION demo::p tpot_ms")]
    assert f"bisect {commit(NIGHTS - 1)}..{commit(NIGHTS)}" in line and "demo::q" not in out
    assert "SUSPICIOUS" not in out
    assert harness_history("check", "--db", url, "--persist", "3") == 0  # two nights are not three
    assert "held 2 of the 3 night(s)" in capsys.readouterr().out


def test_a_one_night_improvement_is_neither(quiet, tmp_path, capsys):
    url = with_nights(quiet, tmp_path, 1, step=-0.15)
    capsys.readouterr()
    assert harness_history("check", "--db", url) == 0
    out = capsys.readouterr().out
    assert "SUSPICIOUS" not in out and "REGRESSION" not in out


def test_persist_below_one_is_refused(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    assert harness_history("check", "--db", url, "--persist", "0") == 2
    assert "--persist: expected a number of nights >= 1, got 0" in capsys.readouterr().err


def test_check_prints_the_command_that_bisects_a_findings_commit_range(quiet, tmp_path, capsys):
    url = with_nights(quiet, tmp_path, 2)
    capsys.readouterr()
    assert harness_history("check", "--db", url) == 1
    lines = capsys.readouterr().out.splitlines()
    (at,) = [i for i, line in enumerate(lines) if line.startswith("REGRESSION demo::p tpot_ms")]
    good, bad = commit(NIGHTS - 1)[:12], commit(NIGHTS)[:12]
    assert lines[at + 1] == (
        f"  find the commit: harness bisect --good {good} --bad {bad} scenarios/demo.yaml -k p "
        "--max-regression tpot_ms=2% --build 'YOUR BUILD COMMAND'"
    )
