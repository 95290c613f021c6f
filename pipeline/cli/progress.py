"""Long stages: progress bars (on a terminal only, never in CI or a pipe) and their seconds."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
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


@contextmanager
def timed(seconds: dict[str, float], stage: str) -> Iterator[None]:
    """Add the seconds the block took to ``seconds[stage]`` (a stage may run many times)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        seconds[stage] = round(seconds.get(stage, 0.0) + time.perf_counter() - started, 3)
