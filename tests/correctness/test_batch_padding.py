"""Batch invariance that scales with length (#39): a batch of prompts of different lengths, left-padded as
transformers' ``generate`` pads a decoder-only batch, each row judged against the same prompt alone with a
limit relative to a floor (the point's KL floor, or the batch's own rounding without padding where that is
larger) instead of an absolute KL.
One row's padding left unmasked (``tests/faults.py``: ``LeakedPadding``) fails at a 6-token and at a
30-token prompt through ``harness verify``; the clean mixed-length batches pass."""

from __future__ import annotations

import re

import pytest

from harness.cli.app import main
from harness.correctness import batch
from harness.records.store import iter_records
from tests.conftest import registered
from tests.faults import LeakedPadding

SCENARIO = """
model: tiny-llama
generation: {max_new_tokens: 4}
measurement: {warmup_rounds: 0, min_rounds: 1, threads: 2}
gate: {k: 5, tokens: 8, prompts: 2}
sweep:
  adapter: [hf, hf-leaked-padding]
  batch_size: [2]
  prompt_len: [6, 30]
"""


@pytest.fixture
def leak():
    yield from registered((LeakedPadding,))


def test_every_row_but_the_first_is_padded():
    assert batch.lengths(6, 2) == [6, 3]
    assert batch.lengths(30, 4) == [30, 25, 20, 15]
    assert batch.lengths(2, 3) == [2, 2, 2]  # no shorter than 2 tokens


def test_one_rows_leaked_padding_fails_at_short_and_long_prompts(write_scenario, tmp_path, reference_dir, capsys, leak):
    path = write_scenario(SCENARIO)
    argv = ["verify", str(path), "--results", str(tmp_path / "results"), "--isolation", "none"]
    code = main([*argv, "--reference-dir", str(reference_dir)])
    out = capsys.readouterr().out
    found = {
        r.point["adapter"] + f"@{r.point['prompt_len']}": r.correctness.text_path.batch
        for _, r in iter_records(tmp_path / "results")
    }
    assert code == 1, out
    for length in (6, 30):
        clean, leaked = found[f"hf@{length}"], found[f"hf-leaked-padding@{length}"]
        assert clean.verdict == "pass" and clean.padding == "left", clean
        assert clean.lengths == batch.lengths(length, 2) and clean.lengths[1] < length  # a padded row
        assert clean.kl_ratio_max < batch.LIMIT_FACTOR, clean
        assert leaked.verdict == "fail" and leaked.failing_sequences == [1], leaked
        assert leaked.kl_ratio_max >= 3 * batch.LIMIT_FACTOR, leaked  # 3x past its line
        assert re.search(rf"^FAIL +scenario::hf-leaked-padding-\S*-prompt{length}-bs2: .*batch fail", out, re.M), out
        assert re.search(rf"^PASS +scenario::hf-cpu-\S*-prompt{length}-bs2: .*batch pass", out, re.M), out
        assert leaked.noise_floor == clean.noise_floor and clean.batch_floor is not None
        assert clean.kl_limit == batch.LIMIT_FACTOR * max(clean.noise_floor, clean.batch_floor)
