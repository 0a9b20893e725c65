"""CI pages: the Markdown summary (verdict first, then one table of what changed, what is unknown and what was
skipped) that ``harness gate``, ``harness run`` and the pytest plugin write to ``--markdown FILE`` and append to
``$GITHUB_STEP_SUMMARY``, and the Bencher Metric Format export beside the pytest-benchmark JSON."""

from __future__ import annotations

import json
import textwrap

from harness.cli.app import main
from harness.records import store
from tests.records import launch_record, record
from tests.tiny_scenario import tiny


def _night(tmp_path):
    """A baseline and a night: p 30 % slower (different), q too noisy to say (unknown), s skipped now."""
    base = [
        launch_record(10.0, 10.1, 9.9, 10.05, 9.95, point_id="p"),
        launch_record(10.0, 10.1, 9.9, point_id="q"),
        launch_record(10.0, 10.1, 9.9, point_id="s"),
    ]
    new = [
        launch_record(13.0, 13.1, 12.9, 13.05, 12.95, point_id="p"),
        launch_record(9.0, 12.0, 10.4, point_id="q"),
        record("s", status="skipped"),
    ]
    new[2].reason = "npu unavailable: no NPU | here"
    for side, records in (("base", base), ("new", new)):
        for r in records:
            store.write(r, tmp_path / side)
    baselines = str(tmp_path / "baselines")
    assert main(["baseline", "save", str(tmp_path / "base"), "--name", "nightly", "--baselines-dir", baselines]) == 0
    return ["gate", str(tmp_path / "new"), "--baseline", "nightly", "--baselines-dir", baselines]


def test_gate_writes_the_verdict_then_one_table_to_the_file_and_githubs_step_summary(tmp_path, monkeypatch, capsys):
    gate = _night(tmp_path)
    step = tmp_path / "step_summary.md"
    step.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    out = tmp_path / "comment.md"
    assert main([*gate, "--max-regression", "tpot=5%", "--markdown", str(out)]) == 1
    page = out.read_text()
    lines = page.splitlines()
    assert lines[0] == "## ❌ harness gate vs nightly: FAIL"
    assert lines[2].startswith(
        "2 point(s) compared against `nightly`; launch-level tests: 1 different, 0 same, 1 unknown"
    )
    table = [line for line in lines if line.startswith("| ")]
    assert table[0] == "| | point | what | detail |"
    groups = [row.split(" | ")[0] for row in table[1:]]
    assert groups == ["| ❌ changed", "| ❔ unknown", "| ⏭️ skipped"]  # changed, then unknown, then skipped
    assert "`demo::p` | tpot_ms |" in table[1] and "+30.0%" in table[1]
    assert "`demo::q` | tpot_ms |" in table[2] and "launches a side would decide it" in table[2]
    assert "`demo::s` | skipped |" in table[3] and "no NPU \\| here" in table[3]  # a pipe in a reason stays in its cell
    assert step.read_text() == f"earlier step\n{page}\n"  # appended: other steps write there too
    err = capsys.readouterr().err
    assert f"Markdown summary written to {out}" in err and f"Markdown summary written to {step}" in err


def test_the_page_renders_as_one_heading_and_one_table(tmp_path, monkeypatch):
    import markdown

    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    out = tmp_path / "comment.md"
    assert main([*_night(tmp_path), "--max-regression", "tpot=5%", "--markdown", str(out)]) == 1
    html = markdown.markdown(out.read_text(), extensions=["tables"])
    (tmp_path / "comment.html").write_text(html)  # looked at once while writing this test
    assert html.count("<table>") == 1 and html.count("<h2>") == 1 and html.count("<tr>") == 4
    assert html.index("FAIL") < html.index("<table>")


def test_without_the_variable_or_the_option_no_page_is_written(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert main([*_night(tmp_path), "--max-regression", "tpot=5%"]) == 1
    assert "Markdown summary" not in capsys.readouterr().err


def test_run_writes_its_page_and_bencher_metric_format(write_scenario, tmp_path, fake_adapters, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    path = write_scenario(
        tiny(
            name="pages",
            measurement={"launches": 2},
            sweep={"adapter": ["fake", "fake-failing"], "device": ["cpu", "npu"]},
        )
    )
    page, bmf = tmp_path / "run.md", tmp_path / "bmf.json"
    argv = ["run", str(path), "--results", str(tmp_path / "r"), "--isolation", "none", "--no-energy", "--no-progress"]
    assert main([*argv, "--markdown", str(page), "--bmf", str(bmf)]) == 1
    lines = page.read_text().splitlines()
    assert lines[0] == "## ❌ harness run: FAIL" and lines[2] == "4 points (1 ok, 2 skipped, 1 failed)"
    rows = [line for line in lines if line.startswith("| ") and not line.startswith("| | point |")]
    assert [row.split(" | ")[1] for row in rows] == [
        "`pages::fake-failing-cpu-bf16`",
        "`pages::fake-npu-bf16`",
        "`pages::fake-failing-npu-bf16`",
    ]
    data = json.loads(bmf.read_text())
    assert list(data) == ["pages::fake-cpu-bf16"]  # only points with figures
    tpot = data["pages::fake-cpu-bf16"]["tpot_ms"]
    assert tpot["lower_value"] <= tpot["value"] <= tpot["upper_value"]  # two launches: the interval's bounds
    assert set(data["pages::fake-cpu-bf16"]) >= {"tpot_ms", "ttft_ms", "decode_tokens_per_s"}


def test_pytest_writes_the_page_and_bmf_beside_the_benchmark_json(pytester, fake_adapters, monkeypatch):
    step = pytester.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "night.yaml").write_text(
        textwrap.dedent(tiny(name="night", sweep={"adapter": ["fake"], "device": ["cpu", "npu"]}))
    )
    result = pytester.runpytest(
        "scenarios/", "-p", "no:cacheprovider", "--benchmark-json", "out.json", "--harness-bmf", "out.bmf.json"
    )
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*harness CI pages*", f"Markdown summary written to {step}"])
    lines = step.read_text().splitlines()
    assert lines[0] == "## ✅ pytest: PASS" and lines[2] == "2 points (1 ok, 1 skipped)"
    assert any(line.startswith("| ⏭️ skipped | `night::fake-npu-bf16` |") for line in lines)
    assert list(json.loads((pytester.path / "out.bmf.json").read_text())) == ["night::fake-cpu-bf16"]


def test_skips_are_one_row_per_reason_and_a_known_failure_fixed_is_a_change():
    from harness.report.markdown_summary import from_records, render

    skipped = [record(f"p{i}", status="skipped") for i in range(10)]
    for r in skipped:
        r.reason = "openvino:NPU unavailable: no NPU here"
    page = render(from_records([record("ok"), *skipped], "pytest"))
    (row,) = [line for line in page.splitlines() if line.startswith("| ⏭️")]
    assert row.startswith("| ⏭️ skipped | `demo::p0, demo::p1,") and "and 2 more` | 10 skipped |" in row
    assert "openvino:NPU unavailable: no NPU here" in row
    assert page.splitlines()[0] == "## ✅ pytest: PASS"  # a skip alone does not fail the run
    required = render(from_records([record("ok"), *skipped], "pytest", required=True))
    assert required.splitlines()[0] == "## ❌ pytest: FAIL" and required.count("required, skipped") == 10
