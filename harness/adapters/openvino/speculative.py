"""Speculative decoding on ``openvino``: OpenVINO GenAI's own ``LLMPipeline(..., draft_model=...)`` and
``LLMPipeline(..., prompt_lookup=True)``, with ``GenerationConfig.num_assistant_tokens`` (and ``max_ngram_size``
for prompt lookup).

A draft is an IR like the target's (``ir_export.artefact``): the draft model's own checkpoint, or the target's at
the draft's quantization (NNCF), compiled with the target's plugin properties. The plain path is a second
pipeline on the target's IR without speculation (served from the compile cache). GenAI's streamer hands over
each step's tokens; where it hands a list, that list is one verify step, otherwise verify steps are taken from
GenAI's own counters where its results carry them (``extended_perf_metrics``), else left uncounted.
"""

from __future__ import annotations

from typing import Any, Optional

from harness.adapters.speculation import VerifySteps
from harness.scenario.speculative import DRAFT, PROMPT_LOOKUP, Speculation, parse


def spec_of(point) -> Speculation:
    return parse(point.speculative)


def draft_ir(adapter, spec: Speculation, draft_model, cache) -> Any:
    """The draft's IR directory (exported and compressed once, cached like the target's)."""
    from harness.adapters.openvino import ir_export

    compression = (
        ir_export.compression_options(spec.quantization, adapter.settings.quantization)
        if spec.quantization != "none"
        else {}
    )
    return ir_export.artefact(draft_model, spec.quantization, compression, cache)


def pipeline_options(genai, spec: Speculation, draft_dir, device: str, plugin_config: dict) -> dict:
    """The keyword arguments ``LLMPipeline`` takes to speculate as ``spec`` says."""
    if spec.kind == PROMPT_LOOKUP:
        return {"prompt_lookup": True}
    if spec.kind == DRAFT:
        return {"draft_model": genai.draft_model(str(draft_dir), device, **plugin_config)}
    return {}


def configure(config, spec: Speculation) -> None:
    """A ``GenerationConfig`` that speculates as ``spec`` says."""
    config.num_assistant_tokens = spec.tokens
    if spec.kind == PROMPT_LOOKUP:
        config.max_ngram_size = spec.ngram


def steps_of(bursts: list[int], result, spec: Speculation) -> Optional[VerifySteps]:
    """Verify steps from the streamer's bursts (one ``write`` per step) when GenAI streamed lists, else from
        its extended metrics (accepted tokens over the generation: the forwards are the tokens less those accepted,
    spread evenly, ``per_step`` False), else None."""
    if any(count > 1 for count in bursts):
        return VerifySteps(drafted=[0] + [spec.tokens] * (len(bursts) - 1), emitted=list(bursts))
    metrics = getattr(result, "extended_perf_metrics", None)
    accepted = getattr(metrics, "get_num_accepted_tokens", None)
    if accepted is None:
        return None
    total, emitted = int(accepted()), sum(bursts)
    forwards = max(1, emitted - total)  # each forward emits its accepted candidates plus one token
    per_step = [total // forwards + (1 if i < total % forwards else 0) for i in range(forwards)]
    return VerifySteps(drafted=[spec.tokens] * forwards, emitted=[a + 1 for a in per_step], per_step=False)
