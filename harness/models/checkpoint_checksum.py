"""A checkpoint directory's identity: the sha256 over everything that changes its behaviour."""

from __future__ import annotations

import hashlib
from pathlib import Path

from harness.io import file_sha256

PROVENANCE = "harness-model.json"  # what the harness writes into a checkpoint it built: not part of its identity

# What changes a checkpoint's behaviour: config, generation config, weights and every tokenizer file
# (tokenizer.json, tokenizer_config.json, special_tokens_map.json, added_tokens.json, SentencePiece .model,
# tiktoken, a BPE's vocab.txt/merges.txt) and the chat template, which transformers 5 saves apart, as
# chat_template.jinja (named ones under additional_chat_templates/). The IR, GGUF export and tokenizer
# caches and the stored references are keyed by it: a template edited in place must not reuse them.
_CHECKSUM_SUFFIXES = (".json", ".safetensors", ".bin", ".model", ".jinja", ".tiktoken")
_CHECKSUM_NAMES = ("vocab.txt", "merges.txt")
_TEMPLATES_DIR = "additional_chat_templates"


def dir_checksum(path: Path) -> str:
    """sha256 over the names and contents of a checkpoint's config, tokenizer, chat template and weight files."""
    files = [p for p in path.iterdir() if p.suffix in _CHECKSUM_SUFFIXES or p.name in _CHECKSUM_NAMES]
    if (path / _TEMPLATES_DIR).is_dir():
        files += [p for p in (path / _TEMPLATES_DIR).iterdir() if p.suffix == ".jinja"]
    digest = hashlib.sha256()
    for file in sorted(files):
        if file.name == PROVENANCE or not file.is_file():
            continue
        digest.update(file.relative_to(path).as_posix().encode())
        digest.update(file_sha256(file).encode())
    return digest.hexdigest()
