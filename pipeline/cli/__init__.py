"""The command line: typer commands and every piece of printing.

``entry`` holds the typer app and its exit codes; the commands are ``lake``, ``comparison``
and ``query``; ``options`` what they share; ``tables`` and ``progress`` the terminal's
helpers. ``app`` and ``main`` load on first use, so that importing ``pipeline.cli.tables``
does not load every command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.core.lazy import by_name, lazy_getattr

if TYPE_CHECKING:
    from pipeline.cli.entry import app, main

_HOMES = by_name({"entry": ("app", "main")})

__all__ = ["app", "main"]
__getattr__ = lazy_getattr(__name__, _HOMES)
