"""Input files to numbered lines, in chunks of bounded size.

A chunk holds whole lines only and at most about ``chunk_bytes`` of text, so
a file of ten million lines is read without holding it all in memory. Lines
keep their file and 1-based line number; a file that cannot be read at all
becomes one entry at line 0, so it is counted like any line.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import polars as pl

from pipeline.core.settings import Settings, current_settings
from pipeline.sources.blocks import Event, byte_blocks
from pipeline.sources.discover import source_name
from pipeline.sources.inspect.columns import InspectMapping
from pipeline.sources.inspect.extract import is_inspect_log
from pipeline.sources.inspect.table import FindRetry, inspect_frames
from pipeline.sources.limits import DEFAULT_CHUNK_BYTES, DEFAULT_CHUNK_LINES, ReadLimits
from pipeline.sources.lines import LINE_SCHEMA, LineCutter, Lines, report_frames
from pipeline.sources.problems import with_problems


def _file_frames(
    path: Path,
    limits: ReadLimits,
    inspect: InspectMapping | None = None,
    notes: list[str] | None = None,
    find_retry: FindRetry | None = None,
) -> Iterator[tuple[pl.DataFrame, int]]:
    """Frames of whole numbered lines of one file, each at most chunk_bytes of input.

    Each frame comes with the input bytes it holds (line endings included), so
    the caller can cut chunks on the same measure. An Inspect AI log gives one
    task-grade record per sample and epoch instead of lines. What the reader found
    about the file as a whole is appended to ``notes``.
    """
    if is_inspect_log(path):
        yield from inspect_frames(path, limits, inspect, notes, find_retry)
        return
    if path.name.endswith(".json"):
        yield from report_frames(path, limits)
        return
    cutter = LineCutter(source_name(path), limits)
    event: Event | None = None
    for block, event in byte_blocks(path, limits.expanded_bytes):
        if event is not None:
            break
        yield from cutter.feed(block)
    yield from cutter.finish(event)
    if notes is not None:
        notes.extend(cutter.notes)


def iter_line_chunks(
    files: Sequence[Path],
    *,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    chunk_lines: int = DEFAULT_CHUNK_LINES,
    settings: Settings | None = None,
    inspect: InspectMapping | None = None,
    find_retry: FindRetry | None = None,
) -> Iterator[Lines]:
    """Every line of every file, numbered, in chunks; always at least one chunk.

    A chunk holds at most chunk_bytes of input and chunk_lines lines. The record
    limits are ``settings``', else the running command's (pipeline/core/settings.py).
    ``inspect`` is the rubric's ``[sources.inspect]`` mapping for Inspect AI logs, and
    ``find_retry`` finds the retry of one left at "started" (table.inspect_frames).
    """
    resolved = ReadLimits.of(settings or current_settings(), chunk_bytes, chunk_lines)
    pending: list[pl.DataFrame] = []
    pending_bytes = pending_lines = 0
    pending_files: list[str] = []
    notes: list[str] = []
    next_row = 0
    yielded = False

    def flush() -> Lines:
        nonlocal next_row
        chunk = with_problems(pl.concat(pending), next_row, resolved)
        next_row += chunk.height
        said = tuple(notes)
        notes.clear()
        return Lines(frame=chunk, files=pending_files, notes=said)

    for path in files:
        for frame, size in _file_frames(path, resolved, inspect, notes, find_retry):
            # A chunk stays within its bounds: what is pending goes first when
            # this frame would take it over.
            if pending and (
                pending_bytes + size > chunk_bytes or pending_lines + frame.height > chunk_lines
            ):
                yield flush()
                yielded = True
                pending, pending_bytes, pending_lines, pending_files = [], 0, 0, []
            pending.append(frame)
            pending_bytes += size
            pending_lines += frame.height
            # Every part names each file it holds lines of, so a part that is
            # lost names the files to read again, the middle of a file included.
            if source_name(path) not in pending_files:
                pending_files.append(source_name(path))
        if not pending_files or pending_files[-1] != source_name(path):
            # A file that gave no lines (empty) still counts as read in this chunk.
            pending_files.append(source_name(path))
    if pending or not yielded or notes:
        if not pending:
            pending = [pl.DataFrame(schema=LINE_SCHEMA)]
        yield flush()


def read_lines(files: Sequence[Path], settings: Settings | None = None) -> Lines:
    """Every line of every file in one frame (for small inputs and tests)."""
    chunks = list(iter_line_chunks(files, settings=settings))
    return Lines(
        frame=pl.concat([c.frame for c in chunks]),
        files=[f for c in chunks for f in c.files],
    )
