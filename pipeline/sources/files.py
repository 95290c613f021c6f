"""Input files to numbered lines, in chunks of bounded size.

A chunk holds whole lines only and at most about ``chunk_bytes`` of text, so
a file of ten million lines is read without holding it all in memory. Lines
keep their file and 1-based line number; a file that cannot be read at all
becomes one entry at line 0, so it is counted like any line.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import polars as pl

from pipeline.sources.inspect.columns import InspectMapping
from pipeline.sources.inspect.table import inspect_frames, is_inspect_log
from pipeline.storage.lake import InputError

# .eval: Inspect AI logs (a .json file may be one too: told apart by its first bytes).
INPUT_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".eval")
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
# A JSON string literal, escapes included: brackets inside one do not nest.
_JSON_STRING = r'"(?:[^"\\]|\\.)*"'
# 64 MiB of text per chunk: measured on a 175 MB file, peak RSS 2.9 GiB at 256 MiB,
# 2.4 at 128, 1.7 at 64, 1.3 at 32, for 10-25% more time at 64 than at 256 (a
# chunk has a fixed cost, and DuckDB's threads have less to share per query).
DEFAULT_CHUNK_BYTES = 64 * 1024 * 1024
# And at most this many lines: a line costs ~1 KiB of working memory whatever its
# length, so 64 MiB of 3-byte lines (21M of them) would need ~20 GiB in one chunk.
DEFAULT_CHUNK_LINES = 100_000
READ_BLOCK_BYTES = 16 * 1024 * 1024
# Raw text kept in quarantine for a record over the size limit.
KEPT_PREFIX_CHARS = 1024
KEPT_PREFIX_BYTES = 1024
UTF8_BOM = b"\xef\xbb\xbf"
GZIP_MAGIC = b"\x1f\x8b"
OVERSIZE_REASON = (
    "{} is {} bytes, over the limit of {} bytes (raw text cut to 1 KiB; the limit is {})"
)

LINE_SCHEMA = {
    "source": pl.String,
    "line": pl.Int64,
    "raw": pl.String,
    "not_utf8": pl.Boolean,
    "file_problem": pl.String,
}


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


@dataclass(frozen=True)
class Lines:
    """Lines read: row_nr, source, line, raw (text or null), problem (a reason or null)."""

    frame: pl.DataFrame
    files: list[str]


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


def nesting_depth(raw: pl.Expr) -> pl.Expr:
    """How deep brackets nest in a line, outside string literals (0 for a scalar).

    Text only, no parse: string literals are removed, the brackets left are a
    walk of +1 / -1 steps, and the depth is the walk's highest point.
    """
    brackets = raw.str.replace_all(_JSON_STRING, "").str.replace_all(r"[^\[\]{}]", "")
    steps = pl.element().is_in(["[", "{"]).cast(pl.Int32) * 2 - 1
    return brackets.str.split("").list.eval(steps.cum_sum()).list.max().fill_null(0)


@dataclass(frozen=True)
class Inputs:
    """The files to read, and a note for each path skipped unread."""

    files: list[Path]
    skipped: list[str]


def _skip_note(path: Path, why: str) -> str:
    return f"{path}: {why}, skipped unread (only regular files inside the input folder are read)"


def _scan_folder(folder: Path) -> Inputs:
    """Regular input files below ``folder`` whose real path lies inside it; links never followed.

    A link in an inbox could otherwise copy any file the pipeline's user can read
    into the quarantine, where every analyst reads it.
    """
    root = folder.resolve()
    files: list[Path] = []
    skipped: list[str] = []
    for top, dirs, names in os.walk(folder):
        here = Path(top)
        for name in sorted(dirs):
            if (here / name).is_symlink():
                skipped.append(_skip_note(here / name, "a symbolic link to a folder"))
        for name in names:
            path = here / name
            if path.is_symlink():
                skipped.append(_skip_note(path, "a symbolic link"))
            elif not name.endswith(INPUT_SUFFIXES):
                continue
            elif not path.is_file():
                skipped.append(_skip_note(path, "not a regular file"))
            elif not path.resolve().is_relative_to(root):
                skipped.append(_skip_note(path, "its real path lies outside the folder"))
            else:
                files.append(path)
    return Inputs(files=sorted(files), skipped=sorted(skipped))


def source_name(path: Path) -> str:
    """How a file is named in the lake: by where it is, not by how it was spelled.

    ``x.jsonl``, ``./d/../x.jsonl`` and ``/abs/x.jsonl`` are one file, so its lines
    are one set of lines: a bad line read again is "seen".
    """
    return str(path.resolve())


def is_input_file(path: Path) -> bool:
    return path.is_file() and path.name.endswith(INPUT_SUFFIXES)


def scan_inputs(inputs: Sequence[Path], lake: Path | None = None) -> Inputs:
    """Files as given; directories as every input file below them, in sorted order.

    Symbolic links (given, or met in a folder) are skipped with a note, never read.
    Each file is resolved, and named once however many inputs name it; a folder that
    holds the ``lake`` does not give the lake's own files (its state is JSON).
    """
    own = lake.resolve() if lake is not None else None
    files: list[Path] = []
    skipped: list[str] = []
    for item in inputs:
        if item.is_symlink():
            skipped.append(_skip_note(item, "a symbolic link"))
        elif item.is_dir():
            found = _scan_folder(item)
            files.extend(
                p
                for p in (f.resolve() for f in found.files)
                if own is None or not p.is_relative_to(own)
            )
            skipped.extend(found.skipped)
        elif item.is_file():
            files.append(item.resolve())
        else:
            raise InputError(f"no such input: {item}")
    return Inputs(files=list(dict.fromkeys(files)), skipped=skipped)


def expand_inputs(inputs: Sequence[Path], lake: Path | None = None) -> list[Path]:
    """The files ``scan_inputs`` would read (its notes aside)."""
    return scan_inputs(inputs, lake).files


def _split_text(data: bytes) -> pl.DataFrame:
    """Whole lines of text, each without its line ending (one CR before the LF included).

    The happy path is Polars' line scanner, which also checks the UTF-8; only a
    block with bad bytes pays for a decode per line, so that the raw text in
    quarantine still shows a person which bytes were wrong.
    """
    try:
        lines = pl.scan_lines(data, name="raw").collect()
    except pl.exceptions.ComputeError:
        return _split_bad_text(data)
    return lines.with_columns(not_utf8=pl.lit(False))


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


@dataclass(frozen=True)
class _Cut:
    """The stream ended early: the last line, if it has no newline, may be cut."""

    reason: str


@dataclass(frozen=True)
class _Rest:
    """Reading stopped here: the rest of the file is one counted block with this reason."""

    reason: str
    raw: str | None = None


_Event = _Cut | _Rest


def _snippet(data: bytes) -> str:
    return data[:KEPT_PREFIX_BYTES].decode("utf-8", "backslashreplace")


def _byte_blocks(path: Path, max_expanded: int) -> Iterator[tuple[bytes, _Event | None]]:
    """The file's bytes in blocks, decompressed; an event ends the blocks."""
    try:
        with open(path, "rb") as handle:
            if not path.name.endswith(".gz"):
                while block := handle.read(READ_BLOCK_BYTES):
                    yield block, None
                return
            yield from _gzip_blocks(handle, max_expanded)
    except OSError as exc:
        yield b"", _Rest(f"could not read the file ({exc.strerror or exc}): the rest is not read")


