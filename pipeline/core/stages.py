"""How long stages take, and a hook through which the CLI shows their progress.

Jobs and engines report progress here and never draw it: the CLI installs a drawing
``Track`` (a bar on a terminal) with ``set_track``; without one, items pass unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")

Track = Callable[[Iterable[Any], str, "int | None"], Iterator[Any]]


def _untracked(items: Iterable[Any], description: str, total: int | None = None) -> Iterator[Any]:
    yield from items


_track: list[Track] = [_untracked]


def set_track(track: Track) -> None:
    """Show every stage's progress through ``track`` from now on (the CLI's bar)."""
    _track[0] = track


def progress(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """``items`` unchanged, shown by the installed track."""
    yield from _track[0](items, description, total)


# The stage under which a scoring's caller counts the seconds it spent getting parts' score
# tables (scoring them, or waiting for the workers that do, pipeline/engines/local.py): with
# parts side by side, "plan" and "checks" are the workers' seconds added up, which may
# exceed the wall time they took.
AWAITED = "awaited"


@contextmanager
def timed(seconds: dict[str, float], stage: str) -> Iterator[None]:
    """Add the seconds the block took to ``seconds[stage]`` (a stage may run many times)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        seconds[stage] = round(seconds.get(stage, 0.0) + time.perf_counter() - started, 3)
