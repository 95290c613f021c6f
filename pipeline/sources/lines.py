"""Bytes to whole numbered lines: a file cut at newlines with a record over the limit
skipped to its newline (counted), and a report file as one record at line 1."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipeline.core.settings import MAX_RECORD_BYTES_ENV, MAX_REPORT_BYTES_ENV
from pipeline.sources.blocks import UTF8_BOM, Cut, Event, Rest, byte_blocks, snippet
from pipeline.sources.discover import source_name
from pipeline.sources.limits import KEPT_PREFIX_BYTES, ReadLimits, oversize_reason

# RFC 8259 section 2: the four characters JSON calls whitespace.
JSON_WHITESPACE = " \t\n\r"

LINE_SCHEMA = {
    "source": pl.String,
    "line": pl.Int64,
    "raw": pl.String,
    "not_utf8": pl.Boolean,
    "file_problem": pl.String,
}


@dataclass(frozen=True)
class Lines:
    """Lines read: row_nr, source, line, raw (text or null), problem (a reason or null)."""

    frame: pl.DataFrame
    files: list[str]
    # What the reader found about a file as a whole, for the run's notes (a gzip cut short
    # after a whole line: no line to quarantine, yet lines may be missing).
    notes: tuple[str, ...] = ()


def split_text(data: bytes) -> pl.DataFrame:
    """Whole lines of text, each without its line ending (one CR before the LF included).

    The happy path is Polars' line scanner, which also checks the UTF-8; only a
    block with bad bytes pays for a decode per line, so that the raw text in
    quarantine still shows a person which bytes were wrong.
    """
    # Polars' scanner inflates a buffer that starts like gzip, zlib or zstd data, and fails on
    # text that only starts like it ("x^" is a zlib header): a buffer that does not start
    # with a record's "{" reaches it behind a newline, whose empty line is dropped.
    guarded = not data.startswith(b"{")
    try:
        lines = pl.scan_lines(b"\n" + data if guarded else data, name="raw").collect()
    except pl.exceptions.ComputeError:
        return _split_bad_text(data)
    return lines.slice(int(guarded)).with_columns(not_utf8=pl.lit(False))


def _split_bad_text(data: bytes) -> pl.DataFrame:
    chunks = data.split(b"\n")
    if chunks and chunks[-1] == b"":
        chunks.pop()
    texts: list[str] = []
    flags: list[bool] = []
    # This loop runs only over a block that holds bytes which are not UTF-8.
    for chunk in chunks:
        try:
            texts.append(chunk.decode("utf-8"))
            flags.append(False)
        except UnicodeDecodeError:
            texts.append(chunk.decode("utf-8", "backslashreplace"))
            flags.append(True)
    return pl.DataFrame(
        {"raw": texts, "not_utf8": flags}, schema={"raw": pl.String, "not_utf8": pl.Boolean}
    ).with_columns(pl.col("raw").str.strip_suffix("\r"))


def number_lines(
    lines: pl.DataFrame, source: str, first_line: int, last_problem: str | None
) -> pl.DataFrame:
    numbered = lines.with_row_index("line", offset=first_line)
    last = pl.col("line") == pl.col("line").max()
    return numbered.select(
        source=pl.lit(source),
        line=pl.col("line").cast(pl.Int64),
        raw=pl.col("raw"),
        not_utf8=pl.col("not_utf8"),
        file_problem=pl.when(last).then(pl.lit(last_problem, dtype=pl.String)),
    )


def one_line(source: str, line: int, raw: str | None, problem: str) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "source": [source],
            "line": [line],
            "raw": [raw],
            "not_utf8": [False],
            "file_problem": [problem],
        },
        schema=LINE_SCHEMA,
    )


@dataclass
class LineCutter:
    """One file's bytes to frames of whole numbered lines, holding at most one record.

    A line longer than the record limit stops being buffered: its first KiB is
    kept for the reason and the rest is skipped up to the next newline, counted.
    """

    source: str
    limits: ReadLimits
    carry: bytearray = field(default_factory=bytearray)
    next_line: int = 1
    started: bool = False
    skipping: int | None = None  # bytes of the oversized line so far
    prefix: bytes = b""
    notes: list[str] = field(default_factory=list)

    def feed(self, block: bytes) -> Iterator[tuple[pl.DataFrame, int]]:
        if not self.started and block:
            block = block.removeprefix(UTF8_BOM)
            self.started = True
        if self.skipping is not None:
            newline = block.find(b"\n")
            if newline < 0:
                self.skipping += len(block)
                return
            self.skipping += newline
            yield self._oversized()
            block = block[newline + 1 :]
        # A bytearray grows in place and drops its front without copying the rest:
        # appending to bytes would copy the whole carry for every block read.
        self.carry += block
        yield from self._whole_chunks()
        last = self.carry.rfind(b"\n")
        if len(self.carry) - last - 1 > self.limits.record_bytes:
            yield from self._frames(bytes(self.carry[: last + 1]))
            self.prefix = bytes(self.carry[last + 1 : last + 1 + KEPT_PREFIX_BYTES])
            self.skipping = len(self.carry) - last - 1
            self.carry.clear()

    def finish(self, event: Event | None) -> Iterator[tuple[pl.DataFrame, int]]:
        if self.skipping is not None:
            yield self._oversized()
        if isinstance(event, Rest):
            if self.next_line == 1 and not self.carry:
                yield one_line(self.source, 0, None, event.reason), 0
                return
            last = self.carry.rfind(b"\n")
            yield from self._frames(bytes(self.carry[: last + 1]))
            tail = bytes(self.carry[last + 1 :])
            raw = snippet(tail) if tail else event.raw
            yield one_line(self.source, self.next_line, raw, event.reason), len(tail)
            return
        if isinstance(event, Cut) and self.next_line == 1 and not self.carry:
            yield one_line(self.source, 0, None, event.reason), 0
            return
        # Only a last line without its newline can have been cut by a truncation.
        cut = event.reason if event is not None and not self.carry.endswith(b"\n") else None
        if isinstance(event, Cut) and cut is None:
            # The cut fell after a whole line: nothing to quarantine, but the file ends early.
            self.notes.append(
                f"{self.source}: {event.reason.split(':')[0]}: every whole line before the cut "
                "was read; any lines after it are not in the file"
            )
        yield from self._frames(bytes(self.carry), cut)

    def _whole_chunks(self) -> Iterator[tuple[pl.DataFrame, int]]:
        chunk_bytes = self.limits.chunk_bytes
        while len(self.carry) >= chunk_bytes:
            cut = self.carry.rfind(b"\n", 0, chunk_bytes) + 1
            if cut == 0:
                # One line longer than a chunk: the chunk ends with it.
                cut = self.carry.find(b"\n", chunk_bytes) + 1
                if cut == 0:
                    return
            data = bytes(self.carry[:cut])
            del self.carry[:cut]
            yield from self._frames(data)

    def _frames(
        self, data: bytes, last_problem: str | None = None
    ) -> Iterator[tuple[pl.DataFrame, int]]:
        if not data:
            return
        lines = split_text(data)
        numbered = number_lines(lines, self.source, self.next_line, last_problem)
        self.next_line += lines.height
        # At most chunk_lines lines a frame: short lines cost memory per line, not per byte.
        step = self.limits.chunk_lines
        for offset in range(0, numbered.height, step):
            piece = numbered.slice(offset, step)
            yield piece, len(data) * piece.height // max(numbered.height, 1)

    def _oversized(self) -> tuple[pl.DataFrame, int]:
        size = self.skipping or 0
        reason = oversize_reason(size, self.limits.record_bytes, MAX_RECORD_BYTES_ENV)
        row = one_line(self.source, self.next_line, snippet(self.prefix) + "…", reason)
        kept = len(self.prefix)
        self.next_line += 1
        self.skipping, self.prefix = None, b""
        return row, kept


EMPTY_REPORT = "the report file is empty (no JSON object in it)"


def report_frames(path: Path, limits: ReadLimits) -> Iterator[tuple[pl.DataFrame, int]]:
    """One report per file: the whole text is the record, at line 1, up to the report limit."""
    source = source_name(path)
    carry = bytearray()
    event: Event | None = None
    for block, happened in byte_blocks(path, limits.expanded_bytes):
        event = happened or event
        carry += block
        if len(carry) > limits.report_bytes:
            size = max(path.stat().st_size, len(carry))
            reason = oversize_reason(size, limits.report_bytes, MAX_REPORT_BYTES_ENV, "report")
            yield one_line(source, 1, snippet(bytes(carry)) + "…", reason), 0
            return
    if isinstance(event, Rest) and not carry:
        yield one_line(source, 0, None, event.reason), 0
        return
    if carry.removeprefix(UTF8_BOM).strip(JSON_WHITESPACE.encode()):
        flat = bytes(carry.removeprefix(UTF8_BOM)).replace(b"\n", b" ").replace(b"\r", b" ")
        text = split_text(flat + b"\n")
        yield number_lines(text, source, 1, None if event is None else event.reason), len(carry)
    elif event is None or isinstance(event, Cut):
        # A report is one object: an empty file (a writer that died before writing it) is
        # a report that is not there, said at its one line, not passed over.
        yield one_line(source, 1, snippet(bytes(carry)), EMPTY_REPORT), len(carry)
