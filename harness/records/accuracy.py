"""Record parts of task accuracy: scores, per-item outcomes and paired verdicts against the reference."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field, model_validator

from harness.records.base import Number, Part


class TaskOutcomes(Part):
    """One task's per-document outcomes (lm-eval's logged samples), in ``doc_ids`` order: 0/1 for
    accuracy-type metrics, the log-likelihood for perplexity-type ones. ``weights`` holds the per-document
    denominator (words, bytes) of weighted aggregations. Metrics whose per-item values are not numbers
    (f1, bleu) appear in ``aggregation`` only."""

    doc_ids: list[int]
    values: dict[str, list[Number]] = Field(default_factory=dict)
    weights: dict[str, list[Number]] = Field(default_factory=dict)
    aggregation: dict[str, str] = Field(default_factory=dict)  # lm-eval's: mean | perplexity | bits_per_byte ...
    higher_is_better: dict[str, bool] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_per_document(self):
        for kind, columns in (("values", self.values), ("weights", self.weights)):
            for metric, column in columns.items():
                if len(column) != len(self.doc_ids):
                    raise ValueError(f"{kind}.{metric}: {len(column)} items for {len(self.doc_ids)} doc_ids")
        return self


class PairedDelta(Part):
    """Point minus reference on the documents both scored, from their paired per-item outcomes.
    ``test``: McNemar's (exact when few pairs disagree) for 0/1 outcomes; otherwise a paired sign-flip
    permutation test gives ``p_value``. ``low``/``high``: the 95 % paired-bootstrap interval of the delta.
    ``flips`` / ``flip_rate`` (0/1 outcomes only): the items whose outcome differs between the sides (McNemar's
    discordant pairs, either way), and their share of ``items``: a delta of 0 can hide many flips both ways.
    With a non-inferiority ``margin`` (the fraction of the reference's score to keep), ``non_inferior``
    says whether the interval's worse end stays within (1 - margin) x |reference|."""

    delta: Number
    low: Number
    high: Number
    p_value: Number
    test: Literal["mcnemar", "paired bootstrap"]
    items: int
    reference: Number  # the reference's score on the paired documents
    margin: Optional[Number] = None
    non_inferior: Optional[bool] = None
    flips: Optional[int] = None  # 0/1 outcomes: items right on one side and wrong on the other (None: other values)
    flip_rate: Optional[Number] = None  # flips / items

    def flipped(self) -> str:
        """``, McNemar p=0.031, flip rate 8.3 % (5 of 60 items)`` for 0/1 outcomes; empty for other values."""
        if self.flip_rate is None:
            return ""
        rate = f"{100 * self.flip_rate:.1f} % ({self.flips} of {self.items} items)"
        return f", McNemar p={self.p_value:.2g}, flip rate {rate}"


class Accuracy(Part):
    """lm-eval task scores: ``{task: {metric: value, metric_stderr: value, items: n}}``, the HF
    reference's on the same items, and point minus reference. ``outcomes`` / ``reference_outcomes``:
    both sides' per-document outcomes; ``paired``: the delta's test and interval per task and metric;
    ``unpaired``: why a metric has none; ``verdict``: non-inferiority over the metrics given a margin
    (None when no margin is set or one could not be judged)."""

    tasks: Optional[dict[str, dict[str, Number]]] = None
    reference: Optional[dict[str, dict[str, Number]]] = None
    delta: Optional[dict[str, dict[str, Number]]] = None
    limit: Optional[Number] = None
    num_fewshot: Optional[int] = None
    skipped: Optional[str] = None
    outcomes: Optional[dict[str, TaskOutcomes]] = None
    reference_outcomes: Optional[dict[str, TaskOutcomes]] = None
    paired: Optional[dict[str, dict[str, PairedDelta]]] = None
    unpaired: Optional[dict[str, dict[str, str]]] = None
    verdict: Optional[Literal["pass", "fail"]] = None

    def failed_margins(self) -> list[str]:
        """``task.metric: delta [low, high], margin m`` for every metric below its non-inferiority margin, with
        McNemar's p and the flip rate for 0/1 outcomes."""
        return [
            f"{task}.{metric}: {d.delta:+.3g} [{d.low:.3g}, {d.high:.3g}], margin {d.margin:g}{d.flipped()}"
            for task, per_metric in (self.paired or {}).items()
            for metric, d in per_metric.items()
            if d.non_inferior is False
        ]
