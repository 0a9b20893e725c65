"""Static expert capacity on real HF MoE models: saliency-ordered drops, the ``moe_capacity`` axis
through the runner and the gate, routing in records and the report, ``harness routing``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from harness import cli  # noqa: E402
from harness.adapters.hf.moe_capacity import RoutingMonitor  # noqa: E402
from harness.report import build  # noqa: E402
from harness.run import planning  # noqa: E402
from harness.run.runner import Runner  # noqa: E402
from harness.run.settings import RunSettings  # noqa: E402
from harness.scenario.sweep import expand  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


class _Attention(torch.nn.Module):
    """Returns its input as the attention output, so the test sets each token's saliency directly."""

    def forward(self, x):
        return x, None


class _Experts(torch.nn.Module):
    def forward(self, hidden, top_k_index, top_k_weights):
        self.seen = top_k_weights.clone()
        return hidden


class _Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn = _Attention()
        self.mlp = torch.nn.Module()
        self.mlp.experts = _Experts()


class _Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = _Layer()
        self.config = type("Config", (), {"model_type": "toy"})()

    def forward(self, saliency, index):
        attn, _ = self.layer.self_attn(saliency[:, None].repeat(1, 3))
        return self.layer.mlp.experts(attn, index, torch.ones(index.shape))


def test_overflow_drops_the_least_salient_tokens_first():
    model = _Model()
    monitor = RoutingMonitor(model, n_experts=3, capacity=2)
    index = torch.tensor([[0, 1], [0, 2], [0, 1], [0, 2]])  # 4 tokens into expert 0, 2 into experts 1 and 2
    saliency = torch.tensor([1.0, 4.0, 2.0, 3.0])
    model(saliency, index)
    kept = model.layer.mlp.experts.seen
    # expert 0 keeps its two most salient tokens (1 and 3); every other slot fits its capacity
    assert kept[:, 0].tolist() == [0.0, 1.0, 0.0, 1.0]
    assert kept[:, 1].tolist() == [1.0, 1.0, 1.0, 1.0]
    assert monitor.counts.tolist() == [[4, 2, 2]] and monitor.dropped.tolist() == [2]
    assert monitor.drop_rate == pytest.approx(2 / 8)
    monitor.remove()
    model(saliency, index)
    assert model.layer.mlp.experts.seen.tolist() == [[1.0, 1.0]] * 4  # hooks gone: nothing dropped


def test_unlimited_monitor_only_counts():
    model = _Model()
    monitor = RoutingMonitor(model, n_experts=3)
    model(torch.ones(4), torch.tensor([[0, 1]] * 4))
    assert model.layer.mlp.experts.seen.tolist() == [[1.0, 1.0]] * 4
    assert monitor.summary()["counts"] == [[4, 4, 0]] and monitor.summary()["imbalance"] == [1.5]


CAPACITY = """
model: tiny-mixtral
synthetic_prompts: 2
generation: {max_new_tokens: 6}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}
gate: {k: 5, tokens: 8, prompts: ci}
sweep:
  adapter: [hf]
  prompt_len: [64]
  moe_capacity: [null, 8, 2]
"""


@pytest.fixture(scope="module")
def capacity_records(tmp_path_factory, cache_dir):
    loaded = planning.loads(CAPACITY, "<capacity>", "capacity")
    out = tmp_path_factory.mktemp("capacity")
    runner = Runner(RunSettings(results_dir=out, cache_dir=cache_dir, energy=False))
    return out, {point.moe_capacity: runner.run_point(loaded, point) for point in expand(loaded)}


def test_drop_rate_rises_and_agreement_falls_as_capacity_shrinks(capacity_records):
    _, records = capacity_records
    assert all(r.status == "ok" for r in records.values()), [r.reason for r in records.values()]
    drops = [records[c].metrics["moe_drop_rate"] for c in (None, 8, 2)]
    assert drops[0] == 0 and drops[0] < drops[1] < drops[2]
    ratios = [records[c].correctness.kl_ratio for c in (None, 8, 2)]
    assert ratios[0] < ratios[1] < ratios[2]
    assert records[None].correctness.verdict == "pass"
    assert records[2].correctness.verdict == "fail"
    routing = records[8].routing
    assert routing.capacity == 8 and len(routing.counts) == 2 and len(routing.counts[0]) == 8
    assert sum(routing.counts[0]) == routing.tokens * 2  # top-2 routing: two slots per token


