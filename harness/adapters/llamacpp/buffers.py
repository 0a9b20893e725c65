"""llama.cpp's extra CPU buffer types (AMX and weight repacking): whether a point uses them, and the switch
that sets it while a model loads (see the package docstring for why they are off on AMX CPUs)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Optional, Sequence


def extra_buffer_types(option: Optional[bool], cpu_flags: Sequence[str]) -> tuple[bool, str]:
    """(use llama.cpp's extra CPU buffer types?, why): off on AMX CPUs unless the scenario says otherwise."""
    if option is not None:
        return bool(option), "set by adapter_options.llamacpp.extra_buffer_types"
    if "amx_int8" in cpu_flags:
        return False, "off: llama-cpp-python 0.3.36 segfaults with its AMX/repacked buffers on this CPU (amx_int8)"
    return True, "on: llama.cpp's default"


@contextmanager
def model_params(use_extra_bufts: bool):
    """llama-cpp-python's ``Llama`` does not expose ``use_extra_bufts``; it builds its model params from
    ``llama_model_default_params`` inside ``__init__``, so that one call is wrapped while it loads."""
    import llama_cpp.llama_cpp as low

    default = low.llama_model_default_params

    def params():
        value = default()
        value.use_extra_bufts = use_extra_bufts
        return value

    low.llama_model_default_params = params
    try:
        yield
    finally:
        low.llama_model_default_params = default
