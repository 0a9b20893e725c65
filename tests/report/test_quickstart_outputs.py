"""The main job's outputs (issue 22): per-position gate data, the terminal summary, the export, readable
numbers, the report's per-token plots and engine table, and the progress callback."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from harness.cli.app import main
from harness.correctness import gate
from harness.records import store
from harness.records.record import Record
from harness.report import export
from harness.report.readable import number, times_floor
from harness.report.summary import summarize
from harness.scenario.gate_section import Gate
from tests.correctness.test_gate import REF_TABLE, ChosenOnly, logits, reference_from
from tests.fakes import Scripted
from tests.records import record


def test_the_gate_keeps_kl_and_top1_per_position():
    device = [logits([2, 1, 3]), REF_TABLE[1], logits([6, 5, 4])]
    result = gate.evaluate(Scripted(device), reference_from(REF_TABLE), Gate(k=2).settings(quantized=False))
    (prompt,) = result.prompts
    assert len(prompt.position_kl) == 3 and prompt.position_top1 == [0, 1, 0]
    assert prompt.position_kl[1] == 0 and prompt.position_kl[2] > prompt.position_kl[0] > 0
    top1 = gate.evaluate_top1(ChosenOnly([1, 1, 3]), reference_from(REF_TABLE), Gate(k=2).settings(quantized=False))
    assert top1.prompts[0].position_top1 == [1, 0, 1] and top1.prompts[0].position_kl is None


def test_seen_by_a_progress_callback():
    seen = []
    gate.evaluate(
        Scripted(REF_TABLE),
        reference_from(REF_TABLE),
        Gate(k=2).settings(quantized=False),
        on_prompt=lambda j, m: seen.append((j, m)),
    )
    assert seen == [(1, 1)]


def gated(point_id: str, adapter: str, device: str, tpot_ms: float, kls=(1e-3, 2e-3, 5e-4), **extra) -> Record:
    r = record(point_id, scenario="quickstart", adapter=adapter, device=device, tpot_ms=tpot_ms, **extra)
    r.correctness.noise_floor = 1e-3
    r.correctness.prompts = [
        {
            "prompt": p,
            "kind": "plain",
            "position_kl": list(kls),
            "position_top1": [1, 1, 0],
            "free_divergence": 2 if p else None,
        }
        for p in (0, 1)
    ]
    return r


def quickstart_records() -> list[Record]:
    skipped = record("openvino-NPU-bf16", scenario="quickstart", adapter="openvino", device="NPU", status="skipped")
    cpu = gated("hf-cpu-bf16", "hf", "cpu", 40.0)
    cpu.unavailable["energy_cpu_package_j"] = "RAPL is not readable here"
    out = [
        cpu,
        gated("openvino-CPU-bf16", "openvino", "CPU", 20.0, energy_per_token_mj=12.5),
        gated("llamacpp-cpu-bf16", "llamacpp", "cpu", 10.0),
        skipped,
    ]
    for minute, r in enumerate(out):  # the order they ran, which is not the files' order
        r.started_at = f"2025-01-01T00:0{minute}:00+00:00"
    return out


def test_summary_answers_right_fast_and_energy_per_engine():
    text = summarize(quickstart_records(), report="reports/quickstart/index.html")
    lines = text.splitlines()
    assert lines[0] == "quickstart: 4 points (3 ok, 1 skipped)"
    rows = {line.split()[0]: line for line in lines if line.split()[:1] in (["hf"], ["openvino"], ["llamacpp"])}
    assert set(rows) == {"hf", "openvino", "llamacpp"}
    assert "pass, KL 1x floor" in rows["hf"] and "1x" in rows["hf"]
    assert "4x" in rows["llamacpp"] and "2x" in rows["openvino"]  # speed-up against the first row
    assert "12.5 mJ/token" in rows["openvino"] and "not measured: RAPL is not readable here" in rows["hf"]
    assert "ms/token" in rows["hf"] and " ± " in rows["hf"]
    assert (
        "SKIPPED quickstart::openvino-NPU-bf16: it skipped" in text
        and lines[-1] == "report: reports/quickstart/index.html"
    )


def test_harness_summary_command(tmp_path, capsys):
    for r in quickstart_records():
        store.write(r, tmp_path / "results")
    assert main(["summary", str(tmp_path / "results" / "quickstart")]) == 0
    assert "is it right (gate)" in capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_export_has_one_row_per_token_and_per_gate_position(tmp_path, fmt, capsys):
    records = quickstart_records()
    for r in records:
        store.write(r, tmp_path / "results")
    out = tmp_path / f"tokens.{fmt}"
    assert main(["export", str(tmp_path / "results"), "--format", fmt, "-o", str(out)]) == 0
    table = pd.read_json(out, lines=True) if fmt == "jsonl" else pd.read_parquet(out)
    tokens = sum(1 + len(s.gaps_s) for r in records for s in r.samples.rounds)
    positions = sum(len(p.position_kl) for r in records if r.correctness for p in r.correctness.prompts)
    assert (table.kind == "token").sum() == tokens and (table.kind == "gate").sum() == positions
    assert f"wrote {tokens + positions} rows" in capsys.readouterr().out
    first = records[0].samples.rounds[0]
    rows = table[(table.kind == "token") & (table.point == "hf-cpu-bf16") & (table["round"] == 0)]
    assert rows.gap_ms.iloc[0] == pytest.approx(first.ttft_s * 1e3)
    assert rows.offset_ms.iloc[-1] == pytest.approx((first.ttft_s + sum(first.gaps_s)) * 1e3)
    gates = table[table.kind == "gate"]
    assert set(gates.top1_match) == {0, 1} and gates.kl.max() == pytest.approx(2e-3)


def test_export_refuses_an_unknown_format(tmp_path):
    with pytest.raises(SystemExit):
        main(["export", str(tmp_path), "--format", "csv", "-o", str(tmp_path / "x")])
    from harness.errors import UsageError

    with pytest.raises(UsageError):
        export.write([], tmp_path / "x", "csv")


def test_numbers_for_reading():
    assert [number(v) for v in (45.678, 0.012345, 2.0, 1024.0, 3e-5, None, float("nan"))] == [
        "45.7",
        "0.0123",
        "2",
        "1024",
        "3.00e-05",
        "-",
        "-",
    ]
    assert times_floor(1.04) == "1.04x" and times_floor(None) == "-"


def test_report_leads_with_the_engines_and_draws_token_and_kl_plots(tmp_path):
    from harness.report.build import build

    for r in quickstart_records():
        store.write(r, tmp_path / "results")
    written = build([tmp_path / "results"], tmp_path / "report")
    assert {"token_timeline", "gate_kl"} <= {p.stem for p in written.plots}
    engines = pd.read_csv(tmp_path / "report" / "engines.csv")
    assert engines.adapter.tolist() == ["hf", "openvino", "llamacpp"]  # the records' order: hf first
    assert engines.speedup.tolist() == pytest.approx([1.0, 2.0, 4.0], rel=0.05)
    html = written.html.read_text()
    assert html.index('id="engines"') < html.index('id="overview"') < html.index('id="token_timeline"')
    assert "1x" in html and "12.5" in html
    points = pd.read_csv(tmp_path / "report" / "points.csv")  # full values in the CSVs
    assert points.tpot_ms.map(lambda v: len(repr(v)) > 5).any()


def test_steps_report_their_phase(tmp_path, tiny_llama, write_scenario):
    """The phase callback sees resolve, load, warm-up, each timing round and each gate prompt."""
    from harness.run import planning, steps
    from harness.run.settings import RunSettings
    from harness.run.steps.caches import Caches
    from harness.scenario.sweep import expand

    path = write_scenario("""
