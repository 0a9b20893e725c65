"""``harness report``: HTML + Markdown + CSV, plots only for the axes present, escaped text, real Chromium."""

from __future__ import annotations

import json
import shutil
import subprocess

import pandas as pd
import pytest

from harness.cli.app import main
from harness.records import benchmark_json, store
from harness.report.build import build
from tests.records import record

HOSTILE = "<script>alert('x')</script> & | pipes"


def sweep_records():
    out = []
    for seq in (128, 256, 512):
        out.append(record(f"hf-cpu-bf16-seq{seq}", scenario="seq", max_seq_len=seq, tpot_ms=40 + seq / 64, seed=seq))
    for i, (quant, verdict) in enumerate([("none", "pass"), ("int8_sym", "drift"), ("int4_sym", "fail")]):
        out.append(
            record(
                f"openvino-CPU-{quant}",
                scenario="quant",
                adapter="openvino",
                device="CPU",
                quantization=quant,
                tpot_ms=40 - 8 * i,
                seed=i,
                verdict=verdict,
                outputs={"0": HOSTILE} if verdict == "fail" else None,
            )
        )
    for prompt in (32, 1024):
        out.append(
            record(
                f"hf-cpu-bf16-prompt{prompt}",
                scenario="prompt",
                prompt_len=prompt,
                ttft_ms=prompt * 3,
                seed=prompt,
                verdict=None,
            )
        )
    for chunk in (256, 512, 1024):
        out.append(
            record(
                f"hf-cpu-bf16-chunk{chunk}",
                scenario="moe",
                moe_chunk_size=chunk,
                prompt_len=1024,
                ttft_ms=4000 - chunk,
                energy_per_token_mj=30 + chunk / 100,
                tpot_ms=40 + chunk / 256,
                seed=chunk,
                verdict=None,
            )
        )
    out.append(record("hf-npu-bf16", scenario="seq", device="npu", status="skipped"))
    return out


@pytest.fixture
def report(tmp_path):
    for r in sweep_records():
        store.write(r, tmp_path / "results")
    return build([tmp_path / "results"], tmp_path / "report")


def test_report_writes_html_markdown_csv_and_the_plots_the_axes_allow(report):
    assert {p.stem for p in report.plots} == {
        "tpot_vs_max_seq_len",
        "tpot_by_quantization",
        "latency_vs_prompt_len",
        "chunk_size",
        "latency_energy_pareto",
        "percentile_spread",
        "token_timeline",
    }  # issue 22: every report with rounds has it
    assert all(p.stat().st_size > 5000 for p in report.plots)
    points = pd.read_csv(report.directory / "points.csv")
    assert len(points) == 12 and set(points.status) == {"ok", "skipped"}
    overview = pd.read_csv(report.directory / "overview.csv")
    assert set(overview.device) == {"cpu", "CPU"}
    html = report.html.read_text()
    assert html.count('src="data:image/png;base64,') == len(report.plots)
    md = report.markdown.read_text()
    assert "## Correctness (failures first)" in md and "![ms/token vs max_seq_len](plots/tpot_vs_max_seq_len.png)" in md


def test_no_beam_plot_without_a_beam_axis_and_no_plots_for_a_single_point(tmp_path):
    store.write(record("hf-cpu-bf16"), tmp_path / "one")
    written = build([tmp_path / "one"], tmp_path / "out")
    assert [p.stem for p in written.plots] == ["token_timeline", "percentile_spread"]  # issue 22: the timeline


def test_correctness_lists_failures_first(report):
    table = pd.read_csv(report.directory / "correctness.csv")
    assert table.gate_verdict.tolist()[:2] == ["fail", "drift"]


def test_overall_latency_is_first_plus_31_next_for_32_token_outputs(report):
    table = pd.read_csv(report.directory / "first_next.csv").set_index("point_id")
    row = table.loc["hf-cpu-bf16-prompt1024"]
    assert row.overall_ms == pytest.approx(row.first_token_ms + 31 * row.next_token_ms)


def test_model_text_is_escaped_in_html_and_markdown(report):
    html = report.html.read_text()
    assert HOSTILE not in html and "&lt;script&gt;alert(" in html
    assert "<script>alert" not in report.markdown.read_text()


def test_pytest_benchmark_json_feeds_the_report(tmp_path):
    doc = {
        "machine_info": {},
        "benchmarks": [
            {"name": r.point_id, "extra_info": {benchmark_json.KEY: benchmark_json.compact(r)}, "stats": {}}
            for r in sweep_records()[:3]
        ],
    }
    (tmp_path / "out.json").write_text(json.dumps(doc))
    assert main(["report", str(tmp_path / "out.json"), "-o", str(tmp_path / "rep")]) == 0
    assert len(pd.read_csv(tmp_path / "rep" / "points.csv")) == 3
    assert (tmp_path / "rep" / "plots" / "tpot_vs_max_seq_len.png").exists()


def chromium(*args, cwd):
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.skip("Debian's chromium is not installed (scripts/test.sh installs it: apt-get install chromium)")
    command = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=cwd)


