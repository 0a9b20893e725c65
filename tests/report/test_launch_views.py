"""What a reader sees of launches, intervals and the time split (issues #18, #19): the run table, the
run-end split, the flat columns (pandas, CSV, pytest-benchmark), the report, compare, summary and export."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from harness.cli import output as cli_output
from harness.records import benchmark_json, store
from harness.records.columns import TIME_SPLIT, flatten
from harness.records.record import Record
from harness.records.samples import Drift, Interval, Launch, TimeSplit
from harness.report import compare, export, tables
from harness.report.build import build
from harness.report.readable import plus_minus
from harness.report.summary import summarize
from tests.records import record


def launched(
    point_id: str = "hf-cpu-bf16",
    tpot: float = 50.0,
    low: float = 49.0,
    high: float = 51.4,
    launches: int = 3,
    split: TimeSplit | None = None,
    **axes,
) -> Record:
    """A record measured by ``launches`` launches with a ms/token interval [low, high] around ``tpot``."""
    r = record(point_id, **axes)
    r.metrics["tpot_ms"] = tpot
    r.samples.launches = [Launch(index=k, medians={"tpot_ms": tpot}, rounds=5) for k in range(launches)]
    for k, sample in enumerate(r.samples.rounds):
        sample.launch = k % launches
    r.samples.intervals = {
        "tpot_ms": Interval(
            estimate=tpot, low=low, high=high, cv=0.02, launches=launches, samples=5 * launches, method="bootstrap"
        )
    }
    r.time_split = split
    return r


def drifting(point_id: str = "hf-cpu-drift", **axes) -> Record:
    r = launched(point_id, **axes)
    r.samples.launches[1].drift = [
        Drift(metric="tpot_ms", slope_per_round=0.012, p_value=0.001, flagged=True),
        Drift(metric="ttft_ms", slope_per_round=0.0001, p_value=0.8),
    ]
    r.samples.launches[2].machine = {"load_1m": 3.2, "noisy": "load average 3.2 on 2 cores"}
    return r


SPLIT = TimeSplit(process_start_s=4, imports_s=6, conversion_s=0, load_s=10, warmup_s=10, timed_s=60, gate_s=10)


# -- the one home of the split's labels --------------------------------------------------------------


def test_the_time_split_labels_name_every_part_of_the_record_once():
    fields = [field for field, _ in TIME_SPLIT]
    assert fields == list(TimeSplit.model_fields) and len({label for _, label in TIME_SPLIT}) == len(TIME_SPLIT)


def test_plus_minus_shows_the_half_width():
    assert plus_minus(50.0, 49.0, 51.4) == "50 ± 1.2"
    assert plus_minus(50.0, None, 51.4) == "50" and plus_minus(None, 1, 2) == "-"


# -- flat columns: pandas, CSV, pytest-benchmark --------------------------------------------------------


def test_flat_columns_carry_intervals_launches_warnings_and_the_split(tmp_path):
    r = drifting(split=SPLIT)
    r.metrics["load_s"] = 3.5  # the metric of that name is not the split's part
    row = flatten(r)
    assert (row["tpot_ms_ci_low"], row["tpot_ms_ci_high"], row["tpot_ms_cv"], row["launches"]) == (49.0, 51.4, 0.02, 3)
    assert row["ttft_ms_ci_low"] is None and row["energy_per_token_mj_cv"] is None  # no interval measured
    assert row["drift_flags"] == "launch 2/3: tpot_ms drifts +1.2% per round"  # the unflagged trend is not listed
    assert row["machine_noise"] == "launch 3/3: noisy machine: load average 3.2 on 2 cores"
    assert row["time_timed_s"] == 60 and row["time_load_s"] == 10 and row["load_s"] == 3.5
    store.write(r, tmp_path / "results")
    frame = store.load(tmp_path / "results").iloc[0]
    assert frame.tpot_ms_ci_high == 51.4 and frame.launches == 3 and frame.time_gate_s == 10


def test_records_before_launches_count_as_one_launch_without_an_interval():
    row = flatten(record("old"))
    assert row["launches"] == 1 and row["tpot_ms_ci_low"] is None and row["time_timed_s"] is None
    assert row["drift_flags"] is None and row["machine_noise"] is None and row["failed_launches"] is None
    assert flatten(record("never-ran", status="skipped"))["launches"] is None


def test_a_failed_launch_is_counted_out_and_named():
    r = launched()
    r.samples.launches[0].status, r.samples.launches[0].reason = "failed", "worker died (SIGSEGV)"
    row = flatten(r)
    assert row["launches"] == 2 and row["failed_launches"] == "launch 1/3 failed: worker died (SIGSEGV)"


def test_pytest_benchmark_extra_info_and_the_carried_record_keep_the_intervals():
    from harness.pytest_plugin.items import report_to_benchmark

    class Benchmark:  # the parts of pytest-benchmark's fixture the plugin touches
        disabled, extra_info = True, {}

    report_to_benchmark(Benchmark, drifting())
    info = Benchmark.extra_info
    assert info["tpot_ms_ci_low"] == 49.0 and info["tpot_ms_ci_high"] == 51.4 and info["launches"] == 3
    assert info["tpot_ms"] == 50.0 and info["gate_verdict"] == "pass"  # the keys it always had
    carried = Record.from_dict(info[benchmark_json.KEY])
    assert carried.samples.intervals["tpot_ms"].high == 51.4 and len(carried.samples.launches) == 3
    assert carried.samples.launches[1].drift[0].flagged and carried.samples.rounds_ms["tpot_ms"]


# -- the terminal: harness run, its time split, compare, summary ----------------------------------------


def test_the_run_table_shows_plus_minus_the_half_width_and_the_launch_count():
    one = launched("hf-cpu-single", launches=1, low=49.0, high=51.4)  # one launch: no interval to show
    lines = cli_output.run_table_lines([launched(), one, drifting()])
    row = next(line for line in lines if "::hf-cpu-bf16 " in line)
    assert "50.0 ± 1.20" in row and row.split()[-2:] == ["3", "pass"]
    single = next(line for line in lines if "::hf-cpu-single " in line)
    assert "±" not in single and " 50.0 " in single and single.split()[-2:] == ["1", "pass"]
    assert "    warning: launch 2/3: tpot_ms drifts +1.2% per round" in lines
    assert "    warning: launch 3/3: noisy machine: load average 3.2 on 2 cores" in lines
    assert lines[-1].startswith("±: half-width of the 95 % confidence interval")


def test_the_run_table_without_launches_has_no_interval_note():
    lines = cli_output.run_table_lines([record("plain"), record("gone", status="failed")])
    assert not any("±" in line for line in lines) and "    it failed" in lines


def test_the_run_end_time_split_sums_the_records_and_gives_shares():
    text = cli_output.time_split_table([launched("a", split=SPLIT), launched("b", split=SPLIT), record("old")])
    rows = {
        m["part"]: (m["mark"], m["seconds"], m["share"])
        for m in re.finditer(
            r"^(?P<mark>[* ]) +(?P<part>\S.*?)\s+(?P<seconds>[\d.]+)\s+(?P<share>[\d.]+) %$", text, re.MULTILINE
        )
    }
    assert rows["timed (measured inference)"] == ("*", "120.00", "60.0")  # the timed row is marked
    assert rows["model load"] == (" ", "20.00", "10.0") and rows["total"] == (" ", "200.00", "100.0")
    assert rows["process start"] == (" ", "8.00", "4.0") and len(rows) == len(TIME_SPLIT) + 1
    assert "* timed (measured inference): 60.0 % of 200.00 s" in text
    assert "note: 1 of 3 point(s) have no time split" in text


def test_the_run_end_time_split_without_any_split_says_so():
    assert cli_output.time_split_table([record("old")]).startswith("time split: 1 of 1 point(s) have no time split")


def test_compare_shows_both_intervals_and_launch_counts(tmp_path):
    base = [launched("p", tpot=50.0, low=49.0, high=51.4, launches=3)]
    new = [launched("p", tpot=40.0, low=39.5, high=40.5, launches=5)]
    table = compare.comparison(base, new)
    row = table.iloc[0]
    assert (row.tpot_ms_ci_low_base, row.tpot_ms_ci_high_new, row.launches_base, row.launches_new) == (49.0, 40.5, 3, 5)
    text = compare.format_table(table)
    line = next(line for line in text.splitlines() if " p " in line)
    assert re.search(r" 50 ± 1.2 +40 ± 0.5 +3 +5 +1.25 ", line)  # both intervals, both launch counts, the speed-up
    assert text.splitlines()[-1].startswith("±: half-width")


def test_summary_gives_the_interval_over_launches_and_the_warnings():
    text = summarize([drifting()])
    assert "50 ± 1.2 ms/token (95 % CI, 3 launches)" in text
    assert "WARNING demo::hf-cpu-drift: launch 2/3: tpot_ms drifts +1.2% per round" in text


def test_export_names_the_launch_of_every_token(tmp_path):
    r = launched(launches=2)
    export.write([r], tmp_path / "t.jsonl", "jsonl")
    rows = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    by_round = {row["round"]: row["launch"] for row in rows if row["kind"] == "token"}
    assert by_round == {k: k % 2 for k in range(len(r.samples.rounds))}


# -- the report --------------------------------------------------------------------------------------


@pytest.fixture
def launched_report(tmp_path):
    points = [
        launched(
            f"hf-cpu-bf16-seq{seq}",
            scenario="seq",
            max_seq_len=seq,
            tpot=40 + seq / 64,
            low=39 + seq / 64,
            high=41 + seq / 64,
            split=SPLIT,
        )
        for seq in (128, 256)
    ]
    points.append(drifting("hf-cpu-bf16-seq512", scenario="seq", max_seq_len=512, split=SPLIT))
    points.append(record("old-point", scenario="old"))  # no time split: left out, with a note
    for r in points:
        store.write(r, tmp_path / "results")
    return build([tmp_path / "results"], tmp_path / "report")


def test_the_report_embeds_the_time_split_figure_and_table(launched_report):
    html = launched_report.html.read_text()
    assert "time_split" in {p.stem for p in launched_report.plots}
    assert '<figure id="time_split">' in html and 'id="time-split"' in html
    assert "1 point(s) without a time split are left out" in html
    split = pd.read_csv(launched_report.directory / "time_split.csv").set_index("scenario")
    assert list(split.index) == ["seq"]  # the point without a split is left out
    assert split.loc["seq", "timed_s"] == 180 and split.loc["seq", "total_s"] == 300
    assert split.loc["seq", "timed_share"] == pytest.approx(0.6)
    assert "timed (measured inference) (s)" in html and "60 %" in html


def test_the_report_warns_of_drift_and_a_noisy_machine_per_point(launched_report):
    html = launched_report.html.read_text()
    warnings = html[html.index('id="warnings"') : html.index('id="engines"')]
    assert "seq::hf-cpu-bf16-seq512: launch 2/3: tpot_ms drifts +1.2% per round" in warnings
    assert "seq::hf-cpu-bf16-seq512: launch 3/3: noisy machine: load average 3.2 on 2 cores" in warnings
    assert "hf-cpu-bf16-seq128" not in warnings
    assert "## Measurement warnings" in launched_report.markdown.read_text()


def test_the_report_tables_show_plus_minus_and_launches(launched_report):
    html = launched_report.html.read_text()
    launches = html[html.index('id="launches"') : html.index('id="time-split"')]
    assert "42 ± 1" in launches and "44 ± 1" in launches and "2 %" in launches  # seq128, seq256; cv 2 %
    points = pd.read_csv(launched_report.directory / "points.csv").set_index("point_id")
    assert points.loc["hf-cpu-bf16-seq128", "tpot_ms_ci_low"] == 41.0
    assert points.loc["hf-cpu-bf16-seq128", "launches"] == 3 and points.loc["old-point", "launches"] == 1
    table = pd.read_csv(launched_report.directory / "launches.csv")
    assert set(table.point_id) == {"hf-cpu-bf16-seq128", "hf-cpu-bf16-seq256", "hf-cpu-bf16-seq512"}
    every = html[html.index('id="points"') :]
    assert "42 ± 1" in every and "_ci_low" not in every  # the ends are merged into the figure for reading
    assert "Error bars: the 95 % confidence interval over launches" in html  # ms/token vs max_seq_len


def test_an_engine_row_of_one_point_keeps_its_interval():
    df = store.frame(
        [(None, launched("a", adapter="hf")), (None, launched("b", adapter="ov")), (None, launched("c", adapter="ov"))]
    )
    engines = tables.engines(df).set_index("adapter")
    assert engines.loc["hf", "tpot_ms_ci_low"] == 49.0 and pd.isna(engines.loc["ov", "tpot_ms_ci_low"])
    assert engines.loc["ov", "launches"] == 3


def test_single_launch_records_add_no_launch_table_and_no_warnings(tmp_path):
    store.write(record("plain"), tmp_path / "results")
    written = build([tmp_path / "results"], tmp_path / "report")
    html = written.html.read_text()
    assert 'id="launches"' not in html and 'id="warnings"' not in html and 'id="time-split"' not in html
    assert "Error bars" not in html


def test_the_report_with_launches_loads_in_chromium_with_every_plot(launched_report, tmp_path):
    from tests.report.test_report import chromium, console_messages

    loaded = chromium("--dump-dom", launched_report.html.resolve().as_uri(), cwd=tmp_path)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    shown = len(launched_report.plots)
    assert f'data-plots-shown="{shown}/{shown}"' in loaded.stdout and console_messages(loaded.stderr) == []


def test_phases_distribution_and_same_weights_reach_columns_and_the_verify_line():
    from harness.cli.output import verdict_line
    from harness.records.columns import flatten
    from harness.records.correctness import Correctness
    from harness.records.kl_tier import GatePhase, GatePhases, KLDistribution, KLSpread
    from harness.records.own_weights import SameWeights
    from harness.records.record import Record

    gate = Correctness(
        verdict="fail",
        k=5,
        mode="both",
        kl_mean=0.004,
        noise_floor=0.0004,
        kl_ratio=9.7,
        top1_match_rate=1.0,
        free_divergence_index=None,
        phases=GatePhases(
            prefill=GatePhase(kl_mean=0.0, noise_floor=0.0006, kl_ratio=0.0, positions=2, verdict="pass"),
            decode=GatePhase(kl_mean=0.0047, noise_floor=0.00047, kl_ratio=10.1, positions=62, verdict="drift"),
        ),
        distribution=KLDistribution(forward=KLSpread(median=0.001, p90=0.008, p99=0.02, max=0.03, positions=64)),
        same_weights=SameWeights(verdict="fail", model_verdict="drift", kl_ratio=173.0),
    )
    record = Record(scenario="s", point_id="p", point={}, status="ok", correctness=gate)
    row = flatten(record)
    assert row["gate_decode_kl_ratio"] == 10.1 and row["gate_prefill_verdict"] == "pass"
    assert row["gate_kl_p99"] == 0.02 and row["gate_same_weights_verdict"] == "fail"
    assert row["gate_model_verdict"] == "drift"
    line = verdict_line("s::p", gate)
    assert "decode phase 10.1x its floor" in line and "own weights fail (173.0x)" in line
