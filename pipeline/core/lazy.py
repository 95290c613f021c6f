"""Package exports loaded on first use, so that importing a package stays cheap
(``python -m pipeline --help`` imports no polars, duckdb or pandera)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` giving each name of ``homes`` from its module
    (``<package>.<home>``), imported when the name is first asked for."""

    def exported(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{homes[name]}"), name)

    return exported