def _gzip_blocks(handle: BinaryIO, max_expanded: int) -> Iterator[tuple[bytes, _Event | None]]:
    """Every gzip member of the file in turn (``cat a.gz b.gz`` is one valid gzip file).

    Each call inflates at most one block, so a small file that expands a thousandfold
    is read in blocks like any other, and stops once it has expanded past the limit.
    """
    inflater = zlib.decompressobj(wbits=31)
    expanded = 0
    data = b""
    while True:
        if not data:
            data = handle.read(READ_BLOCK_BYTES)
            if not data:
                break
        try:
            out = inflater.decompress(data, READ_BLOCK_BYTES)
        except zlib.error as exc:
            yield b"", _Rest(f"not a readable gzip file ({exc}): the rest is not read")
            return
        data = inflater.unconsumed_tail
        expanded += len(out)
        if expanded > max_expanded:
            yield out[: len(out) - (expanded - max_expanded)], None
            yield (
                b"",
                _Rest(
                    f"decompressed past the limit of {max_expanded} bytes (the limit is "
                    f"{MAX_EXPANDED_BYTES_ENV}): the rest of the file is not read"
                ),
            )
            return
        if out:
            yield out, None
        if inflater.eof:
            data = inflater.unused_data + (b"" if inflater.unused_data else handle.read(2))
            if len(data) == 1:
                data += handle.read(1)
            if not data:
                return
            if not data.startswith(GZIP_MAGIC):
                left = len(data) + _bytes_left(handle)
                yield (
                    b"",
                    _Rest(
                        "trailing bytes after the end of the gzip data are not gzip "
                        f"({left} bytes, not read)",
                        _snippet(data),
                    ),
                )
                return
            inflater = zlib.decompressobj(wbits=31)
    if not inflater.eof:
        yield b"", _Cut("gzip stream ends early (file truncated): the last line may be cut")


