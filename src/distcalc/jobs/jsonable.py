"""Plain-JSON conversion of library records (dataclasses, pydantic models, enums, numpy values)."""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any


def to_jsonable(value: Any) -> Any:
    """Convert dataclasses, pydantic models, enums, numpy scalars/arrays into plain JSON types (a non-finite
    float becomes ``None``)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "model_dump"):
        return to_jsonable(value.model_dump())
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "tolist"):  # numpy
        return to_jsonable(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
