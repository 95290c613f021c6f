"""What bounds the reader: the record limits of the command's settings
(pipeline/core/settings.py), how much text a chunk holds, and the reason a record
over a limit is quarantined with."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.core.settings import DUCKDB_MEMORY_ENV, Settings, set_by

# 64 MiB of text per chunk: measured on a 175 MB file, peak RSS 2.9 GiB at 256 MiB,
# 2.4 at 128, 1.7 at 64, 1.3 at 32, for 10-25% more time at 64 than at 256 (a
# chunk has a fixed cost, and DuckDB's threads have less to share per query).
DEFAULT_CHUNK_BYTES = 64 * 1024 * 1024
# And at most this many lines: a line costs ~1 KiB of working memory whatever its
# length, so 64 MiB of 3-byte lines (21M of them) would need ~20 GiB in one chunk.
DEFAULT_CHUNK_LINES = 100_000
# Raw text kept in quarantine for a record over the size limit.
KEPT_PREFIX_CHARS = 1024
KEPT_PREFIX_BYTES = 1024
# How much of an unforeseen error's message a quarantine reason keeps.
FAILURE_TEXT_CHARS = 300
OVERSIZE_REASON = "{} is {} bytes, over the limit of {} bytes ({}the limit is set by {})"
# What an input that DuckDB ran out of memory on asks of the user: its per-connection memory
# is a setting; a dense report near the 128 MiB limit can need more than the default.
OUT_OF_MEMORY_HINT = "DuckDB's memory per connection is set by {}: raise it and read the file again"
# What an oversize record or report keeps of its text; an Inspect log keeps none.
CUT_TEXT = "raw text cut to 1 KiB; "


@dataclass(frozen=True)
class ReadLimits:
    """Every limit the reader applies, resolved."""

    record_bytes: int
    report_bytes: int
    depth: int
    expanded_bytes: int
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    chunk_lines: int = DEFAULT_CHUNK_LINES

    @classmethod
    def of(
        cls,
        settings: Settings,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        chunk_lines: int = DEFAULT_CHUNK_LINES,
    ) -> ReadLimits:
        return cls(
            record_bytes=settings.max_record_bytes,
            report_bytes=settings.max_report_bytes,
            depth=settings.max_depth,
            expanded_bytes=settings.max_expanded_bytes,
            chunk_bytes=chunk_bytes,
            chunk_lines=chunk_lines,
        )


def oversize_reason(
    size: int, limit: int, setting: str, what: str = "record", kept: bool = True
) -> str:
    """``setting``: the variable of the limit, named with its flag (settings.set_by);
    ``kept``: whether the quarantine row keeps the start of its text."""
    return OVERSIZE_REASON.format(what, size, limit, CUT_TEXT if kept else "", set_by(setting))


def failure_text(exc: BaseException) -> str:
    """An unforeseen error as a quarantine reason: its type and its message's first line,
    and for a validation error (pydantic's, as Inspect's log models raise), where the first
    of its errors is and what it is: its first line only counts them."""
    first = (str(exc).strip().splitlines() or [""])[0]
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            error = errors()[0]
            where = ".".join(str(part) for part in error["loc"]) or "the top"
            first = f"{first}, the first at {where}: {error['msg']}"
        except (TypeError, LookupError, ValueError):
            pass  # not pydantic's shape: its first line says what it says
    first = first[:FAILURE_TEXT_CHARS]
    text = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    if type(exc).__name__ == "OutOfMemoryException":  # DuckDB's, not imported here
        # The input is valid as far as anything read it: what it needs is more memory.
        text += f" ({OUT_OF_MEMORY_HINT.format(set_by(DUCKDB_MEMORY_ENV))})"
    return text