def console_messages(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def screenshot(page, png, width: int = 1280, height: int = 2400, max_bytes: int | None = None) -> None:
    """Headless Chromium's picture of ``page`` (a path) at ``png``; with ``max_bytes``, reduced to a
    256-colour palette when larger (docs/quickstart-report.png: scripts/report_screenshot.py)."""
    from pathlib import Path

    page, png = Path(page), Path(png)
    shown = chromium(
        f"--screenshot={png.resolve()}", f"--window-size={width},{height}", page.resolve().as_uri(), cwd=png.parent
    )
    assert shown.returncode == 0 and png.exists(), shown.stderr[-2000:]
    if max_bytes and png.stat().st_size > max_bytes:
        from PIL import Image

        Image.open(png).convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(png, optimize=True)


def screenshot_is_plotted(path) -> bool:
    import matplotlib.image

    pixels = matplotlib.image.imread(path)[..., :3]
    blue = ((pixels[..., 2] > 0.6) & (pixels[..., 0] < 0.3)).sum()  # plotted lines and markers
    return blue > 500 and (pixels < 0.9).mean() > 0.02


def test_the_page_loads_in_chromium_without_console_errors_and_shows_its_plots(report, tmp_path):
    url = report.html.resolve().as_uri()
    shot = tmp_path / "shot.png"
    loaded = chromium("--dump-dom", url, cwd=tmp_path)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert f'data-plots-shown="{len(report.plots)}/{len(report.plots)}"' in loaded.stdout
    assert console_messages(loaded.stderr) == []
    screenshot(report.html, shot)
    assert screenshot_is_plotted(shot)


def test_the_chromium_check_catches_a_broken_page(report, tmp_path):
    broken = report.html.read_text().replace('src="data:image/png;base64,', 'src="data:image/png;base64,AAAA', 1)
    broken = broken.replace("</body>", "<script>undefinedFunction();</script></body>")
    page = tmp_path / "broken.html"
    page.write_text(broken)
    loaded = chromium("--dump-dom", page.resolve().as_uri(), cwd=tmp_path)
    assert f'data-plots-shown="{len(report.plots) - 1}/{len(report.plots)}"' in loaded.stdout
    messages = console_messages(loaded.stderr)
    assert any("plot did not load" in m for m in messages) and any("undefinedFunction" in m for m in messages)
    blank = tmp_path / "blank.html"
    blank.write_text("<html><body></body></html>")
    chromium(f"--screenshot={tmp_path / 'blank.png'}", "--window-size=800,600", blank.resolve().as_uri(), cwd=tmp_path)
    assert not screenshot_is_plotted(tmp_path / "blank.png")


def test_a_section_is_one_module_and_one_list_entry(tmp_path, monkeypatch):
    """A module with NAME, TEMPLATE, build and markdown, added to SECTIONS, reaches the page, the
    Markdown and the CSV files with no other change."""
    import types

    from markupsafe import Markup

    from harness.report import sections
    from harness.report.sections.base import SectionOutput, table_markdown

    table = pd.DataFrame({"point_id": ["p"], "figure": [7]})
    extra = types.SimpleNamespace(
        NAME="extra",
        TEMPLATE="sections/extra.html.j2",
        build=lambda ctx: SectionOutput(tables={"extra": table}, shown={"extra": Markup("<p>extra-table</p>")}),
        markdown=lambda page: table_markdown("An extra section", page.tables["extra"]),
    )
    templates = tmp_path / "templates"
    shutil.copytree(__import__("harness.report", fromlist=["x"]).__path__[0] + "/templates", templates)
    (templates / "sections" / "extra.html.j2").write_text('<h2 id="extra">Extra</h2>{{ tables.extra }}\n')
    import jinja2

    monkeypatch.setattr(jinja2, "PackageLoader", lambda *a: jinja2.FileSystemLoader(str(templates)))
    monkeypatch.setattr(sections, "SECTIONS", [*sections.SECTIONS[:-1], extra, sections.SECTIONS[-1]])
    monkeypatch.setattr("harness.report.build.SECTIONS", sections.SECTIONS)
    for r in sweep_records()[:2]:
        store.write(r, tmp_path / "results")
    written = build([tmp_path / "results"], tmp_path / "report")
    page = written.html.read_text()
    assert page.index('<h2 id="extra">Extra</h2><p>extra-table</p>') < page.index('<h2 id="points">')
    md = written.markdown.read_text()
    assert "## An extra section\n\n| point_id | figure |" in md
    assert md.index("## An extra section") > md.index("## Correctness (failures first)")
    assert pd.read_csv(written.directory / "extra.csv").figure.tolist() == [7]


def test_the_builder_names_no_section():
    """build.py runs the sections in order; it reads no section's table or part by name and compares
    nothing with a section's name: what each holds lives in its own module."""
    import ast
    from pathlib import Path

    from harness.report import build as builder
    from harness.report.sections import SECTIONS

    names = {s.NAME for s in SECTIONS} | {"open_change_points", "moe_layers", "moe_routing", "first_next"}
    tree = ast.parse(Path(builder.__file__).read_text())
    by_name = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            by_name.add(node.slice.value)
        elif isinstance(node, ast.Attribute):
            by_name.add(node.attr)
        elif isinstance(node, ast.Compare):
            by_name |= {c.value for c in [node.left, *node.comparators] if isinstance(c, ast.Constant)}
    assert not names & by_name
