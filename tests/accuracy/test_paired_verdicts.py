"""Paired accuracy verdicts (issue #19): McNemar and the paired bootstrap on per-document outcomes,
non-inferiority margins, per-item outcomes from lm-eval's logged samples, and references stored before
outcomes were kept."""

from __future__ import annotations

import json
import re
import types

import numpy as np
import pytest

from harness.accuracy import paired as accuracy_paired
from harness.accuracy.evaluate import Evaluation
from harness.accuracy.paired import compare, paired_delta
from harness.errors import ScenarioErrors
from harness.records.accuracy import Accuracy, TaskOutcomes
from harness.records.record import Record
from harness.run import planning

RNG = np.random.default_rng(7)
REFERENCE_RIGHT = (RNG.random(200) < 0.8).astype(int)


def _worse(right: np.ndarray, lost: int) -> np.ndarray:
    """``right`` with the first ``lost`` correct answers turned wrong."""
    out = right.copy()
    out[np.flatnonzero(right)[:lost]] = 0
    return out


def test_a_clearly_worse_point_has_a_small_mcnemar_p_and_an_interval_below_zero():
    found = paired_delta(_worse(REFERENCE_RIGHT, 40), REFERENCE_RIGHT)
    assert found.test == "mcnemar" and found.items == 200
    assert found.delta == pytest.approx(-40 / 200)
    assert found.p_value < 1e-6
    assert found.low <= found.delta <= found.high < 0
    assert found.reference == pytest.approx(REFERENCE_RIGHT.mean())


def test_identical_outcomes_give_p_one_and_a_zero_delta():
    for values, aggregation, test in (
        (REFERENCE_RIGHT, "mean", "mcnemar"),
        (RNG.normal(-3, 1, 50), "perplexity", "paired bootstrap"),
    ):
        found = paired_delta(values, values, aggregation=aggregation)
        assert (found.test, found.delta, found.low, found.high, found.p_value) == (test, 0, 0, 0, 1)


def test_a_few_discordant_pairs_use_the_exact_test():
    point = _worse(REFERENCE_RIGHT, 3)  # 3 discordant pairs: exact binomial p = 2 * 0.5**3
    assert paired_delta(point, REFERENCE_RIGHT).p_value == pytest.approx(0.25)


def test_the_paired_test_sees_what_an_unpaired_one_cannot():
    """Items that flip both ways cancel out; a small consistent loss on the same items is detected,
    where comparing the two scores as independent proportions sees nothing."""
    from statsmodels.stats.proportion import proportions_ztest

    swapped = REFERENCE_RIGHT.copy()
    swapped[np.flatnonzero(REFERENCE_RIGHT == 1)[:10]] = 0
    swapped[np.flatnonzero(REFERENCE_RIGHT == 0)[:10]] = 1
    balanced = paired_delta(swapped, REFERENCE_RIGHT)
    assert balanced.delta == 0 and balanced.p_value == pytest.approx(1) and balanced.low < 0 < balanced.high
    point = _worse(REFERENCE_RIGHT, 12)
    small = paired_delta(point, REFERENCE_RIGHT)
    assert small.p_value < 0.01 and small.high < 0
    _, unpaired_p = proportions_ztest([point.sum(), REFERENCE_RIGHT.sum()], [200, 200])
    assert unpaired_p > 0.05


def test_the_flip_rate_counts_items_whose_outcome_changed_either_way_beside_mcnemar():
    """A delta of 0 with McNemar's p of 1 can hide items flipping both ways: the flip rate shows them."""
    swapped = REFERENCE_RIGHT.copy()
    swapped[np.flatnonzero(REFERENCE_RIGHT == 1)[:10]] = 0
    swapped[np.flatnonzero(REFERENCE_RIGHT == 0)[:10]] = 1
    balanced = paired_delta(swapped, REFERENCE_RIGHT)
    assert (balanced.delta, balanced.flips, balanced.flip_rate) == (0, 20, pytest.approx(20 / 200))
    worse = paired_delta(_worse(REFERENCE_RIGHT, 3), REFERENCE_RIGHT)
    assert (worse.flips, worse.flip_rate) == (3, pytest.approx(3 / 200))
    same = paired_delta(REFERENCE_RIGHT, REFERENCE_RIGHT)
    assert (same.flips, same.flip_rate) == (0, 0)
    values = RNG.normal(-3, 1, 50)  # log-likelihoods: no 0/1 outcome to flip
    assert paired_delta(values, values, aggregation="perplexity").flip_rate is None


