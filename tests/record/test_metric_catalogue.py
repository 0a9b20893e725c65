"""The metric catalogue: every figure a record carries is in it, with an explicit direction."""

from __future__ import annotations

import pytest

from harness.adapters import registry
from harness.errors import UsageError
from harness.measure.rounds import summarize
from harness.records import metric_names, metric_type, metrics
from harness.regression.check import check
from harness.regression.settings import RegressionSettings
from harness.regression.thresholds import parse_thresholds
from harness.run import planning
from harness.run.runner import Runner
from harness.run.settings import RunSettings
from harness.scenario.sweep import expand
from tests.cli.test_verify_top1_engine import ForcedTop1Adapter
from tests.records import record, rounds
from tests.tiny_scenario import tiny


def run_points(write_scenario, tmp_path, text: str, name: str):
    loaded = planning.load(write_scenario(text, name))
    return [
        Runner(RunSettings(results_dir=tmp_path / "results", cache_dir=None)).run_point(loaded, p)
        for p in expand(loaded)
    ]


def uncatalogued(records) -> dict[str, set[str]]:
    missing = {r.point_id: set(r.metrics) - set(metrics.BY_NAME) for r in records}
    missing.update({f"{r.point_id} (unavailable)": set(r.unavailable) - set(metrics.BY_NAME) for r in records})
    return {point: names for point, names in missing.items() if names}


def test_every_metric_a_real_point_records_is_catalogued(write_scenario, tmp_path, fake_adapters):
    registry.register_adapter(ForcedTop1Adapter)
    try:
        moe = run_points(
            write_scenario,
            tmp_path,
            tiny(
                model="tiny-qwen2-moe",
                measurement={"warmup_rounds": 1, "min_rounds": 2, "threads": 2},
                gate={"tokens": 4, "prompts": 1},
                sweep={"adapter": ["hf", "fake-top1"]},
            ),
            "moe.yaml",
        )
        fakes = run_points(
            write_scenario,
            tmp_path,
            tiny(
                prompts=None,
                measurement={"warmup_rounds": 1, "min_rounds": 2},
                sweep={"adapter": ["fake", "fake-failing", "fake-truncating"]},
            ),
            "fakes.yaml",
        )
    finally:
        registry.unregister_adapter(ForcedTop1Adapter.name)
    records = moe + fakes
    assert [r.status for r in moe] == ["ok", "ok"], [r.reason for r in moe]
    assert {"moe_drop_rate", "gate_s", "energy_per_token_mj", "roofline_fraction"} <= set(moe[0].metrics)
    assert uncatalogued(records) == {}
    assert all(r.units == metric_names.units(r.metrics) for r in records if r.status == "ok")


def test_names_and_aliases_resolve_and_unknown_names_suggest_the_closest():
    assert metric_names.resolve("tpot") is metric_names.get("tpot_ms") is metric_names.resolve("tpot_ms")
    with pytest.raises(UsageError, match=r"unknown metric 'tpott'; did you mean 'tpot'\?.*use one of e2e, energy"):
        metric_names.resolve("tpott")
    with pytest.raises(KeyError, match="not in the metric catalogue"):
        metric_names.get("latency")
    assert (
        metric_names.label("tpot_ms") == "next token (ms/token)"
        and metric_names.label("gate_kl_ratio") == "gate_kl_ratio"
    )


def test_every_entry_has_a_unit_and_an_explicit_direction():
    for metric in metrics.CATALOGUE:
        assert metric.unit and metric.higher_is_better in (True, False, None), metric
    assert metric_names.get("roofline_fraction").higher_is_better is True
    assert all(metric_names.get(name).unit == "tokens/s" for name in metrics.BY_NAME if name.endswith("tokens_per_s"))


def test_a_roofline_fraction_that_falls_fails_the_regression_check():
    # Before the catalogue the fraction was checked as lower-is-better: a 20 % fall passed.
    base, new = record("p", seed=1), record("p", seed=1)
    base.metrics["roofline_fraction"], new.metrics["roofline_fraction"] = 0.5, 0.4
    outcome = check([base], [new], RegressionSettings(parse_thresholds("roofline_fraction=5%")))
    assert [f.kind for f in outcome.findings] == ["regression"]
    assert "roofline_fraction 0.5 -> 0.4 (+20.0% worse" in outcome.findings[0].message
    assert check([new], [base], RegressionSettings(parse_thresholds("roofline=5%"))).passed  # a rise is an improvement


def test_metrics_without_a_direction_cannot_be_checked_for_regressions():
    with pytest.raises(UsageError, match="'rounds=5%': rounds has no better direction"):
        parse_thresholds("rounds=5%")


def test_ttft_p99_is_summarized_and_catalogued():
    summary = summarize(rounds(tpot_ms=10.0, ttft_ms=100.0, seed=3, n_rounds=20, jitter=0.2))
    ttfts = sorted(r.ttft_s * 1e3 for r in rounds(tpot_ms=10.0, ttft_ms=100.0, seed=3, n_rounds=20, jitter=0.2))
    assert summary["ttft_ms_p90"] <= summary["ttft_ms_p99"] <= ttfts[-1]
    assert summary["ttft_ms_p99"] == pytest.approx(ttfts[-2] + (ttfts[-1] - ttfts[-2]) * 0.81)
    assert metric_names.get("ttft_ms_p99").unit == "ms" and metric_names.resolve("ttft_p99").name == "ttft_ms_p99"


def test_every_entry_says_where_it_comes_from():
    assert all(metric.source in metric_type.SOURCES for metric in metrics.CATALOGUE)
    assert (
        metric_names.get("tpot_ms").source == metric_type.HOST
        and metric_names.get("engine_tpot_ms").source == metric_type.ENGINE
    )
    assert (
        metric_names.get("energy_j").source == metric_type.SENSOR
        and metric_names.get("cpu_cycles").source == metric_type.HW
    )
