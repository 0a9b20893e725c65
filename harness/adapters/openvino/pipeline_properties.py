"""What GenAI's ``LLMPipeline`` is compiled with for a point: the plugin's device and properties (the gate's
step-wise request compiles with the same ones), the dynamic pipelines' scheduler, and the static pipeline's
sizes (MIN_RESPONSE_LEN = max_new_tokens, MAX_PROMPT_LEN = max_seq_len - max_new_tokens)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from harness.adapters.base import LoadSettings, PointSkipped
from harness.adapters.openvino.steps import EMULATED_NPU, STATIC

PIPELINE_ONLY = ("scheduler_config", "MAX_PROMPT_LEN", "MIN_RESPONSE_LEN")  # GenAI properties, not the plugin's


@dataclass(frozen=True)
class PipelineProperties:
    device: str  # the plugin's device: NPU for the emulated NPU, whose plugin runs on the CPU
    config: dict[str, Any]  # every property LLMPipeline takes
    prefill_chunk: Optional[int] = None  # a dynamic pipeline's split-fuse token budget (None: whole prompts)
    max_prompt: Optional[int] = None  # the static pipeline's MAX_PROMPT_LEN (None: a dynamic pipeline)
    min_response: Optional[int] = None  # the static pipeline's MIN_RESPONSE_LEN

    @property
    def plugin(self) -> dict[str, Any]:
        """The device plugin's properties: what a request compiled beside the pipeline takes."""
        return {k: v for k, v in self.config.items() if k not in PIPELINE_ONLY}


def properties(genai, point, settings: LoadSettings, compile_cache: Path) -> PipelineProperties:
    """The pipeline's properties for ``point``, compiled blobs cached in ``compile_cache`` (``genai``: the
    ``openvino_genai`` module, imported by the caller's ``load``)."""
    config: dict[str, Any] = {"CACHE_DIR": str(compile_cache)}
    if settings.threads and point.device in ("CPU", EMULATED_NPU):
        config["INFERENCE_NUM_THREADS"] = settings.threads
    if point.device not in STATIC:
        # GenAI's default scheduler keeps the previous prompt's KV blocks (prefix caching): a repeated
        # round would time a cache hit instead of a prefill. A plain SchedulerConfig has it off.
        scheduler = genai.SchedulerConfig()
        if point.moe_chunk_size:  # split-fuse prefills a prompt in slices of this many tokens
            scheduler.max_num_batched_tokens = point.moe_chunk_size
            scheduler.dynamic_split_fuse = True
        config["scheduler_config"] = scheduler
        chunk = scheduler.max_num_batched_tokens if scheduler.dynamic_split_fuse else None
        return PipelineProperties(point.device, config, prefill_chunk=chunk)
    if point.moe_chunk_size:
        raise PointSkipped(
            f"GenAI's static {point.device} pipeline prefills whole prompts here; "
            f"moe_chunk_size={point.moe_chunk_size} needs a dynamic device (CPU, GPU)"
        )
    min_response = settings.max_new_tokens
    max_prompt = point.max_seq_len - settings.max_new_tokens
    config.update(MAX_PROMPT_LEN=max_prompt, MIN_RESPONSE_LEN=min_response)
    device = point.device
    if point.device == EMULATED_NPU:
        device = "NPU"
        config.update(NPUW_DEVICES="CPU", NPUW_ONLINE_PIPELINE="NONE")
        config.pop("CACHE_DIR")  # the NPU plugin's cache is keyed by a device that is not here
    return PipelineProperties(device, config, max_prompt=max_prompt, min_response=min_response)