def test_report_has_the_moe_section(capacity_records, tmp_path):
    results_dir, _ = capacity_records
    written = build.build([results_dir], tmp_path / "report")
    names = {p.name for p in written.csv} | {p.name for p in written.plots}
    assert {"moe_layers.csv", "moe_routing.csv", "moe_layer_load.png", "moe_capacity.png"} <= names
    page = written.html.read_text()
    assert "MoE routing per layer" in page and "What a static expert capacity costs" in page


def test_capacity_needs_an_moe_model_and_an_engine_that_can_cap(tiny_llama, cache_dir, tmp_path):
    text = CAPACITY.replace("tiny-mixtral", "tiny-llama").replace("[null, 8, 2]", "[8]")
    text = text.replace("adapter: [hf]", "adapter: [hf, llamacpp]")
    loaded = planning.loads(text, "<dense>", "dense")
    runner = Runner(RunSettings(results_dir=tmp_path, cache_dir=cache_dir, energy=False))
    records = {p.adapter: runner.run_point(loaded, p) for p in expand(loaded)}
    assert records["hf"].status == "skipped" and "tiny-llama (llama) is dense" in records["hf"].reason
    assert records["llamacpp"].status == "skipped"
    assert records["llamacpp"].reason == "llamacpp cannot limit expert capacity (moe_capacity=8)"


def test_routing_command_writes_the_capacity_grid(tmp_path, capsys):
    out = tmp_path / "routing"
    code = cli.main(
        [
            "routing",
            "tiny-qwen2-moe",
            "--prompt-len",
            "64",
            "--prompts",
            "2",
            "--chunk",
            "32",
            "--capacities",
            "16,4",
            "--groups",
            "1,4",
            "-o",
            str(out),
        ]
    )
    assert code == 0
    import pandas as pd

    grid = pd.read_csv(out / "capacity_grid.csv")
    assert len(grid) == 2 * 2 * 2  # policies x groups x capacities
    uniform = grid[(grid.policy == "uniform") & (grid.group_size == 1)].set_index("capacity")
    assert uniform.loc[4, "drop_rate"] > uniform.loc[16, "drop_rate"]
    layers = pd.read_csv(out / "routing_layers.csv")
    assert list(layers.columns) == ["layer", "imbalance_calibration", "imbalance_evaluation", "overlap_at_4"]
    assert "| policy | group_size |" in capsys.readouterr().out


def test_routing_command_on_a_dense_model_says_so(capsys):
    assert cli.main(["routing", "tiny-llama", "--prompts", "1", "--prompt-len", "16"]) == 2
    assert "llama: not a mixture-of-experts config" in capsys.readouterr().err


def test_shipped_moe_chunks_scenario_records_every_chunk_size(pytester, cache_dir):
    """``pytest scenarios/moe_chunks.yaml`` on the tiny Mixtral: every engine, every chunk (1024-token prompts
    here; the 4096 ones take the same path). In a pytest process of its own: an inline run drops the modules it
    was first to import from ``sys.modules``, and a later test would import them a second time in this process
    (torch's lazily imported parts among them)."""
    shutil.copy(ROOT / "scenarios" / "moe_chunks.yaml", pytester.path / "moe_chunks.yaml")
    result = pytester.runpytest_subprocess(
        "moe_chunks.yaml",
        "-k",
        "prompt1024",
        "--harness-isolation",
        "none",
        "--harness-results",
        "results",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=9)
    from harness.records import store

    df = store.load(pytester.path / "results")
    assert sorted(df.groupby("adapter").moe_chunk_size.apply(sorted).tolist()) == [[256, 512, 1024]] * 3
    assert df.ttft_ms.notna().all() and df.cpu_user_s.notna().all()
    hf = df[df.adapter == "hf"]
    assert hf.moe_imbalance_max.notna().all()
    for _, record in store.iter_records([pytester.path / "results"]):
        if record.point["adapter"] == "openvino":  # GenAI's split-fuse budget is the chunk
            assert record.engine.extra["prefill_chunk"] == record.point["moe_chunk_size"]
        if record.point["adapter"] == "llamacpp":
            assert record.engine.extra["n_batch"] == record.point["moe_chunk_size"]
