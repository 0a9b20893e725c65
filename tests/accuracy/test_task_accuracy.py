"""Task accuracy through lm-evaluation-harness: the shipped offline tasks, the ``harness`` lm-eval
model on real adapters, the scenario's ``accuracy`` section with the reference delta, the report, and
``lm_eval --model harness`` on the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("lm_eval", reason="lm-eval not installed: pip install -e '.[accuracy]'")

from harness.accuracy import evaluate
from harness.errors import ScenarioErrors  # noqa: E402
from harness.report import build
from harness.run import planning
from harness.run.runner import Runner  # noqa: E402
from harness.run.settings import RunSettings  # noqa: E402
from harness.scenario.sweep import expand  # noqa: E402

BIN = Path(sys.executable).parent


def test_shipped_tasks_have_a_hundred_well_formed_items():
    sys.path.insert(0, str(evaluate.TASKS_DIR))
    try:
        import loader
    finally:
        sys.path.pop(0)
    cloze, choice = loader.cloze()["test"], loader.choice()["test"]
    assert len(cloze) == len(choice) == 100
    for row in cloze:
        assert row["context"] + row["target"] == row["text"] and row["target"].startswith(" ")
        assert " " not in row["target"].strip()
    for row in choice:
        assert len(row["choices"]) in (2, 4) and 0 <= row["label"] < len(row["choices"])
    labels = [row["label"] for row in choice]
    assert len(set(labels)) == 4  # the right answer is not always in one position
    assert evaluate.SHIPPED == {"harness_cloze", "harness_choice"}


@pytest.fixture(scope="module")
def tiny_lm(cache_dir):
    from harness.run.point_lm import PointLM

    return PointLM(model="tiny-llama", adapter="hf", dtype="fp32", threads=2, cache_dir=str(cache_dir))


class _Request:
    def __init__(self, *args):
        self.args = args


def test_loglikelihood_is_the_reference_models_own(tiny_lm, tiny_llama):
    import torch
    from transformers import AutoModelForCausalLM

    context, continuation = "A bakery on the corner", " sells bread"
    ((total, greedy),) = tiny_lm.loglikelihood([_Request(context, continuation)])
    ids = tiny_lm._encode(context + continuation)
    n_ctx = len(tiny_lm._encode(context))
    hf = AutoModelForCausalLM.from_pretrained(str(tiny_llama.hf_dir), dtype=torch.float32).eval()
    with torch.no_grad():
        logprobs = torch.log_softmax(hf(torch.tensor([ids])).logits[0].float(), dim=-1).numpy()
    expected = sum(logprobs[i - 1, ids[i]] for i in range(n_ctx, len(ids)))
    assert total == pytest.approx(expected, abs=1e-3)
    assert greedy == all(int(logprobs[i - 1].argmax()) == ids[i] for i in range(n_ctx, len(ids)))


def test_one_pass_scoring_matches_prefill_and_decode(tiny_lm, monkeypatch):
    requests = [_Request("The river", " ran dry"), _Request("Cows give us", " milk")]
    one_pass = tiny_lm.loglikelihood(requests)

    def no_score(tokens, last):
        raise AssertionError("score() called on an adapter whose supports_score is False")

    monkeypatch.setattr(tiny_lm.adapter, "supports_score", False)  # the capability flag decides, not an exception
    monkeypatch.setattr(tiny_lm.adapter, "score", no_score)
    stepwise = tiny_lm.loglikelihood(requests)
    assert np.allclose([t for t, _ in one_pass], [t for t, _ in stepwise], atol=1e-3)
    assert [g for _, g in one_pass] == [g for _, g in stepwise]


def test_generate_until_decodes_greedily_and_stops_at_the_stop_string(tiny_lm):
    (free,) = tiny_lm.generate_until([_Request("The river", {"max_gen_toks": 12, "until": []})])
    ids = tiny_lm._encode("The river")
    expected, logits = [], tiny_lm.adapter.prefill(ids)
    for _ in range(12):
        token = int(np.argmax(logits))
        if token in tiny_lm.eos:
            break
        expected.append(token)
        logits = tiny_lm.adapter.decode(token)
    assert free == tiny_lm.tokenizer.decode(expected)
    stop = free.strip()[:2]
    (cut,) = tiny_lm.generate_until([_Request("The river", {"max_gen_toks": 12, "until": [stop]})])
    assert stop not in cut and free.startswith(cut)


ACCURACY = """
model: tiny-llama
generation: {max_new_tokens: 4}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}
accuracy: {tasks: [harness_cloze, harness_choice], limit: 12, non_inferiority: {harness_choice: 0.9}}
sweep:
  adapter: [hf]
include:
  - {adapter: openvino, device: CPU, quantization: int8_sym}
