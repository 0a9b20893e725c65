"""Who is right when an engine's tokenizer and the reference tokenizer disagree: the engine's own vocabulary
metadata decides (for llama.cpp, the GGUF's ``tokenizer.ggml.model`` and ``tokenizer.ggml.pre``).

- A tokenizer converted from the checkpoint's (OpenVINO GenAI's openvino_tokenizers IRs: the adapter's
  description says ``tokenizer_converted``) is derived from the reference tokenizer: the reference is right.

- A GGUF the harness converted from the HF checkpoint (llama.cpp's converter; the model's source has no GGUF)
  is derived from the reference tokenizer: the reference is right and the conversion is at fault.
- A SentencePiece vocabulary (``tokenizer.ggml.model`` = ``llama``: Gemma, Llama 2) is the model's own; the
  reference tokenizer was rebuilt from it (``harness.models.gguf_convert``). SentencePiece itself, loaded
  with the GGUF's pieces, scores and types, is the third opinion: the side that agrees with it is right.
- A BPE vocabulary that came as a GGUF has no third implementation here: ``undecided``, saying so.
- An engine that names no vocabulary file (no GGUF, no conversion): the checkpoint's own tokenizer files
  decide, its ``tokenizer.json`` read afresh by the ``tokenizers`` library (``checkpoint_arbiter``); where
  that checkpoint was itself rebuilt from a GGUF (the default model), the GGUF's SentencePiece vocabulary
  decides as above, and a BPE one leaves it ``undecided``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

# GGUF token types, numbered as SentencePiece's ModelProto.SentencePiece.Type
_USER_DEFINED, _CONTROL = 4, 3


def metadata(gguf: Path) -> dict[str, str]:
    from harness.adapters.llamacpp.gguf_export import read_header

    scalars = read_header(gguf)[0]
    keys = ("tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.add_space_prefix")
    return {key: str(scalars[key]) for key in keys if key in scalars}


def sentencepiece_of(gguf: Path) -> Callable[[str], list[int]]:
    """SentencePiece loaded with the GGUF's vocabulary: text -> ids (BOS first where the GGUF adds it)."""
    import sentencepiece
    from gguf import GGUFReader
    from sentencepiece import sentencepiece_model_pb2 as pb

    from harness.models.gguf_convert import _array, _scalar

    reader = GGUFReader(str(gguf))
    tokens = _array(reader, "tokenizer.ggml.tokens", lambda p: bytes(p).decode("utf-8"))
    scores = _array(reader, "tokenizer.ggml.scores", lambda p: float(p[0]))
    types = _array(reader, "tokenizer.ggml.token_type", lambda p: int(p[0]))
    proto = pb.ModelProto()  # type: ignore[attr-defined]
    proto.trainer_spec.model_type = pb.TrainerSpec.BPE  # type: ignore[attr-defined]
    proto.trainer_spec.byte_fallback = True
    proto.trainer_spec.unk_id = _scalar(reader, "tokenizer.ggml.unknown_token_id", 0)
    proto.trainer_spec.bos_id = proto.trainer_spec.eos_id = proto.trainer_spec.pad_id = -1
    proto.normalizer_spec.name = "identity"
    proto.normalizer_spec.add_dummy_prefix = bool(_scalar(reader, "tokenizer.ggml.add_space_prefix", False))
    proto.normalizer_spec.remove_extra_whitespaces = False
    proto.normalizer_spec.escape_whitespaces = True
    for token, score, kind in zip(tokens, scores, types):
        piece = proto.pieces.add()
        piece.piece = token.replace(" ", "\u2581") if kind == _USER_DEFINED else token
        piece.score, piece.type = score, kind
    processor = sentencepiece.SentencePieceProcessor(model_proto=proto.SerializeToString())
    bos = _scalar(reader, "tokenizer.ggml.bos_token_id")
    prefix = [bos] if bos is not None and _scalar(reader, "tokenizer.ggml.add_bos_token", True) else []
    control = [t for t, k in zip(tokens, types) if k == _CONTROL and len(t) > 2]
    del reader

    def encode(text: str) -> list[int]:
        if any(name in text for name in control):
            raise ValueError("the text holds special-token text, which SentencePiece does not parse")
        return prefix + list(processor.encode(text))

    return encode


