"""The ``hf`` adapter's expert routing on MoE models: the capacity monitor a ``moe_capacity`` point runs under
(``harness.adapters.hf.moe_capacity``) and the router's choices over a prefill, for the record."""

from __future__ import annotations

from typing import Optional, Sequence

from harness.adapters.base import PointSkipped


class HFExpertRouting:
    """Routing of ``self.model`` (loaded by ``HFAdapter.load``); ``n_experts`` is None for a dense model."""

    def _capacity_monitor(self, model, point):
        from harness.adapters.hf.moe_capacity import RoutingMonitor
        from harness.moe.routing import expert_config

        try:
            self.n_experts, _ = expert_config(self.model.config)
        except ValueError:
            self.n_experts = None
        if point.moe_capacity is None:
            return None
        if self.n_experts is None:
            raise PointSkipped(
                f"moe_capacity={point.moe_capacity} needs a mixture-of-experts model; "
                f"{model.name} ({self.model.config.model_type}) is dense"
            )
        return RoutingMonitor(self.model, self.n_experts, point.moe_capacity)

    def routing(self, prompts: Sequence[Sequence[int]]) -> Optional[dict]:
        """Router choices (and capacity drops) over a prefill of each prompt, chunked as the point says."""
        if self.n_experts is None:
            return None
        from transformers import DynamicCache

        from harness.adapters.hf.moe_capacity import RoutingMonitor

        monitor = self.monitor or RoutingMonitor(self.model, self.n_experts)
        monitor.reset()
        torch = self._torch
        try:
            with torch.inference_mode():
                for ids in prompts:
                    cache, step = DynamicCache(config=self.model.config), self.point.moe_chunk_size or len(ids)
                    for start in range(0, len(ids), step):
                        chunk = torch.tensor([list(ids[start : start + step])], dtype=torch.long, device=self.device)
                        self.model(input_ids=chunk, past_key_values=cache, use_cache=True, logits_to_keep=1)
            return {**monitor.summary(), "tokens": sum(len(p) for p in prompts), "chunk": self.point.moe_chunk_size}
        finally:
            if monitor is not self.monitor:
                monitor.remove()