def _bytes_left(handle: BinaryIO) -> int:
    here = handle.tell()
    return handle.seek(0, os.SEEK_END) - here


def _numbered(
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


def _one_line(source: str, line: int, raw: str | None, problem: str) -> pl.DataFrame:
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


def oversize_reason(size: int, limit: int, setting: str, what: str = "record") -> str:
    return OVERSIZE_REASON.format(what, size, limit, setting)


@dataclass
class _LineCutter:
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

    def finish(self, event: _Event | None) -> Iterator[tuple[pl.DataFrame, int]]:
        if self.skipping is not None:
            yield self._oversized()
        if isinstance(event, _Rest):
            if self.next_line == 1 and not self.carry:
                yield _one_line(self.source, 0, None, event.reason), 0
                return
            last = self.carry.rfind(b"\n")
            yield from self._frames(bytes(self.carry[: last + 1]))
            tail = bytes(self.carry[last + 1 :])
            raw = _snippet(tail) if tail else event.raw
            yield _one_line(self.source, self.next_line, raw, event.reason), len(tail)
            return
        if isinstance(event, _Cut) and self.next_line == 1 and not self.carry:
            yield _one_line(self.source, 0, None, event.reason), 0
            return
        # Only a last line without its newline can have been cut by a truncation.
        cut = event.reason if event is not None and not self.carry.endswith(b"\n") else None
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
        lines = _split_text(data)
        numbered = _numbered(lines, self.source, self.next_line, last_problem)
        self.next_line += lines.height
        # At most chunk_lines lines a frame: short lines cost memory per line, not per byte.
        step = self.limits.chunk_lines
        for offset in range(0, numbered.height, step):
            piece = numbered.slice(offset, step)
            yield piece, len(data) * piece.height // max(numbered.height, 1)

    def _oversized(self) -> tuple[pl.DataFrame, int]:
        size = self.skipping or 0
        reason = oversize_reason(size, self.limits.record_bytes, MAX_RECORD_BYTES_ENV)
        row = _one_line(self.source, self.next_line, _snippet(self.prefix) + "…", reason)
        kept = len(self.prefix)
        self.next_line += 1
        self.skipping, self.prefix = None, b""
        return row, kept


def _report_frames(path: Path, limits: ReadLimits) -> Iterator[tuple[pl.DataFrame, int]]:
    """One report per file: the whole text is the record, at line 1, up to the report limit."""
    source = source_name(path)
    carry = bytearray()
    event: _Event | None = None
    for block, happened in _byte_blocks(path, limits.expanded_bytes):
        event = happened or event
        carry += block
        if len(carry) > limits.report_bytes:
            size = max(path.stat().st_size, len(carry))
            reason = oversize_reason(size, limits.report_bytes, MAX_REPORT_BYTES_ENV, "report")
            yield _one_line(source, 1, _snippet(bytes(carry)) + "…", reason), 0
            return
    if isinstance(event, _Rest) and not carry:
        yield _one_line(source, 0, None, event.reason), 0
        return
    if carry.strip():
        flat = bytes(carry.removeprefix(UTF8_BOM)).replace(b"\n", b" ").replace(b"\r", b" ")
        text = _split_text(flat + b"\n")
        yield _numbered(text, source, 1, None if event is None else event.reason), len(carry)


def _file_frames(
    path: Path, limits: ReadLimits, inspect: InspectMapping | None = None
) -> Iterator[tuple[pl.DataFrame, int]]:
    """Frames of whole numbered lines of one file, each at most chunk_bytes of input.

    Each frame comes with the input bytes it holds (line endings included), so
    the caller can cut chunks on the same measure. An Inspect AI log gives one
    task-grade record per sample and epoch instead of lines.
    """
    if is_inspect_log(path):
        yield from inspect_frames(path, limits, inspect)
        return
    if path.name.endswith(".json"):
        yield from _report_frames(path, limits)
        return
    cutter = _LineCutter(source_name(path), limits)
    event: _Event | None = None
    for block, event in _byte_blocks(path, limits.expanded_bytes):
        if event is not None:
            break
        yield from cutter.feed(block)
    yield from cutter.finish(event)


def _with_problems(raw: pl.DataFrame, first_row: int, limits: ReadLimits) -> pl.DataFrame:
    report = pl.col("source").str.ends_with(".json")
    limit = pl.when(report).then(limits.report_bytes).otherwise(limits.record_bytes)
    over = pl.col("size") > pl.col("limit")
    sized = raw.with_row_index("row_nr", offset=first_row).with_columns(
        size=pl.col("raw").str.len_bytes(), limit=limit
    )
    # A line cannot nest deeper than it has opening brackets: only lines with
    # more than max_depth of them are measured.
    suspects = sized.filter(~over & (pl.col("raw").str.count_matches(r"[\[{]") > limits.depth))
    depths = suspects.select("row_nr", depth=nesting_depth(pl.col("raw")))
    measured = sized.join(depths, on="row_nr", how="left", maintain_order="left")
    too_deep = (pl.col("depth") > limits.depth).fill_null(False)
    return measured.select(
        "row_nr",
        "source",
        "line",
        pl.when(over)
        .then(pl.col("raw").str.slice(0, KEPT_PREFIX_CHARS) + pl.lit("…"))
        .otherwise(pl.col("raw"))
        .alias("raw"),
        problem=pl.when(pl.col("file_problem").is_not_null())
        .then(pl.col("file_problem"))
        .when(pl.col("not_utf8"))
        .then(pl.lit("line is not valid UTF-8 (bad bytes shown as \\x escapes)"))
        .when(over)
        .then(
            pl.format(
                OVERSIZE_REASON,
                pl.when(report).then(pl.lit("report")).otherwise(pl.lit("record")),
                pl.col("size"),
                pl.col("limit"),
                pl.when(report)
                .then(pl.lit(MAX_REPORT_BYTES_ENV))
                .otherwise(pl.lit(MAX_RECORD_BYTES_ENV)),
            )
        )
        .when(too_deep)
        .then(
            pl.format(
                "record nests {} levels deep, over the limit of {} (the limit is {})",
                pl.col("depth"),
                pl.lit(limits.depth),
                pl.lit(MAX_DEPTH_ENV),
            )
        ),
    )


def lines_of_text(raw: pl.DataFrame, files: Sequence[str]) -> Lines:
    """Lines already read (LINE_SCHEMA rows), checked against the limits like any input."""
    # CRLF: the carriage return belongs to the line ending, as when a file is read.
    stripped = raw.with_columns(pl.col("raw").str.strip_suffix("\r"))
    return Lines(frame=_with_problems(stripped, 0, ReadLimits.resolve()), files=list(files))


def iter_line_chunks(
    files: Sequence[Path],
    *,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    chunk_lines: int = DEFAULT_CHUNK_LINES,
    limits: Limits | None = None,
    inspect: InspectMapping | None = None,
) -> Iterator[Lines]:
    """Every line of every file, numbered, in chunks; always at least one chunk.

    A chunk holds at most chunk_bytes of input and chunk_lines lines. Limits
    left as None come from the environment, else the defaults. ``inspect`` is the
    rubric's ``[sources.inspect]`` mapping for Inspect AI logs.
    """
    resolved = ReadLimits.resolve(limits, chunk_bytes, chunk_lines)
    pending: list[pl.DataFrame] = []
    pending_bytes = pending_lines = 0
    pending_files: list[str] = []
    next_row = 0
    yielded = False

    def flush() -> Lines:
        nonlocal next_row
        chunk = _with_problems(pl.concat(pending), next_row, resolved)
        next_row += chunk.height
        return Lines(frame=chunk, files=pending_files)

    for path in files:
        for frame, size in _file_frames(path, resolved, inspect):
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
    if pending or not yielded:
        if not pending:
            pending = [pl.DataFrame(schema=LINE_SCHEMA)]
        yield flush()


def read_lines(files: Sequence[Path], limits: Limits | None = None) -> Lines:
    """Every line of every file in one frame (for small inputs and tests)."""
    chunks = list(iter_line_chunks(files, limits=limits))
    return Lines(
        frame=pl.concat([c.frame for c in chunks]),
        files=[f for c in chunks for f in c.files],
    )
