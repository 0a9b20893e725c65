"""``lm_eval --model harness``: a scenario's point, loaded as ``harness run`` loads it, as an lm-eval model.

Model arguments (``--model_args``): ``scenario=FILE,point=ID`` runs a point of a scenario; or
``model=SOURCE,adapter=hf,device=cpu,quantization=none,dtype=bf16`` (plus ``threads``, ``cache_dir``);
``trust_remote_code=True`` (lm_eval's ``--trust_remote_code``) confirms a scenario's ``model.trust_remote_code``.
Imports lm-eval: only the lm-eval hook and the accuracy code load this module.
"""

from __future__ import annotations

from typing import Optional

from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from harness.accuracy.lm_eval_model import HarnessLM


@register_model("harness")
class PointLM(HarnessLM):
    def __init__(
        self,
        scenario: Optional[str] = None,
        point: Optional[str] = None,
        model: Optional[str] = None,
        adapter: str = "hf",
        device: str = "cpu",
        quantization: str = "none",
        dtype: str = "bf16",
        threads: Optional[int] = None,
        cache_dir: Optional[str] = None,
        trust_remote_code: bool = False,
        **_ignored,
    ) -> None:
        from harness.run.load_point import load_point

        loaded = load_point(
            scenario=scenario,
            point=point,
            model=model,
            adapter=adapter,
            device=device,
            quantization=quantization,
            dtype=dtype,
            threads=threads,
            cache_dir=cache_dir,
            trust_remote_code=trust_remote_code,
        )
        super().__init__(loaded.adapter, loaded.tokenizer, loaded.eos_ids, loaded.name)

    # lm-eval adds its own --device / --batch_size (default cuda:0) to the model's arguments; here the
    # point's axes decide the device, so only --model_args reach the constructor.
    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: Optional[dict] = None) -> LM:
        from lm_eval.utils import simple_parse_args_string

        return cls(**simple_parse_args_string(arg_string))

    @classmethod
    def create_from_arg_obj(cls, arg_dict: dict, additional_config: Optional[dict] = None) -> LM:
        return cls(**arg_dict)