model: tiny-llama
prompts: ["Hello there"]
generation: {max_new_tokens: 4}
measurement: {warmup_rounds: 1, min_rounds: 2, threads: 1}
sweep: {adapter: [hf], device: [cpu]}
gate: {k: 5, tokens: 4, prompts: 2}
""")
    scenario = planning.load(path)
    phases = []
    settings = RunSettings(reference_dir=tmp_path / "refs", energy=False)
    (point,) = expand(scenario)
    assert steps.execute(settings, Caches(), scenario, point, on_phase=phases.append).status == "ok"
    tail = [p.split(": ", 1)[1] for p in phases]
    assert tail[0].startswith("converting") and tail[2].startswith("loading hf")
    assert tail[1] == "gate reference (computed once, then reused)"  # said before it may take minutes
    assert tail[3:] == [
        "warm-up 1/1",
        "timing round 1/2",
        "timing round 2/2",
        "gate prompt 1/2",
        "gate prompt 2/2",
        "text path",
        "stopping",
    ]
    assert json.dumps(phases)  # plain text


def test_the_quickstart_report_loads_in_chromium_with_its_token_and_kl_plots(tmp_path):
    from harness.report.build import build
    from tests.report.test_report import chromium, console_messages, screenshot, screenshot_is_plotted

    for r in quickstart_records():
        store.write(r, tmp_path / "results")
    written = build([tmp_path / "results"], tmp_path / "report")
    loaded = chromium("--dump-dom", written.html.resolve().as_uri(), cwd=tmp_path)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    n = len(written.plots)
    assert n >= 3 and f'data-plots-shown="{n}/{n}"' in loaded.stdout
    assert 'alt="Per-token timeline"' in loaded.stdout and 'alt="Gate: per-position KL' in loaded.stdout
    assert console_messages(loaded.stderr) == []
    shot = tmp_path / "shot.png"
    screenshot(written.html, shot, height=2400, max_bytes=500_000)
    assert shot.stat().st_size < 500_000 and screenshot_is_plotted(shot)


def test_summary_tells_two_quantization_levels_of_one_engine_apart():
    four = gated("llamacpp-cpu-q4_k_m", "llamacpp", "cpu", 10.0)
    eight = gated("llamacpp-cpu-q8_0", "llamacpp", "cpu", 14.0)
    four.engine.precision, eight.engine.precision = "q4_k_m", "q8_0"
    lines = summarize([four, eight]).splitlines()
    assert lines[2].split()[:3] == ["engine", "device", "precision"]
    rows = [line for line in lines if line.startswith("llamacpp")]
    assert [row.split()[3] for row in rows] == ["q4_k_m", "q8_0"]