def test_log_likelihood_metrics_use_the_paired_bootstrap():
    reference = RNG.normal(-3, 1, 200)
    point = reference - 0.3 + RNG.normal(0, 0.1, 200)  # every item a little less likely
    found = paired_delta(point, reference, aggregation="perplexity", higher_is_better=False)
    assert found.test == "paired bootstrap"
    expected = np.exp(-point.mean()) - np.exp(-reference.mean())
    assert found.delta == pytest.approx(expected) and 0 < found.low <= found.delta <= found.high
    assert found.p_value < 0.01
    again = paired_delta(point, reference, aggregation="perplexity", higher_is_better=False)
    assert again == found  # seeded: the same outcomes give the same interval and p-value


def test_weighted_aggregations_reproduce_lm_evals_own():
    from lm_eval.api import metrics

    ll, words = RNG.normal(-30, 5, 40), RNG.integers(5, 20, 40).astype(float)
    items = list(zip(ll, words))
    for name, lm_eval_fn in (
        ("weighted_perplexity", metrics.weighted_perplexity),
        ("bits_per_byte", metrics.bits_per_byte),
        ("perplexity", None),
        ("mean", None),
    ):
        ours = accuracy_paired.AGGREGATIONS[name](ll, words)
        reference = lm_eval_fn(items) if lm_eval_fn else getattr(metrics, name)(list(ll))
        assert ours == pytest.approx(reference)
    found = paired_delta(ll + 0.5, ll, words, "bits_per_byte", higher_is_better=False)
    assert found.delta < 0 and found.high < 0  # more likely text: fewer bits per byte


@pytest.mark.parametrize(
    "lost, margin, verdict", [(2, 0.9, True), (40, 0.9, False), (40, 0.6, True), (0, 1.0, True), (12, 0.85, True)]
)
def test_non_inferiority_judges_the_intervals_worse_end(lost, margin, verdict):
    found = paired_delta(_worse(REFERENCE_RIGHT, lost), REFERENCE_RIGHT, margin=margin)
    assert found.non_inferior is verdict
    assert found.margin == margin
    assert (found.low >= -(1 - margin) * found.reference) is verdict


def test_non_inferiority_for_a_lower_is_better_metric_looks_at_the_upper_end():
    reference = RNG.normal(-3, 1, 100)
    worse = paired_delta(reference - 0.3, reference, aggregation="perplexity", higher_is_better=False, margin=0.99)
    assert worse.non_inferior is False and worse.low > 0
    better = paired_delta(reference + 0.3, reference, aggregation="perplexity", higher_is_better=False, margin=0.99)
    assert better.non_inferior is True


def _outcomes(acc, ll=None) -> TaskOutcomes:
    values = {"acc": [int(v) for v in acc]}
    aggregation, better = {"acc": "mean"}, {"acc": True}
    if ll is not None:
        values["perplexity"], aggregation["perplexity"], better["perplexity"] = list(ll), "perplexity", False
    return TaskOutcomes(doc_ids=list(range(len(acc))), values=values, aggregation=aggregation, higher_is_better=better)


def _scores(acc, ll=None) -> dict:
    scores = {"acc": float(np.mean(acc)), "acc_stderr": 0.01, "items": len(acc)}
    if ll is not None:
        scores["perplexity"] = float(np.exp(-np.mean(ll)))
    return scores


def test_compare_pairs_every_metric_and_gives_the_verdict():
    ll = RNG.normal(-3, 1, 200)
    point, reference = _worse(REFERENCE_RIGHT, 40), REFERENCE_RIGHT
    found = compare(
        {"t": _scores(point, ll)},
        {"t": _outcomes(point, ll)},
        {"t": _scores(reference, ll)},
        {"t": _outcomes(reference, ll)},
        margins={"t": {"acc": 0.9}},
    )
    assert set(found.paired["t"]) == {"acc", "perplexity"} and not found.unpaired
    assert found.paired["t"]["acc"].test == "mcnemar" and found.paired["t"]["perplexity"].test == "paired bootstrap"
    assert found.paired["t"]["perplexity"].margin is None  # the margin names acc only
    assert found.verdict == "fail"
    kept = compare(
        {"t": _scores(reference)},
        {"t": _outcomes(reference)},
        {"t": _scores(reference)},
        {"t": _outcomes(reference)},
        margins={"t": 0.99},
    )
    assert kept.verdict == "pass"
    assert (
        compare(
            {"t": _scores(reference)},
            {"t": _outcomes(reference)},
            {"t": _scores(reference)},
            {"t": _outcomes(reference)},
        ).verdict
        is None
    )  # no margin, no verdict


