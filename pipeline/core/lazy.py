"""Lazy re-exports for a package's ``__init__``: a name loads its module on first use,
so importing the package (as ``python -m pipeline --help`` does) costs nothing."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` resolving each name of ``homes`` (name -> submodule)."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{home}"), name)

    return __getattr__


def by_name(names: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
    """``homes`` for :func:`lazy_getattr` from each submodule's names, written by module."""
    return {name: home for home, exported in names.items() for name in exported}
