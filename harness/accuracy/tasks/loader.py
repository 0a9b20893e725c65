"""Datasets of the shipped tasks, read from the JSONL files beside this module (lm-eval calls these
through ``custom_dataset: !function loader.<name>``; no download, no dataset hub)."""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _rows(name: str) -> list[dict]:
    with open(HERE / f"{name}.jsonl", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _dataset(rows: list[dict]):
    import datasets

    return datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})


def cloze(**_metadata):
    """Passages split before their last word: ``context`` and ``target`` (the word, with its space)."""
    rows = []
    for row in _rows("cloze"):
        context, word = row["text"].rsplit(" ", 1)
        rows.append({"text": row["text"], "context": context, "target": " " + word})
    return _dataset(rows)


def choice(**_metadata):
    return _dataset(_rows("choice"))
