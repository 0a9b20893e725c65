"""Whether the installed transformers knows a checkpoint's architecture, asked of its config registry without
loading weights (``harness check``): the HF reference, the ``hf`` engine and OpenVINO's export all build the
checkpoint through transformers, so a ``model_type`` it does not know fails each of them."""

from __future__ import annotations

import json
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from harness.scenario.schema import ModelSpec


def unknown_model_type(spec: ModelSpec) -> Optional[tuple[Path, str]]:
    """(the checkpoint's config.json, what transformers lacks) when ``spec`` is a checkpoint folder whose
    ``model_type`` the installed transformers does not know; None where it knows it, where the scenario trusts
    the checkpoint's own code for it (``auto_map``), or where this cannot be told here (no transformers, a
    built-in or GGUF source, a config without ``model_type``): the run then finds out."""
    config = Path(spec.source).expanduser() / "config.json"
    if not config.is_file() or find_spec("transformers") is None:
        return None
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # source_check and the run's load say what is wrong with the file
    model_type = data.get("model_type") if isinstance(data, dict) else None
    if not isinstance(model_type, str) or (spec.trust_remote_code and data.get("auto_map")):
        return None
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    if model_type in CONFIG_MAPPING_NAMES:
        return None
    return config, f"model_type {model_type!r} is not an architecture transformers {transformers.__version__} knows"


def advice(spec: ModelSpec) -> str:
    """What to do about ``unknown_model_type``."""
    remote = "" if spec.trust_remote_code else ", or model.trust_remote_code with the checkpoint's auto_map code"
    return f"expected a model_type it knows (a transformers that has the architecture{remote})"
