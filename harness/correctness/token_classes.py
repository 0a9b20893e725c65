"""Token classes of the reference tokenizer's pieces: which kind of text a position predicts.

Accelerators are known to corrupt digits (or rare tokens) while the text stays fluent; pooled over every
position such a fault averages away. So each teacher-forced position goes in the class of the token it
predicts (the reference's greedy token; a long or copy prompt's own text token), decided from that token's
piece in the reference tokenizer, first rule that matches:

- ``special``: an added token the tokenizer marks special (BOS, EOS, end of turn, padding), or one of the
  reference's stop ids;
- ``digits``: the decoded piece holds a decimal digit (" 12", "3", "4th");
- ``whitespace``: the decoded piece is only whitespace (spaces, newlines, tabs);
- ``punctuation``: every character of the decoded piece, whitespace aside, is Unicode punctuation or a symbol
  (``,`` ``.`` ``{`` ``":`` ``=`` ``))``: JSON and code syntax);
- ``word-start``: the piece begins a word: its decoded text starts with whitespace, or its vocabulary string
  with SentencePiece's ``▁`` or byte-level BPE's ``Ġ`` (single pieces decode without their leading space in
  some tokenizers);
- ``word-continuation``: anything else (the inside and end of a word).

Pure functions of a ``tokenizers.Tokenizer`` and ids.
"""

from __future__ import annotations

import unicodedata
from typing import Iterable, Sequence

SPECIAL, DIGITS, WHITESPACE, PUNCTUATION, WORD_START, CONTINUATION = (
    "special",
    "digits",
    "whitespace",
    "punctuation",
    "word-start",
    "word-continuation",
)
CLASSES = (SPECIAL, DIGITS, WHITESPACE, PUNCTUATION, WORD_START, CONTINUATION)
WORD_MARKERS = ("\u2581", "\u0120")  # SentencePiece's ▁ and byte-level BPE's Ġ: a piece that starts a word
METHOD = (
    "the token each position predicts, by its reference-tokenizer piece: special, digits, whitespace, "
    "punctuation, word-start, word-continuation (harness.correctness.token_classes)"
)


def of_piece(piece: str, vocab_string: str, special: bool) -> str:
    """The class of one token from its decoded text, its vocabulary string and whether it is special."""
    if special:
        return SPECIAL
    if any(ch.isdecimal() for ch in piece):
        return DIGITS
    stripped = "".join(ch for ch in piece if not ch.isspace())
    if not stripped:
        return WHITESPACE if piece else CONTINUATION  # a byte piece that decodes to nothing on its own
    if all(unicodedata.category(ch)[0] in "PS" for ch in stripped):
        return PUNCTUATION
    if piece[0].isspace() or vocab_string.startswith(WORD_MARKERS):
        return WORD_START
    return CONTINUATION


def special_ids(tokenizer) -> set[int]:
    """Ids of the tokenizer's added tokens marked special."""
    return {index for index, token in tokenizer.get_added_tokens_decoder().items() if token.special}


def classify(tokenizer, ids: Iterable[int], stop_ids: Sequence[int] = ()) -> dict[int, str]:
    """The class of every distinct id in ``ids``."""
    special = special_ids(tokenizer) | set(stop_ids)
    found: dict[int, str] = {}
    for index in set(ids):
        piece = tokenizer.decode([index], skip_special_tokens=False)
        found[index] = of_piece(piece, tokenizer.id_to_token(index) or "", index in special)
    return found