def arbiter(adapter, model) -> tuple[Optional[Callable], dict[str, str]]:
    """(text, engine ids, reference ids) -> (right, why), and the vocabulary metadata it reads; (None, {})
    where the engine names no vocabulary file (its description's ``extra`` has no ``gguf``) and no conversion."""
    from harness.records.engine import EngineInfo

    if not adapter.supports_tokenize:
        return None, {}
    description = EngineInfo.from_description(adapter.describe()).extra
    converted = description.get("tokenizer_converted")
    if converted:
        why = f"the engine's tokenizer is {converted}, i.e. derived from the reference's: the conversion is at fault"
        return (lambda text, engine, ours: ("reference", why)), {"source": converted}
    gguf = description.get("gguf")
    if not gguf:
        return checkpoint_arbiter(model)
    found = metadata(Path(gguf))
    kind, pre = found.get("tokenizer.ggml.model"), found.get("tokenizer.ggml.pre")
    if model.gguf_path is None and model.given_for(adapter.name) is None:
        found["source"] = "exported by the harness from the HF checkpoint"
        why = (
            f"the GGUF was exported from the checkpoint whose tokenizer is the reference: the export "
            f"(tokenizer.ggml.model {kind!r}, pre {pre!r}) is at fault"
        )
        return (lambda text, engine, ours: ("reference", why)), found
    found["source"] = "the model's own GGUF"  # its source, or the one the scenario gives llama.cpp
    if kind != "llama":
        why = f"BPE vocabulary (pre-tokenizer {pre!r}) with no third implementation here to decide"
        return (lambda text, engine, ours: ("undecided", why)), found
    return _third_opinion(lambda: sentencepiece_of(Path(gguf)), "SentencePiece with the GGUF's vocabulary"), found


def _third_opinion(load: Callable[[], Callable[[str], list[int]]], who: str) -> Callable:
    """(text, engine ids, reference ids) -> (right, why) by the ids ``load()``'s encoder gives (loaded once)."""
    encoders: list = []

    def decide(text: str, engine: list[int], ours: list[int]) -> tuple[str, str]:
        if not encoders:
            encoders.append(load())
        try:
            truth = encoders[0](text)
        except ValueError as exc:
            return "undecided", str(exc)
        if truth == engine:
            return "engine", f"{who} gives the engine's ids"
        if truth == ours:
            return "reference", f"{who} gives the reference's ids"
        return "neither", f"{who} gives {truth[:12]}"

    return decide


def checkpoint_arbiter(model) -> tuple[Optional[Callable], dict[str, str]]:
    """The arbiter for an engine that names no vocabulary file: the checkpoint's own tokenizer files, or the
    GGUF the checkpoint was rebuilt from (``model.gguf_path``); (None, {}) where neither can decide."""
    if model.gguf_path is not None:  # the checkpoint's tokenizer.json is the harness's rebuild of the GGUF's
        found = {**metadata(Path(model.gguf_path)), "source": "the GGUF the checkpoint was rebuilt from"}
        if found.get("tokenizer.ggml.model") != "llama":
            why = (
                f"BPE vocabulary (pre-tokenizer {found.get('tokenizer.ggml.pre')!r}) with no third implementation here"
            )
            return (lambda text, engine, ours: ("undecided", why)), found
        return _third_opinion(
            lambda: sentencepiece_of(Path(model.gguf_path)), "SentencePiece with the GGUF's vocabulary"
        ), found
    path = Path(model.hf_dir) / "tokenizer.json"
    if not path.exists():
        return None, {}

    def load() -> Callable[[str], list[int]]:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(path))
        return lambda text: list(tokenizer.encode(text).ids)

    return _third_opinion(load, "the checkpoint's tokenizer.json (tokenizers)"), {"source": f"the checkpoint's {path}"}
