"""The engines' own artefacts a user brings (``model.artefacts``): a GGUF for llama.cpp, an OpenVINO IR folder.

The point runs the given artefact as it is instead of converting ``model.source``, which stays the checkpoint
the gate's HF reference runs. Before any point runs, each given artefact must exist, be of its engine's kind
and have the checkpoint's vocabulary size (read from the GGUF header, or the IR's logits port): a wrong one
is refused in one line naming the file, the field and what was expected (``problems``). The record names
it: ``given``'s ``record()`` (the path and its sha256) in the point's ``engine.extra.artefact``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Optional

from harness.io import file_sha256

if TYPE_CHECKING:
    from harness.scenario.schema import ModelSpec

IR_XML = "openvino_model.xml"
GIVEN = "given by the user"  # the record's word for an artefact no conversion made


@dataclass(frozen=True)
class GivenArtefact:
    """An engine's artefact named by the scenario, with its identity (the GGUF's sha256, the IR's .xml and .bin)."""

    engine: str
    path: Path
    sha256: str

    def record(self) -> dict:
        return {"artefact": GIVEN, "path": str(self.path), "sha256": self.sha256}


def _ir_sha256(folder: Path) -> str:
    """The IR's identity: its graph and its weights (the .bin named beside the .xml)."""
    import hashlib

    digest = hashlib.sha256()
    for name in (IR_XML, Path(IR_XML).with_suffix(".bin").name):
        if (folder / name).is_file():
            digest.update(name.encode())
            digest.update(file_sha256(folder / name).encode())
    return digest.hexdigest()


def given(spec: ModelSpec, engine: str) -> Optional[GivenArtefact]:
    """The artefact ``spec`` names for ``engine`` (an adapter's name), identified; None where it names none."""
    named = getattr(spec.artefacts, engine, None)
    if named is None:
        return None
    path = Path(named).expanduser().resolve()
    sha256 = _ir_sha256(path) if path.is_dir() else file_sha256(path)
    return GivenArtefact(engine, path, sha256)


def _gguf_vocabulary(path: Path) -> Optional[int]:
    from harness.models import gguf_header

    return gguf_header.read(path).vocabulary


def _ir_vocabulary(folder: Path) -> Optional[int]:
    """The last dimension of the IR's ``logits`` port: a walk of the .xml (the graph, not the weights)."""
    import xml.etree.ElementTree as ET

    for _, element in ET.iterparse(folder / IR_XML):
        if element.tag == "port" and "logits" in (element.get("names") or "").split(","):
            dims = [dim.text for dim in element.findall("dim")]
            return int(dims[-1]) if dims and dims[-1] and dims[-1].isdigit() else None
    return None


def checkpoint_vocabulary(hf_dir: Path) -> Optional[int]:
    """``vocab_size`` of a checkpoint's config (its text model's, for a multimodal one); None where unsaid."""
    path = Path(hf_dir) / "config.json"
    if not path.is_file():
        return None
    config = json.loads(path.read_text(encoding="utf-8"))
    size = config.get("vocab_size") or (config.get("text_config") or {}).get("vocab_size")
    return size if isinstance(size, int) else None


def source_vocabulary(spec: ModelSpec) -> Optional[int]:
    """The checkpoint's vocabulary size where it is cheap before the model resolves (an HF directory's config,
    a GGUF source's header); None for a built-in model not built yet (``harness run`` checks it once resolved)."""
    path = Path(spec.source).expanduser()
    if path.is_dir():
        return checkpoint_vocabulary(path)
    if path.suffix == ".gguf" and path.is_file():
        return _gguf_vocabulary(path)
    return None


def _problem(engine: str, named: str, vocabulary: Optional[int]) -> Optional[str]:
    path = Path(named).expanduser()
    if engine == "llamacpp":
        if not path.exists():
            return f"{named}: no such file; expected the .gguf file llama.cpp should run"
        if not path.is_file() or path.suffix != ".gguf":
            return f"{named}: {'a folder' if path.is_dir() else 'not a .gguf file'}; expected a .gguf file"
        from harness.models import gguf_header

        problem = gguf_header.problem(path)
        if problem:
            return problem
        found = _gguf_vocabulary(path)
        what = "GGUF's tokenizer.ggml.tokens"
    else:
        if not path.exists():
            return f"{named}: no such folder; expected an OpenVINO IR folder holding {IR_XML} and its .bin"
        if not path.is_dir() or not (path / IR_XML).is_file():
            kind = "a file" if path.is_file() else f"a folder without {IR_XML}"
            return f"{named}: {kind}; expected an OpenVINO IR folder holding {IR_XML} and its .bin"
        from xml.etree.ElementTree import ParseError

        try:
            found = _ir_vocabulary(path)
        except ParseError as exc:  # empty or cut short: the engine would fail on it too, later and less clearly
            return f"{path / IR_XML}: not readable as an IR graph ({exc}); expected the .xml an OpenVINO export writes"
        what = "IR's logits"
    if vocabulary is not None and found is not None and found != vocabulary:
        return (
            f"{named}: the {what} hold {found:,} tokens, the checkpoint's vocabulary {vocabulary:,}; expected "
            "the artefact of the checkpoint model.source names (the gate compares against that checkpoint)"
        )
    return None


def unused(spec: ModelSpec, runs: Iterable[str]) -> list[tuple[str, str]]:
    """(field, message) for each given artefact whose adapter no point of the sweep runs (``runs``: the
    adapters its points run): a leftover or a slip, never silently ignored."""
    runs = list(dict.fromkeys(runs))
    return [
        (
            f"model.artefacts.{engine}",
            f"{named}: no point of this sweep runs {engine}; expected an artefact for an adapter the sweep runs "
            f"({', '.join(runs) or 'none'}), or {engine} in sweep.adapter",
        )
        for engine, named in spec.artefacts.model_dump(exclude_none=True).items()
        if engine not in runs
    ]


def problems(spec: ModelSpec, vocabulary: Optional[int], runs: Optional[Iterable[str]] = None) -> list[tuple[str, str]]:
    """(field, message) for each given artefact that cannot be run as the checkpoint's: missing, the wrong
    kind, unreadable, or a vocabulary size other than ``vocabulary`` (the checkpoint's; None: not compared).
    ``runs``: only the artefacts of these adapters are looked at (None: all)."""
    found = []
    engines = None if runs is None else set(runs)
    for engine, named in spec.artefacts.model_dump().items():
        if named is not None and (engines is None or engine in engines):
            problem = _problem(engine, named, vocabulary)
            if problem:
                found.append((f"model.artefacts.{engine}", problem))
    return found
