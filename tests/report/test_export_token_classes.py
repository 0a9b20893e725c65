"""The gate's token classes, flip rate and top-k tie margin reach the exports: ``harness export`` writes a
``class`` row per token class and a ``flips`` row per point (jsonl and parquet), and the report's flat
``points.csv`` carries ``gate_flip_rate``, ``gate_class_<class>_kl_ratio`` / ``_top1`` and ``gate_tie_margin``."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.cli.app import main
from harness.correctness import class_check, ties
from harness.records import store
from tests.correctness.test_token_classes import SETTINGS, TOKENIZER
from tests.correctness.test_token_classes import gate as classed_gate
from tests.records import record


def classed_record():
    """A record whose gate holds token classes: 16 digit positions at 20x their floor with every top-1 changed
    (decided: the reference leads by 1 nat), 16 word positions at the floor."""
    result, reference = classed_gate(digit_kl=0.02, digit_top1=0)
    result.classes = class_check.measure(result, reference, TOKENIZER, SETTINGS)
    result.tie_margin = ties.TIE_MARGIN
    result.prompts[0].topk_ties = 2
    r = record("hf-cpu-bf16", scenario="classes", adapter="hf", device="cpu", tpot_ms=10.0)
    r.correctness = result
    return r


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_export_writes_a_row_per_token_class_and_the_flip_rate(tmp_path, fmt):
    r = classed_record()
    store.write(r, tmp_path / "results")
    out = tmp_path / f"rows.{fmt}"
    assert main(["export", str(tmp_path / "results"), "--format", fmt, "-o", str(out)]) == 0
    table = pd.read_json(out, lines=True) if fmt == "jsonl" else pd.read_parquet(out)
    classes = table[table.kind == "class"].set_index("token_class")
    assert sorted(classes.index) == ["digits", "word-start"]
    digits = classes.loc["digits"]
    assert digits.kl_ratio == pytest.approx(20) and digits.kl == pytest.approx(0.02) and digits.positions == 16
    assert (digits.top1_agreement, digits.flips, digits.decided, digits.flip_rate) == (0, 16, 16, 1)
    assert digits.verdict == "drift" and classes.loc["word-start"].verdict == "pass"
    assert classes.loc["word-start"].top1_agreement == 1 and classes.loc["word-start"].flip_rate == 0
    (flips,) = table[table.kind == "flips"].itertuples()
    assert (flips.flips, flips.decided, flips.positions, flips.flip_rate) == (16, 32, 32, 0.5)
    assert flips.tie_margin == ties.TIE_MARGIN and flips.verdict == "drift" and flips.point == r.point_id
    expected = r.correctness.classes.flips.expected_rate
    assert flips.expected_flip_rate == pytest.approx(expected) and 0 <= expected < 0.01


def test_points_csv_carries_the_flip_rate_the_classes_and_the_tie_margin(tmp_path):
    store.write(classed_record(), tmp_path / "results")
    assert main(["report", str(tmp_path / "results"), "-o", str(tmp_path / "report")]) == 0
    row = pd.read_csv(tmp_path / "report" / "points.csv").set_index("point_id").loc["hf-cpu-bf16"]
    assert (row.gate_flip_rate, row.gate_flips, row.gate_flip_decided, row.gate_flip_verdict) == (0.5, 16, 32, "drift")
    assert row.gate_class_digits_kl_ratio == pytest.approx(20) and row.gate_class_digits_top1 == 0
    assert row.gate_class_word_start_kl_ratio == pytest.approx(1) and row.gate_class_word_start_top1 == 1
    assert (row.gate_tie_margin, row.gate_topk_ties) == (0.1, 2) and 0 <= row.gate_flip_expected < 0.01
