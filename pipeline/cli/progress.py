"""Long stages: progress bars (on a terminal only, never in CI or a pipe); the jobs report
through pipeline/core/stages.py, which the CLI points here."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

from rich.progress import track

T = TypeVar("T")


def enabled() -> bool:
    return sys.stderr.isatty() and not os.environ.get("CI")


def progress(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """``items`` unchanged, with a bar on stderr when a person is watching."""
    if not enabled():
        yield from items
        return
    yield from track(items, description=description, total=total, transient=True)
