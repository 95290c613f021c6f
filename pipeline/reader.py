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
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from pipeline.lake import InputError

INPUT_SUFFIXES = (".jsonl", ".jsonl.gz", ".json")
# Limits on one record, so that a hostile line is quarantined instead of being
# parsed into memory without bound (json_tree paths grow with depth squared).
# Either can be set from the environment; a bad value is refused by name.
DEFAULT_MAX_RECORD_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_DEPTH = 64
MAX_RECORD_BYTES_ENV = "PIPELINE_MAX_RECORD_BYTES"
MAX_DEPTH_ENV = "PIPELINE_MAX_DEPTH"
# A JSON string literal, escapes included: brackets inside one do not nest.
_JSON_STRING = r'"(?:[^"\\]|\\.)*"'
# 64 MiB of text per chunk: measured on a 175 MB file, peak RSS 2.9 GiB at 256 MiB,
# 2.4 at 128, 1.7 at 64, 1.3 at 32, for 10-25% more time at 64 than at 256 (a
# chunk has a fixed cost, and DuckDB's threads have less to share per query).
DEFAULT_CHUNK_BYTES = 64 * 1024 * 1024
READ_BLOCK_BYTES = 16 * 1024 * 1024
# Raw text kept in quarantine for a record over the size limit.
KEPT_PREFIX_CHARS = 1024
UTF8_BOM = b"\xef\xbb\xbf"

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


@dataclass(frozen=True)
class Lines:
    """Lines read: row_nr, source, line, raw (text or null), problem (a reason or null)."""

    frame: pl.DataFrame
    files: list[str]


def _limit_from_env(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit() or int(text) < 1:
        raise InputError(f"{name}={text!r}: expected a whole number >= 1 (default {default})")
    return int(text)


def max_record_bytes_setting() -> int:
    """PIPELINE_MAX_RECORD_BYTES, else 16 MiB."""
    return _limit_from_env(MAX_RECORD_BYTES_ENV, DEFAULT_MAX_RECORD_BYTES)


def max_depth_setting() -> int:
    """PIPELINE_MAX_DEPTH, else 64 levels of objects and lists."""
    return _limit_from_env(MAX_DEPTH_ENV, DEFAULT_MAX_DEPTH)


def nesting_depth(raw: pl.Expr) -> pl.Expr:
    """How deep brackets nest in a line, outside string literals (0 for a scalar).

    Text only, no parse: string literals are removed, the brackets left are a
    walk of +1 / -1 steps, and the depth is the walk's highest point.
    """
    brackets = raw.str.replace_all(_JSON_STRING, "").str.replace_all(r"[^\[\]{}]", "")
    steps = pl.element().is_in(["[", "{"]).cast(pl.Int32) * 2 - 1
    return brackets.str.split("").list.eval(steps.cum_sum()).list.max().fill_null(0)


def is_input_file(path: Path) -> bool:
    return path.is_file() and path.name.endswith(INPUT_SUFFIXES)


def source_name(path: Path) -> str:
    """How a file is named in the lake: by where it is, not by how it was spelled.

    ``x.jsonl``, ``./d/../x.jsonl`` and ``/abs/x.jsonl`` (or a symlink to it) are one
    file, so its lines are one set of lines: a bad line read again is "seen".
    """
    return str(path.resolve())


def expand_inputs(inputs: Sequence[Path], lake: Path | None = None) -> list[Path]:
    """Files as given; directories as every input file below them, in sorted order.

    Each file resolved, and once, however many inputs name it. A folder that holds
    the ``lake`` does not give the lake's own files (its state and manifests are JSON).
    """
    own = lake.resolve() if lake is not None else None
    files: list[Path] = []
    for item in inputs:
        if item.is_dir():
            found = sorted(p.resolve() for p in item.rglob("*") if is_input_file(p))
            files.extend(p for p in found if own is None or not p.is_relative_to(own))
        elif item.is_file():
            files.append(item.resolve())
        else:
            raise InputError(f"no such input: {item}")
    return list(dict.fromkeys(files))


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


def _byte_blocks(path: Path) -> Iterator[tuple[bytes, str | None]]:
    """The file's bytes in blocks, decompressed; a problem with the last block."""
    with open(path, "rb") as handle:
        if not path.name.endswith(".gz"):
            while block := handle.read(READ_BLOCK_BYTES):
                yield block, None
            return
        inflater = zlib.decompressobj(wbits=31)
        while block := handle.read(READ_BLOCK_BYTES):
            try:
                yield inflater.decompress(block), None
            except zlib.error as exc:
                yield b"", f"not a readable gzip file ({exc})"
                return
            if inflater.eof:
                return
        yield (
            inflater.flush(),
            (
                None
                if inflater.eof
                else "gzip stream ends early (file truncated): the last line may be cut"
            ),
        )


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


def _whole_file_problem(source: str, problem: str) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "source": [source],
            "line": [0],
            "raw": [None],
            "not_utf8": [False],
            "file_problem": [problem],
        },
        schema=LINE_SCHEMA,
    )