def test_compare_pairs_documents_by_id_not_by_position():
    reference = _outcomes(REFERENCE_RIGHT)
    shuffled = np.random.default_rng(3).permutation(200)
    point = TaskOutcomes(
        doc_ids=[int(i) for i in shuffled],
        values={"acc": [int(REFERENCE_RIGHT[i]) for i in shuffled]},
        aggregation={"acc": "mean"},
    )
    found = compare({"t": _scores(REFERENCE_RIGHT)}, {"t": point}, {"t": _scores(REFERENCE_RIGHT)}, {"t": reference})
    assert found.paired["t"]["acc"].p_value == 1 and found.paired["t"]["acc"].delta == 0


def test_unpairable_metrics_say_why():
    right = REFERENCE_RIGHT
    bleu = TaskOutcomes(
        doc_ids=list(range(200)), values={"acc": list(map(int, right))}, aggregation={"acc": "mean", "bleu": "bleu"}
    )
    scores = {"t": {**_scores(right), "bleu": 0.3}, "group": {"acc": 0.5}}
    found = compare(
        scores, {"t": bleu}, scores, {"t": bleu}, margins={"t": {"acc": 0.9, "acc_norm": 0.9}, "group": 0.9}
    )
    assert "aggregation 'bleu' has no paired statistic" in found.unpaired["t"]["bleu"]
    assert "no per-document outcomes for group" in found.unpaired["group"]["acc"]
    assert "names t.acc_norm, which is not scored" in found.unpaired["t"]["acc_norm"]
    assert found.paired["t"]["acc"].non_inferior is True
    assert found.verdict is None  # margins that could not be judged: no pass


def test_a_weighted_aggregation_without_weights_is_not_paired():
    ll = RNG.normal(-3, 1, 20)
    side = TaskOutcomes(
        doc_ids=list(range(20)), values={"bits_per_byte": list(ll)}, aggregation={"bits_per_byte": "bits_per_byte"}
    )
    scores = {"t": {"bits_per_byte": 1.0}}
    found = compare(scores, {"t": side}, scores, {"t": side})
    assert "needs per-item weights" in found.unpaired["t"]["bits_per_byte"]


def test_outcomes_need_one_value_per_document(tmp_path):
    from harness.io import sealed

    with pytest.raises(ValueError, match="values.acc: 2 items for 3 doc_ids"):
        TaskOutcomes(doc_ids=[0, 1, 2], values={"acc": [1, 0]})
    from harness.accuracy import reference_scores as accuracy_reference

    broken = tmp_path / "accuracy-0.json"
    stored = {"scores": {}, "outcomes": {"t": {"doc_ids": [0], "values": {"acc": [1, 1]}}}}
    broken.write_text(json.dumps(sealed.seal(stored)))  # its digest holds; its outcomes do not
    with pytest.raises(ValueError, match=r"accuracy-0.json: outcomes: t: values.acc: 2 items for 1 doc_ids"):
        accuracy_reference._read(broken)


def test_outcomes_that_do_not_reproduce_the_score_are_not_paired():
    scores = {"t": {**_scores(REFERENCE_RIGHT), "acc": 0.5}}
    found = compare(
        scores, {"t": _outcomes(REFERENCE_RIGHT)}, {"t": _scores(REFERENCE_RIGHT)}, {"t": _outcomes(REFERENCE_RIGHT)}
    )
    assert "do not reproduce lm-eval's score 0.5" in found.unpaired["t"]["acc"]


