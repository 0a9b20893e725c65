"""Record parts of the text-path checks (``harness.correctness.text_path``, ``harness.correctness.batch``):
what the gate cannot see because it feeds the reference's token ids to the engine. Each check holds a
``verdict`` (pass | fail) or, where it could not run, ``skipped`` with the precise reason."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field

from harness.records.base import Part

Verdict = Optional[Literal["pass", "fail"]]


class Check(Part):
    """One check's outcome: ``verdict``, or ``skipped`` with why it could not run."""

    verdict: Verdict = None
    skipped: Optional[str] = None


class TokenizerDisagreement(Part):
    """One string the engine's tokenizer splits differently from the reference tokenizer."""

    text: str
    engine_ids: list[int]
    reference_ids: list[int]
    first_difference: int  # index of the first differing id
    right: Literal["engine", "reference", "neither", "undecided"] = "undecided"
    why: str = ""  # what decided ``right`` (the GGUF's vocabulary metadata), or why nothing could


class TokenizerAgreement(Check):
    strings: int = 0  # strings compared: the shipped tricky corpus plus the gate's prompt texts
    disagreements: list[TokenizerDisagreement] = Field(default_factory=list)
    vocabulary: dict[str, str] = Field(default_factory=dict)  # the engine's own vocabulary metadata


class ChatMismatch(Part):
    conversation: str  # single-turn | multi-turn
    engine_text: str
    reference_text: str
    first_difference: int  # character index


class ChatTemplateCheck(Check):
    engine_template: Optional[str] = None  # where the engine's chat path took its template from
    conversations: int = 0
    mismatches: list[ChatMismatch] = Field(default_factory=list)


class TextDivergence(Part):
    """A prompt whose text-in/text-out run departs from the reference's greedy text."""

    prompt: int
    why: str
    position: Optional[int] = None  # first generated position whose id differs
    reference_token: Optional[int] = None
    device_token: Optional[int] = None


class FreeText(Check):
    """text -> engine tokenizer -> greedy generation -> engine detokenizer, against the reference's greedy
    text; ``length_band``: each prompt's generated length within [low, high] x the reference's (+- slack)."""

    prompts: int = 0
    identical_text: int = 0  # prompts whose generated text equals the reference's
    prompt_ids_differ: list[int] = Field(default_factory=list)  # prompts the engine tokenized differently
    lengths: list[tuple[int, int]] = Field(default_factory=list)  # (device, reference) generated tokens
    length_band: Optional[tuple[float, float, int]] = None  # (low factor, high factor, slack tokens)
    divergences: list[TextDivergence] = Field(default_factory=list)
    # Where the generated text came from: "generate_text" (the engine's text API) or None (its detokenizer).
    text_api: Optional[str] = None


class BatchInvariance(Check):
    """Each sequence of one batch against the same prompt run alone (last-position logits)."""

    batch_size: Optional[int] = None
    kl_max: Optional[float] = None  # max over sequences of KL(alone || in the batch), full vocabulary
    kl_limit: Optional[float] = (
        None  # limit_factor x max(noise_floor, batch_floor); at least 0.01 without a noise floor
    )
    top1_agreement: Optional[float] = None  # share of sequences whose top-1 is the same
    failing_sequences: list[int] = Field(default_factory=list)
    lengths: list[int] = Field(default_factory=list)  # each sequence's prompt length (the shorter ones padded)
    padding: Optional[str] = None  # how the engine pads a batch ("left"), from Adapter.batch_padding
    kls: list[float] = Field(default_factory=list)  # per sequence: KL(alone || in the batch)
    noise_floor: Optional[float] = None  # the point's KL floor (Correctness.noise_floor)
    batch_floor: Optional[float] = None  # max KL(alone || in an unpadded batch of copies of itself)
    kl_ratio_max: Optional[float] = None  # kl_max over the floor, max(noise_floor, batch_floor)
    limit_factor: Optional[float] = None  # the limit over that floor (LIMIT_FACTOR); None: the absolute KL limit


class TextPath(Part):
    """Which input-path checks ran on a point, and how each came out (``skipped`` says why not)."""

    tokenizer: TokenizerAgreement = Field(default_factory=TokenizerAgreement)
    chat_template: ChatTemplateCheck = Field(default_factory=ChatTemplateCheck)
    free_text: FreeText = Field(default_factory=FreeText)
    batch: BatchInvariance = Field(default_factory=BatchInvariance)

    def checks(self) -> dict[str, Check]:
        return {
            "tokenizer": self.tokenizer,
            "chat_template": self.chat_template,
            "free_text": self.free_text,
            "batch": self.batch,
        }

    def failed(self) -> list[str]:
        return [name for name, check in self.checks().items() if check.verdict == "fail"]

    def summary(self) -> str:
        """One cell: each check's outcome, e.g. ``tok pass, chat fail, text pass, batch -``."""
        short = {"tokenizer": "tok", "chat_template": "chat", "free_text": "text", "batch": "batch"}
        return ", ".join(f"{short[name]} {check.verdict or '-'}" for name, check in self.checks().items())
