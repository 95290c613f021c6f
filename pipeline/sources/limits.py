"""The reader's limits: how big one record, one report and one expanded file may be,
how deep a record may nest, and how much text a chunk holds.

Each record limit can be set from the environment; a bad value is refused by name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pipeline.storage.lake import InputError

# Limits on one record, so that a hostile line is quarantined instead of being
# parsed into memory without bound (json_tree paths grow with depth squared).
# Each can be set from the environment; a bad value is refused by name.
DEFAULT_MAX_RECORD_BYTES = 16 * 1024 * 1024
# A report file (.json) is one record: mcp-xray writes ~36 kB per tool (a 600-tool
# server's report is 21.5 MB), so reports get room for a few thousand tools.
DEFAULT_MAX_REPORT_BYTES = 128 * 1024 * 1024
DEFAULT_MAX_DEPTH = 64
# What one compressed file may expand to; past it the rest is one counted block.
DEFAULT_MAX_EXPANDED_BYTES = 8 * 1024**3
MAX_RECORD_BYTES_ENV = "PIPELINE_MAX_RECORD_BYTES"
MAX_REPORT_BYTES_ENV = "PIPELINE_MAX_REPORT_BYTES"
MAX_DEPTH_ENV = "PIPELINE_MAX_DEPTH"
MAX_EXPANDED_BYTES_ENV = "PIPELINE_MAX_EXPANDED_BYTES"
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
OVERSIZE_REASON = (
    "{} is {} bytes, over the limit of {} bytes (raw text cut to 1 KiB; the limit is {})"
)


@dataclass(frozen=True)
class Limits:
    """Per-record limits; None takes the environment variable, then the default."""

    max_record_bytes: int | None = None
    max_depth: int | None = None
    max_report_bytes: int | None = None
    max_expanded_bytes: int | None = None


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
    def resolve(
        cls,
        limits: Limits | None = None,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        chunk_lines: int = DEFAULT_CHUNK_LINES,
    ) -> ReadLimits:
        chosen = limits or Limits()

        def pick(value: int | None, env: str, default: int) -> int:
            return limit_from_env(env, default) if value is None else value

        return cls(
            record_bytes=pick(
                chosen.max_record_bytes, MAX_RECORD_BYTES_ENV, DEFAULT_MAX_RECORD_BYTES
            ),
            report_bytes=pick(
                chosen.max_report_bytes, MAX_REPORT_BYTES_ENV, DEFAULT_MAX_REPORT_BYTES
            ),
            depth=pick(chosen.max_depth, MAX_DEPTH_ENV, DEFAULT_MAX_DEPTH),
            expanded_bytes=pick(
                chosen.max_expanded_bytes, MAX_EXPANDED_BYTES_ENV, DEFAULT_MAX_EXPANDED_BYTES
            ),
            chunk_bytes=chunk_bytes,
            chunk_lines=chunk_lines,
        )


def limit_from_env(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit() or int(text) < 1:
        raise InputError(f"{name}={text!r}: expected a whole number >= 1 (default {default})")
    return int(text)


def max_record_bytes_setting() -> int:
    """PIPELINE_MAX_RECORD_BYTES, else 16 MiB."""
    return limit_from_env(MAX_RECORD_BYTES_ENV, DEFAULT_MAX_RECORD_BYTES)


def max_depth_setting() -> int:
    """PIPELINE_MAX_DEPTH, else 64 levels of objects and lists."""
    return limit_from_env(MAX_DEPTH_ENV, DEFAULT_MAX_DEPTH)


def oversize_reason(size: int, limit: int, setting: str, what: str = "record") -> str:
    return OVERSIZE_REASON.format(what, size, limit, setting)