def test_outcomes_come_from_lm_evals_logged_samples_in_doc_order():
    from harness.accuracy.outcomes import outcomes

    samples = [
        {
            "doc_id": doc,
            "filter": "none",
            "metrics": ["acc", "perplexity", "word_perplexity", "f1"],
            "acc": doc % 2 == 0,
            "perplexity": -float(doc),
            "word_perplexity": (-float(doc), 3),
            "f1": ("gold", "pred"),
        }
        for doc in (2, 0, 1)
    ]
    config = {
        "metric_list": [{"metric": "acc", "aggregation": "mean"}, {"metric": "perplexity", "aggregation": "perplexity"}]
    }
    found = outcomes(
        {
            "samples": {"t": samples},
            "configs": {"t": config},
            "higher_is_better": {"t": {"acc": True, "perplexity": False}},
        }
    )["t"]
    assert found.doc_ids == [0, 1, 2]
    assert found.values == {"acc": [1, 0, 1], "perplexity": [0, -1, -2], "word_perplexity": [0, -1, -2]}
    assert found.weights == {"word_perplexity": [3, 3, 3]}
    assert found.aggregation == {
        "acc": "mean",
        "perplexity": "perplexity",
        "word_perplexity": "weighted_perplexity",
        "f1": "f1",
    }  # the last two: lm-eval's defaults for those metrics
    assert found.higher_is_better == {"acc": True, "perplexity": False}
    assert json.dumps(found.model_dump(mode="json")["values"]["acc"]) == "[1, 0, 1]"  # 0/1 stored compactly


def test_an_accuracy_reference_is_sealed_and_one_without_outcomes_says_why(tmp_path):
    from harness.accuracy import reference_scores as accuracy_reference
    from harness.errors import StoredContentError
    from harness.io import sealed

    model = types.SimpleNamespace(checksum="abc", name="m")
    evaluation = Evaluation({"t": _scores(REFERENCE_RIGHT)}, {"t": _outcomes(REFERENCE_RIGHT)})
    fresh = accuracy_reference.reference(model, ["t"], 10, 0, "bf16", None, tmp_path, compute=lambda: evaluation)
    assert fresh.outcomes == evaluation.outcomes and fresh.why_unpaired is None
    reused = accuracy_reference.reference(model, ["t"], 10, 0, "bf16", None, tmp_path, compute=lambda: 1 / 0)
    assert reused == fresh  # read back from the file, outcomes included
    stored = json.loads(fresh.path.read_text())
    stored["scores"]["t"]["acc"] = 1.0  # a better reference, by hand
    fresh.path.write_text(json.dumps(stored))
    with pytest.raises(
        StoredContentError,
        match=re.escape(str(fresh.path)) + r": content differs .* in scores\.t .*--refresh-reference",
    ):
        accuracy_reference.reference(model, ["t"], 10, 0, "bf16", None, tmp_path, compute=lambda: 1 / 0)
    del stored["content_sha256"]  # as the harness wrote it before references were sealed
    fresh.path.write_text(json.dumps(stored))
    with pytest.raises(StoredContentError, match="stored without a content digest"):
        accuracy_reference.reference(model, ["t"], 10, 0, "bf16", None, tmp_path, compute=lambda: 1 / 0)
    stored["scores"] = fresh.scores
    del stored["outcomes"]  # a sealed reference without per-item outcomes
    fresh.path.write_text(json.dumps(sealed.seal(stored)))
    old = accuracy_reference.reference(model, ["t"], 10, 0, "bf16", None, tmp_path, compute=lambda: 1 / 0)
    assert old.outcomes is None
    assert str(fresh.path) in old.why_unpaired and "predates per-item outcomes" in old.why_unpaired
    found = compare(
        {"t": _scores(REFERENCE_RIGHT)},
        {"t": _outcomes(REFERENCE_RIGHT)},
        old.scores,
        old.outcomes,
        old.why_unpaired,
        margins={"t": 0.99},
    )
    assert found.paired == {} and found.unpaired == {"t": {"acc": old.why_unpaired}} and found.verdict is None


