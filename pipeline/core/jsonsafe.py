"""JSON out: no output of the pipeline carries NaN or ±inf (JSON has no such numbers)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any


def json_safe(value: Any) -> Any:
    """``value`` with every float that is not finite replaced by null, at any depth."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    return value


def dumps(document: Any, *, indent: int | None = 2) -> str:
    """``document`` as JSON text, non-finite floats as null; other objects by ``str``."""
    return json.dumps(json_safe(document), indent=indent, default=str, allow_nan=False)
