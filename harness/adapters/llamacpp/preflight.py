"""What ``harness check`` can say about a llama.cpp point before any point runs: whether the checkpoint needs
llama.cpp's converter, and if so whether the converter is there and takes the checkpoint's architecture.

The architecture lookup is the converter's own (``convert_main --architecture``: its config reading,
architecture choice and model class, without weights), so a refusal here is the one the point would meet when
it converts, in the same words (``converter.convert``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from harness.scenario.schema import ModelSpec


def _checkpoint(spec: ModelSpec) -> Optional[tuple[str, str]]:
    """(what the messages name, the checkpoint's config.json text) of a source llama.cpp would convert; None
    where llama.cpp runs a GGUF (one the scenario gives it, the source's own, the default model's)."""
    from harness.models import tiny
    from harness.models.builtin import DEFAULT_MODEL, TINY_PREFIX, tiny_architecture

    if spec.artefacts.llamacpp is not None or spec.source == DEFAULT_MODEL:
        return None
    if spec.source.startswith(TINY_PREFIX):  # not built yet: its recipe's config (the probe names its class)
        recipe = tiny.ARCHITECTURES.get(tiny_architecture(spec.source))
        return (spec.source, json.dumps(recipe)) if recipe else None
    path = Path(spec.source).expanduser()
    if not path.is_dir() or not (path / "config.json").is_file():
        return None  # a GGUF source, or a folder source_check refuses
    return str(path), (path / "config.json").read_text(encoding="utf-8")


@lru_cache(maxsize=32)
def _refusal(config: str, of: str, cache: Path) -> Optional[str]:
    """The converter's words refusing this config's architecture, or None: looked up once per config and
    converter version, kept in ``cache`` (the run's; the lookup imports torch and transformers: seconds)."""
    import hashlib

    from harness.adapters.llamacpp import converter
    from harness.io import write_json_atomic

    kept = cache / "llamacpp" / "architectures" / f"{of}-{hashlib.sha256(config.encode()).hexdigest()[:16]}.json"
    if kept.is_file():
        return json.loads(kept.read_text(encoding="utf-8"))["refusal"]
    runner = Path(__file__).with_name("convert_main.py")
    with tempfile.TemporaryDirectory(prefix="harness-arch-") as folder:
        (Path(folder) / "config.json").write_text(config, encoding="utf-8")
        command = [sys.executable, str(runner), str(converter.source_dir(of)), "-", "--architecture", folder]
        done = subprocess.run(command, capture_output=True, text=True)
    message = converter.last_words(done.stderr)
    refusal = message if done.returncode != 0 and converter.refused(message) else None
    if done.returncode == 0 or refusal:  # another failure is not kept: the run's conversion says how
        kept.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(kept, {"refusal": refusal})
    return refusal


def reason(spec: ModelSpec, cache_dir: Optional[Path] = None) -> Optional[str]:
    """Why every llama.cpp point of ``spec`` will skip (the converter is missing, or refuses the checkpoint's
    architecture), or None: it will run, or fail or skip for a reason only the run can find. The lookup is
    kept in ``cache_dir`` (the run's ``--cache-dir``; None: ``$HARNESS_CACHE_DIR`` or ``~/.cache/harness``)."""
    if find_spec("llama_cpp") is None:
        return None  # the adapter is not installed: its points skip saying so
    checkpoint = _checkpoint(spec)
    if checkpoint is None:
        return None
    from harness.adapters.llamacpp import converter

    of = converter.version()
    missing = converter.missing_reason(of)
    if missing:
        return f"{checkpoint[0]}: GGUF conversion ({converter.identity(of)}): {missing}"
    from harness.models import sources

    refusal = _refusal(checkpoint[1], of, sources.cache_dir(cache_dir))
    return (
        f"{checkpoint[0]}: GGUF conversion ({converter.identity(of)}) refused the checkpoint: {refusal}"
        if refusal
        else None
    )
