"""The command line's refusal as a user sees it: exit 2, one ``ERROR`` line on stderr, no traceback."""

from __future__ import annotations

from harness import cli


def refused_in_one_line(argv: list[str], capsys) -> str:
    """Run ``harness ARGV`` in-process; expect exit 2 with one ERROR line and no traceback; return that line."""
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("ERROR "), err
    return lines[0]
