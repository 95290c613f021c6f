"""Where inputs come from: files of task and surface grades, and Inspect AI eval logs.

A file's path through the reader, a module a step: ``discover`` (which files, named
how) -> ``blocks`` (its bytes, gzip members inflated up to the expansion limit) ->
``lines`` (whole numbered lines, a record over the limit skipped to its newline) ->
``problems`` (what is wrong with a line on its text alone) -> ``chunks`` (lines in
chunks of bounded size). ``limits`` holds what bounds each step.

Names load on first use: the rubric imports ``pipeline.sources.inspect.columns`` at
start-up, and ``--help`` must not pay for Polars.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.core.lazy import by_name, lazy_getattr

if TYPE_CHECKING:
    from pipeline.sources.chunks import iter_line_chunks, read_lines
    from pipeline.sources.discover import (
        INPUT_SUFFIXES,
        Inputs,
        expand_inputs,
        scan_inputs,
        source_name,
    )
    from pipeline.sources.limits import ReadLimits
    from pipeline.sources.lines import LINE_SCHEMA, Lines
    from pipeline.sources.problems import lines_of_text, nesting_depth

_HOMES = by_name(
    {
        "chunks": ("iter_line_chunks", "read_lines"),
        "discover": ("INPUT_SUFFIXES", "Inputs", "expand_inputs", "scan_inputs", "source_name"),
        "limits": ("ReadLimits",),
        "lines": ("LINE_SCHEMA", "Lines"),
        "problems": ("lines_of_text", "nesting_depth"),
    }
)

# Literal, not derived from _HOMES: the type checkers' imports above count as used only
# through it.
__all__ = [
    "INPUT_SUFFIXES",
    "LINE_SCHEMA",
    "Inputs",
    "Lines",
    "ReadLimits",
    "expand_inputs",
    "iter_line_chunks",
    "lines_of_text",
    "nesting_depth",
    "read_lines",
    "scan_inputs",
    "source_name",
]
__getattr__ = lazy_getattr(__name__, _HOMES)