def test_a_record_with_paired_deltas_round_trips():
    found = compare(
        {"t": _scores(REFERENCE_RIGHT)},
        {"t": _outcomes(REFERENCE_RIGHT)},
        {"t": _scores(REFERENCE_RIGHT)},
        {"t": _outcomes(REFERENCE_RIGHT)},
        margins={"t": 0.99},
    )
    part = Accuracy(
        tasks={"t": _scores(REFERENCE_RIGHT)},
        outcomes={"t": _outcomes(REFERENCE_RIGHT)},
        paired=found.paired,
        verdict=found.verdict,
    )
    record = Record(scenario="s", point_id="p", point={}, status="ok", accuracy=part)
    back = Record.from_dict(json.loads(json.dumps(record.model_dump(mode="json"))))
    assert back.accuracy == part
    old = Record.from_dict({**record.model_dump(mode="json"), "accuracy": {"tasks": {"t": {"acc": 0.5}}}})
    assert old.accuracy.paired is None and old.accuracy.outcomes is None  # records written before still load
    with pytest.raises(ValueError, match="accuracy.paired.t.acc.test"):
        Record.from_dict(
            {
                **record.model_dump(mode="json"),
                "accuracy": {"paired": {"t": {"acc": {**found.paired["t"]["acc"].model_dump(), "test": "t-test"}}}},
            }
        )


SCENARIO = """
model: tiny-llama
accuracy: {tasks: [harness_cloze, harness_choice], limit: 12, non_inferiority: %s}
sweep: {adapter: [hf]}
"""


def test_scenario_margins_per_task_or_per_metric():
    spec = planning.loads(SCENARIO % "{harness_choice: 0.99, harness_cloze: {acc: 0.95}}", "<ok>").accuracy
    assert spec.non_inferiority == {"harness_choice": 0.99, "harness_cloze": {"acc": 0.95}}


@pytest.mark.parametrize(
    "value, message",
    [
        ("{harness_choice: 1.5}", r"accuracy.non_inferiority: harness_choice: expected the fraction .* got 1.5"),
        ("{harness_choice: 0}", r"accuracy.non_inferiority: harness_choice: expected .*0 < fraction <= 1.* got 0"),
        ("{harness_cloze: {acc: high}}", r"accuracy.non_inferiority: harness_cloze.acc: expected .* got 'high'"),
        ("{harness_choice: true}", r"harness_choice: expected .* got True"),
        (
            "{arc_easy: 0.99}",
            r"non_inferiority names 'arc_easy', not in accuracy.tasks \(harness_cloze, harness_choice\)",
        ),
        ("0.99", r"accuracy.non_inferiority: expected a mapping of task to fraction"),
    ],
)
def test_invalid_margins_name_the_field(value, message):
    with pytest.raises(ScenarioErrors, match=message):
        planning.loads(SCENARIO % value, "<bad>")


def test_margins_need_the_reference():
    with pytest.raises(ScenarioErrors, match="non_inferiority needs reference: true"):
        planning.loads(
            SCENARIO.replace("limit: 12,", "limit: 12, reference: false,") % "{harness_choice: 0.9}", "<bad>"
        )


def test_a_failed_non_inferiority_margin_fails_the_point():
    # `harness run` exits 1 and the pytest item fails on it, as on a failed correctness gate.
    from harness.records.accuracy import Accuracy, PairedDelta
    from harness.records.record import Record
    from harness.records.verdict import failure_reasons

    delta = PairedDelta(
        delta=-0.2,
        low=-0.3,
        high=-0.1,
        p_value=0.001,
        test="mcnemar",
        items=60,
        reference=0.7,
        margin=0.99,
        non_inferior=False,
    )
    record = Record(
        scenario="s",
        point_id="p",
        point={},
        status="ok",
        accuracy=Accuracy(paired={"harness_choice": {"acc": delta}}, verdict="fail"),
    )
    assert record.verdict_failed
    assert "harness_choice.acc: -0.2 [-0.3, -0.1], margin 0.99" in "\n".join(failure_reasons(record))
    flipped = delta.model_copy(update={"flips": 15, "flip_rate": 0.25})  # printed beside McNemar's p
    record.accuracy = Accuracy(paired={"harness_choice": {"acc": flipped}}, verdict="fail")
    assert "margin 0.99, McNemar p=0.001, flip rate 25.0 % (15 of 60 items)" in "\n".join(failure_reasons(record))
    record.accuracy = Accuracy(
        paired={"harness_choice": {"acc": delta.model_copy(update={"non_inferior": True})}}, verdict="pass"
    )
    assert not record.verdict_failed