def _file_frames(path: Path, chunk_bytes: int) -> Iterator[tuple[pl.DataFrame, int]]:
    """Frames of whole numbered lines of one file, each at most chunk_bytes of input.

    Each frame comes with the input bytes it holds (line endings included), so
    the caller can cut chunks on the same measure.
    """
    source = source_name(path)
    # A bytearray grows in place and drops its front without copying the rest:
    # appending to bytes would copy the whole carry for every block read.
    carry = bytearray()
    next_line = 1
    first = True
    problem: str | None = None
    one_record = path.name.endswith(".json")
    for block, problem in _byte_blocks(path):
        if first and block:
            block = block.removeprefix(UTF8_BOM)
            first = False
        carry += block
        if one_record or problem is not None:
            continue
        while len(carry) >= chunk_bytes:
            cut = carry.rfind(b"\n", 0, chunk_bytes) + 1
            if cut == 0:
                # One line longer than a chunk: the chunk ends with it.
                cut = carry.find(b"\n", chunk_bytes) + 1
                if cut == 0:
                    break
            lines = _split_text(bytes(carry[:cut]))
            del carry[:cut]
            yield _numbered(lines, source, next_line, None), cut
            next_line += lines.height
    if problem is not None and next_line == 1 and not carry:
        yield _whole_file_problem(source, problem), 0
        return
    if one_record:
        # One report per file: the whole text is the record, at line 1.
        if carry.strip():
            text = _split_text(bytes(carry).replace(b"\n", b" ").replace(b"\r", b" ") + b"\n")
            yield _numbered(text, source, 1, problem), len(carry)
        return
    # Only a last line without its newline can have been cut by a truncation.
    cut_problem = problem if problem is not None and not carry.endswith(b"\n") else None
    lines = _split_text(bytes(carry))
    if lines.height:
        yield _numbered(lines, source, next_line, cut_problem), len(carry)


def _with_problems(
    raw: pl.DataFrame, first_row: int, max_record_bytes: int, max_depth: int
) -> pl.DataFrame:
    sized = raw.with_row_index("row_nr", offset=first_row).with_columns(
        size=pl.col("raw").str.len_bytes()
    )
    # A line cannot nest deeper than it has opening brackets: only lines with
    # more than max_depth of them are measured.
    suspects = sized.filter(
        (pl.col("size") <= max_record_bytes)
        & (pl.col("raw").str.count_matches(r"[\[{]") > max_depth)
    )
    depths = suspects.select("row_nr", depth=nesting_depth(pl.col("raw")))
    measured = sized.join(depths, on="row_nr", how="left", maintain_order="left")
    too_deep = (pl.col("depth") > max_depth).fill_null(False)
    return measured.select(
        "row_nr",
        "source",
        "line",
        pl.when(pl.col("size") > max_record_bytes)
        .then(pl.col("raw").str.slice(0, KEPT_PREFIX_CHARS) + pl.lit("…"))
        .otherwise(pl.col("raw"))
        .alias("raw"),
        problem=pl.when(pl.col("file_problem").is_not_null())
        .then(pl.col("file_problem"))
        .when(pl.col("not_utf8"))
        .then(pl.lit("line is not valid UTF-8 (bad bytes shown as \\x escapes)"))
        .when(pl.col("size") > max_record_bytes)
        .then(
            pl.format(
                "record is {} bytes, over the limit of {} bytes (raw text cut to 1 KiB; "
                "the limit is {})",
                pl.col("size"),
                pl.lit(max_record_bytes),
                pl.lit(MAX_RECORD_BYTES_ENV),
            )
        )
        .when(too_deep)
        .then(
            pl.format(
                "record nests {} levels deep, over the limit of {} (the limit is {})",
                pl.col("depth"),
                pl.lit(max_depth),
                pl.lit(MAX_DEPTH_ENV),
            )
        ),
    )


def lines_of_text(raw: pl.DataFrame, files: Sequence[str]) -> Lines:
    """Lines already read (LINE_SCHEMA rows), checked against the limits like any input."""
    # CRLF: the carriage return belongs to the line ending, as when a file is read.
    stripped = raw.with_columns(pl.col("raw").str.strip_suffix("\r"))
    return Lines(
        frame=_with_problems(stripped, 0, max_record_bytes_setting(), max_depth_setting()),
        files=list(files),
    )


def iter_line_chunks(
    files: Sequence[Path],
    *,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    max_record_bytes: int | None = None,
    max_depth: int | None = None,
) -> Iterator[Lines]:
    """Every line of every file, numbered, in chunks; always at least one chunk.

    Limits left as None come from the environment, else the defaults.
    """
    size_limit = max_record_bytes_setting() if max_record_bytes is None else max_record_bytes
    depth_limit = max_depth_setting() if max_depth is None else max_depth
    pending: list[pl.DataFrame] = []
    pending_bytes = 0
    pending_files: list[str] = []
    next_row = 0
    yielded = False

    def flush() -> Lines:
        nonlocal next_row
        chunk = _with_problems(pl.concat(pending), next_row, size_limit, depth_limit)
        next_row += chunk.height
        return Lines(frame=chunk, files=pending_files)

    for path in files:
        source = source_name(path)
        for frame, size in _file_frames(path, chunk_bytes):
            # A chunk stays within chunk_bytes: what is pending goes first when
            # this frame would take it over.
            if pending and pending_bytes + size > chunk_bytes:
                yield flush()
                yielded = True
                pending, pending_bytes, pending_files = [], 0, []
            pending.append(frame)
            pending_bytes += size
            # Every part names each file it holds lines of, so a part that is
            # lost names the files to read again, the middle of a file included.
            if source not in pending_files:
                pending_files.append(source)
        if not pending_files or pending_files[-1] != source:
            # A file that gave no lines (empty) still counts as read in this chunk.
            pending_files.append(source)
    if pending or not yielded:
        if not pending:
            pending = [pl.DataFrame(schema=LINE_SCHEMA)]
        yield flush()


def read_lines(
    files: Sequence[Path], max_record_bytes: int | None = None, max_depth: int | None = None
) -> Lines:
    """Every line of every file in one frame (for small inputs and tests)."""
    chunks = list(iter_line_chunks(files, max_record_bytes=max_record_bytes, max_depth=max_depth))
    return Lines(
        frame=pl.concat([c.frame for c in chunks]),
        files=[f for c in chunks for f in c.files],
    )