"""


@pytest.fixture(scope="module")
def accuracy_records(tmp_path_factory, cache_dir):
    loaded = planning.loads(ACCURACY, "<accuracy>", "accuracy")
    out = tmp_path_factory.mktemp("accuracy")
    runner = Runner(RunSettings(results_dir=out, cache_dir=cache_dir, reference_dir=out / "references", energy=False))
    return out, {point.adapter: runner.run_point(loaded, point) for point in expand(loaded)}


def test_points_record_accuracy_with_the_delta_to_the_reference(accuracy_records):
    _, records = accuracy_records
    hf, ov = records["hf"], records["openvino"]
    assert hf.status == ov.status == "ok", (hf.reason, ov.reason)
    for record in (hf, ov):
        tasks = record.accuracy.tasks
        assert set(tasks) == {"harness_cloze", "harness_choice"}
        assert tasks["harness_choice"]["items"] == 12 and 0 <= tasks["harness_choice"]["acc"] <= 1
        assert {"acc", "acc_stderr", "perplexity"} <= set(tasks["harness_cloze"])
        assert record.accuracy.reference == hf.accuracy.reference
    # the hf bf16 point runs the reference's own engine and precision: no difference at all
    assert all(d == 0 for task in hf.accuracy.delta.values() for d in task.values())
    ov_delta = ov.accuracy.delta["harness_cloze"]["perplexity"]
    expected = ov.accuracy.tasks["harness_cloze"]["perplexity"] - ov.accuracy.reference["harness_cloze"]["perplexity"]
    assert ov_delta == pytest.approx(expected) and ov_delta != 0  # int8 weights move the perplexity


def test_points_pair_their_per_item_outcomes_with_the_references(accuracy_records):
    _, records = accuracy_records
    hf, ov = records["hf"], records["openvino"]
    for record in (hf, ov):
        part = record.accuracy
        assert part.reference_outcomes == hf.accuracy.reference_outcomes and not part.unpaired
        for task in ("harness_cloze", "harness_choice"):
            assert part.outcomes[task].doc_ids == list(range(12))
            for metric, paired in part.paired[task].items():
                assert paired.items == 12 and paired.delta == pytest.approx(part.delta[task][metric])
                assert paired.low <= paired.delta <= paired.high and 0 <= paired.p_value <= 1
                assert (paired.margin is not None) == (task == "harness_choice")
        assert part.paired["harness_choice"]["acc"].test == "mcnemar"
        assert part.paired["harness_cloze"]["perplexity"].test == "paired bootstrap"
        for task, metrics in part.paired.items():  # beside McNemar: the share of items whose 0/1 outcome changed
            for metric, paired in metrics.items():
                if paired.test != "mcnemar":
                    assert paired.flips is None and paired.flip_rate is None
                    continue
                mine, theirs = part.outcomes[task].values[metric], part.reference_outcomes[task].values[metric]
                changed = sum(a != b for a, b in zip(mine, theirs))
                assert (paired.flips, paired.flip_rate) == (changed, pytest.approx(changed / 12))
        assert part.verdict == (
            "pass" if all(d.non_inferior for d in part.paired["harness_choice"].values()) else "fail"
        )
    # the hf bf16 point: the same outcomes item by item, so no evidence of a difference and non-inferior
    assert hf.accuracy.outcomes == hf.accuracy.reference_outcomes
    assert hf.accuracy.paired["harness_choice"]["acc"].flip_rate == 0
    assert all(d.p_value == 1 and d.low == d.high == 0 for task in hf.accuracy.paired.values() for d in task.values())
    assert hf.accuracy.verdict == "pass"
    assert (
        ov.accuracy.outcomes["harness_cloze"].values["perplexity"]
        != hf.accuracy.outcomes["harness_cloze"].values["perplexity"]
    )


def test_the_reference_is_computed_once_and_reused(accuracy_records):
    out, _ = accuracy_records
    stored = list((out / "references").glob("accuracy-*.json"))
    assert len(stored) == 1
    data = json.loads(stored[0].read_text())
    assert data["key"]["limit"] == 12
    assert data["outcomes"]["harness_choice"]["values"]["acc"] == [
        int(v) for v in data["outcomes"]["harness_choice"]["values"]["acc"]
    ]


def test_report_and_frame_show_accuracy(accuracy_records, tmp_path):
    out, _ = accuracy_records
    from harness.records import store

    df = store.load(out)
    assert {
        "accuracy.harness_choice.acc",
        "accuracy.harness_choice.acc.delta",
        "accuracy.harness_cloze.perplexity.stderr",
        "accuracy.harness_choice.acc.flip_rate",
    } <= set(df.columns)
    assert "accuracy.harness_cloze.perplexity.flip_rate" not in df.columns  # log-likelihoods flip no outcome
    written = build.build([out], tmp_path / "report")
    table = (tmp_path / "report" / "accuracy.csv").read_text()
    assert "harness_choice,acc," in table and "harness_cloze,perplexity," in table
    import pandas as pd

    frame = pd.read_csv(tmp_path / "report" / "accuracy.csv")
    assert {"delta_low", "delta_high", "p_value", "test", "non_inferior"} <= set(frame.columns)
    assert list(frame.columns)[list(frame.columns).index("p_value") + 1] == "flip_rate"  # beside McNemar's p
    choice = frame[(frame["task"] == "harness_choice") & (frame["metric"] == "acc")]
    assert set(choice["test"]) == {"mcnemar"} and choice["p_value"].between(0, 1).all()
    assert choice["flip_rate"].between(0, 1).all() and (choice["flips"] - choice["flip_rate"] * 12).abs().lt(1e-9).all()
    assert choice["non_inferior"].str.fullmatch(r"(pass|fail) \(keep 90 %\)").all()
    cloze = frame[(frame["task"] == "harness_cloze") & (frame["metric"] == "perplexity")]
    assert not cloze["higher_is_better"].any() and cloze["non_inferior"].isna().all()
    assert "accuracy.png" in {p.name for p in written.plots}
    assert "Task accuracy" in written.html.read_text()


def test_an_accuracy_section_without_tasks_is_an_error():
    with pytest.raises(ScenarioErrors, match="accuracy.tasks"):
        planning.loads(ACCURACY.replace("tasks: [harness_cloze, harness_choice], ", "tasks: [], "), "<bad>")


def _offline_env() -> dict:
    return {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}


@pytest.mark.parametrize("command", [["lm_eval"], ["harness", "lm-eval"]], ids=["lm_eval", "harness-lm-eval"])
def test_lm_eval_command_line_runs_a_shipped_task_against_the_hf_adapter(command, cache_dir, tmp_path):
    args = [
        str(BIN / command[0]),
        *command[1:],
        "--model",
        "harness",
        "--model_args",
        f"model=tiny-llama,adapter=hf,dtype=fp32,cache_dir={cache_dir}",
        "--tasks",
        "harness_choice",
        "--limit",
        "6",
        "--output_path",
        str(tmp_path),
    ]
    if command == ["lm_eval"]:
        args += ["--include_path", str(evaluate.TASKS_DIR)]
    else:  # lm-eval's own device and batch size are ignored: the point's axes decide (no CUDA here to run on)
        args += ["--device", "cuda:0", "--batch_size", "4"]
    done = subprocess.run(args, capture_output=True, text=True, env=_offline_env(), timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "harness_choice" in done.stdout and "acc" in done.stdout
    written = list(tmp_path.rglob("results_*.json"))
    assert written and json.loads(written[0].read_text())["results"]["harness_choice"]["acc,none"] >= 0


def test_without_lm_eval_the_point_still_runs_and_says_why(cache_dir, tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "lm_eval" else real(name, *a))
    loaded = planning.loads(
        ACCURACY.replace("include:\n  - {adapter: openvino, device: CPU, quantization: int8_sym}\n", ""),
        "<no-lm-eval>",
        "no_lm_eval",
    )
    (point,) = expand(loaded)
    record = Runner(RunSettings(results_dir=tmp_path, cache_dir=cache_dir, energy=False)).run_point(loaded, point)
    assert record.status == "ok" and record.metrics["tpot_ms"] > 0
    assert record.accuracy.model_dump(exclude_none=True) == {
        "skipped": "lm-eval is not installed: pip install -e '.[accuracy]'"
    }
    assert not list(tmp_path.rglob("accuracy-*.json"))  # no reference attempted either


def test_an_unknown_task_name_says_what_exists(tiny_lm):
    with pytest.raises(ValueError, match=r"'harness_clozee' unknown: not shipped \(harness_choice, harness_cloze\)"):
        evaluate.evaluate(tiny_lm, ["harness_clozee"], 5, 0)


def test_lm_evals_task_index_is_built_once_per_process():
    """A run reads lm-eval's whole task index twice (the unknown-task check before any point, then the point's
    evaluation) and it takes seconds to build: one manager serves both. Shipped tasks alone need no index."""
    full = evaluate.task_manager(["harness_clozee"])
    assert evaluate.task_manager(["hellaswag", "harness_cloze"]) is full and "hellaswag" in full.all_tasks
    shipped = evaluate.task_manager(["harness_cloze"])
    assert shipped is not full and evaluate.task_manager() is shipped
    assert set(shipped.all_tasks) == {"harness_choice", "harness_cloze"}


def test_an_empty_continuation_scores_zero(tiny_lm):
    assert tiny_lm.loglikelihood([_Request("The river", "")]) == [(0.0, True)]


def test_lm_eval_bootstraps_its_stderr_in_workers_that_are_not_forked_from_the_engine(tiny_lm, monkeypatch):
    """lm-eval bootstraps perplexity's stderr in a multiprocessing pool; forked from a process with torch's
    threads, a worker can hang forever on a lock (seen here). The pool must start its workers elsewhere."""
    import multiprocessing.pool

    methods = []
    original = multiprocessing.pool.Pool.__init__

    def recording(self, *args, **kwargs):
        context = kwargs.get("context") or (args[3] if len(args) > 3 else None)
        methods.append((context or multiprocessing.get_context()).get_start_method())
        original(self, *args, **kwargs)

    monkeypatch.setattr(multiprocessing.pool.Pool, "__init__", recording)
    found = evaluate.evaluate(tiny_lm, ["harness_cloze"], limit=4, num_fewshot=0, bootstrap_iters=20)
    assert "perplexity" in found.scores["harness_cloze"]
    assert methods and set(methods) == {"forkserver"}, methods
    assert multiprocessing.get_start_method(allow_none=True) != "forkserver"  # restored after the call
