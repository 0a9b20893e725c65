"""The report plots each speculative point's speed-up against its acceptance rate (issue #42), and draws nothing
for a sweep without speculative points."""

from __future__ import annotations

from harness.records import store
from harness.report.build import build
from harness.report.plots.speculative import speedup_vs_acceptance
from tests.records import record


def speculative_records():
    values = {
        "none": None,
        "prompt_lookup:ngram=2:tokens=10": (0.35, 1.4),
        "draft:tokens=4:quantization=int4_sym:source=target": (0.8, 1.9),
    }
    records = []
    for value, figures in values.items():
        r = record(point_id=f"hf-cpu-bf16-spec-{value[:6]}", speculative=value)
        if figures is not None:
            r.metrics.update(spec_acceptance_rate=figures[0], spec_speedup=figures[1])
        records.append(r)
    return records


def frame(records):
    return store.frame((None, r) for r in records)


def test_the_report_draws_speedup_against_acceptance(tmp_path):
    plot = speedup_vs_acceptance(frame(speculative_records()))
    assert plot is not None and plot.slug == "speedup_vs_acceptance"
    xs = sorted(x for collection in plot.figure.axes[0].collections for x, _ in collection.get_offsets())
    assert xs == [0.35, 0.8]  # the speculative points only: the none point has no acceptance
    for r in speculative_records():
        store.write(r, tmp_path / "results")
    written = build([tmp_path / "results"], tmp_path / "report")
    assert "speedup_vs_acceptance" in {p.stem for p in written.plots}


def test_no_speculative_point_no_plot():
    assert speedup_vs_acceptance(frame([record(), record(point_id="hf-cpu-bf16-beam4", beam_width=4)])) is None
