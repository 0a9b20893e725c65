"""What ``harness check`` can say about an OpenVINO point's tokenizer before any point runs: whether
openvino_tokenizers converts the tokenizer the run would give it.

The answer is the converter's own: the run's tokenizer (the checkpoint's, or the one the GGUF's metadata
makes, as the converted checkpoint holds it) is converted in a subprocess, without the model's weights; a
tokenizer's conversion takes well under a second beside the imports' seconds, and the answer is kept in the
cache per tokenizer and converter version. Run as a module, this is that subprocess.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from harness.scenario.schema import ModelSpec

# the checkpoint files a transformers tokenizer is read from: what the kept answer is keyed on
_TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "tokenizer.model",
    "vocab.json",
    "merges.txt",
    "added_tokens.json",
    "chat_template.jinja",
)
_TIMEOUT_S = 600


def _source(spec: ModelSpec) -> Optional[tuple[Path, str]]:
    """(the file or folder the tokenizer comes from, a digest of what it is read from) for a source whose
    tokenizer the run would convert; None for the built-in models (their tokenizers convert: the tests run
    them on OpenVINO) and where the scenario's IR brings its own tokenizer IRs."""
    from harness.adapters.openvino.ir_export import TOKENIZER_FILES
    from harness.models.builtin import DEFAULT_MODEL, TINY_PREFIX

    given = spec.artefacts.openvino
    if given is not None and all((Path(given).expanduser() / name).is_file() for name in TOKENIZER_FILES):
        return None
    if spec.source == DEFAULT_MODEL or spec.source.startswith(TINY_PREFIX):
        return None
    path = Path(spec.source).expanduser().resolve()
    digest = hashlib.sha256()
    if path.is_dir():
        for name in _TOKENIZER_FILES:
            if (path / name).is_file():
                digest.update(name.encode() + b"\0" + (path / name).read_bytes())
    elif path.suffix == ".gguf" and path.is_file():  # its metadata is the tokenizer: the file's version keys it
        stat = path.stat()
        digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    else:
        return None
    return path, digest.hexdigest()[:16]


def reason(spec: ModelSpec, cache_dir: Optional[Path] = None) -> Optional[str]:
    """The run's one line for a tokenizer openvino_tokenizers will not convert (the step, the file, the
    converter's own words), or None: it converts, or the answer could not be had here (the extra missing,
    the probe crashed or timed out: the run finds out)."""
    if not all(find_spec(m) for m in ("openvino_tokenizers", "transformers")):
        return None
    source = _source(spec)
    if source is None:
        return None
    import openvino_tokenizers

    from harness.io import write_json_atomic
    from harness.models import sources

    version = openvino_tokenizers.__version__.split("-")[0]
    kept = sources.cache_dir(cache_dir) / "openvino" / "tokenizer-checks" / f"{source[1]}-{version}.json"
    if kept.is_file():
        return json.loads(kept.read_text(encoding="utf-8"))["failure"]
    command = [sys.executable, "-m", __name__, str(source[0])]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return None
    failure = json.loads(lines[-1])["failure"]
    kept.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(kept, {"failure": failure})
    return failure


def _probe(source: Path) -> Optional[str]:
    """In the subprocess: the run's conversion of ``source``'s tokenizer (``ir_export.convert_tokenizer``, the
    same step and file), into a folder thrown away; the run's one line when it fails."""
    from transformers.utils import logging as hf_logging

    from harness.adapters.openvino.ir_export import convert_tokenizer
    from harness.errors import StepFailed

    hf_logging.set_verbosity_error()
    with tempfile.TemporaryDirectory(prefix="harness-tokenizer-") as folder:
        checkpoint = source
        if source.is_file():  # a GGUF: its tokenizer as the converted checkpoint saves it
            from harness.models.gguf_convert import tokenizer_of

            checkpoint = Path(folder) / "checkpoint"
            tokenizer_of(source).save_pretrained(str(checkpoint))
        out = Path(folder) / "ir"
        out.mkdir()
        try:
            convert_tokenizer(checkpoint, out)
        except StepFailed as failed:
            where = source if source.is_file() else failed.where  # the user's GGUF, not the throw-away folder
            return str(StepFailed(where, failed.step, failed.cause))
    return None


if __name__ == "__main__":
    print(json.dumps({"failure": _probe(Path(sys.argv[1]))}))
