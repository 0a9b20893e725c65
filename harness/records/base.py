"""The base of every record part: strict pydantic models and a number type that refuses text and booleans."""

from __future__ import annotations

import numbers
from typing import Annotated, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict


def _number(value):
    """Ints stay ints and floats floats (numpy's included); text and booleans are refused."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError("expected a number")
    return int(value) if isinstance(value, numbers.Integral) else float(value)


Number = Annotated[Union[int, float], BeforeValidator(_number)]


class Part(BaseModel):
    model_config = ConfigDict(validate_assignment=True, extra="forbid")  # nothing unknown is silently dropped
