"""The command line: typer commands and every piece of printing.

``entry`` holds the typer app and its exit codes; the commands are ``lake``, ``comparison``
and ``query``; ``options`` what they share; ``tables`` and ``progress`` the terminal's
helpers. ``app`` and ``main`` load on first use, so that importing ``pipeline.cli.tables``
does not load every command.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline.cli.entry import app, main

__all__ = ["app", "main"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(import_module("pipeline.cli.entry"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
