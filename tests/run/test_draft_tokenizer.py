"""A draft model must share the target's tokenizer: a draft with another vocabulary fails its point in one line
before anything loads, naming the draft and how many entries differ (issue #42)."""

from __future__ import annotations

import json
import shutil

from harness import cli
from harness.records import store


def test_a_draft_with_another_vocabulary_is_refused_in_one_line(write_scenario, tmp_path, tiny_llama):
    draft = tmp_path / "other-vocab"
    shutil.copytree(tiny_llama.hf_dir, draft, ignore=shutil.ignore_patterns("harness-*"))
    tokenizer = json.loads((draft / "tokenizer.json").read_text())
    vocab = tokenizer["model"]["vocab"]
    first, second = [token for token, index in vocab.items() if index in (10, 11)]
    vocab[first], vocab[second] = vocab[second], vocab[first]  # two entries swap ids: a different vocabulary
    (draft / "tokenizer.json").write_text(json.dumps(tokenizer))
    path = write_scenario(
        "model: tiny-llama\n"
        "generation: {max_new_tokens: 4}\n"
        "measurement: {warmup_rounds: 0, min_rounds: 1}\n"
        f"sweep: {{adapter: [hf], speculative: [{{draft: '{draft}', tokens: 2}}]}}\n"
    )
    assert cli.main(["run", str(path), "--results", str(tmp_path / "results"), "--no-progress"]) == 1
    ((_, record),) = store.iter_records(tmp_path / "results" / "scenario")
    assert record.status == "failed" and record.failure is None  # a refusal, not a crash: no traceback
    assert "\n" not in record.reason
    assert f"the draft {draft} does not share the target's tokenizer" in record.reason
    assert "2 differ" in record.reason and "sweep.speculative" in record.reason
