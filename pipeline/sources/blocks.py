"""A file's bytes in blocks, gzip members inflated in turn up to the expansion limit;
an event says why the blocks ended early."""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from pipeline.core.settings import MAX_EXPANDED_BYTES_ENV, set_by
from pipeline.sources.limits import KEPT_PREFIX_BYTES

READ_BLOCK_BYTES = 16 * 1024 * 1024
# The reason a file the system would not let us read (gone, no permission) is quarantined
# with, at line 0: unlike every other reason, reading it again may land it.
UNREADABLE = "could not read the file"
# An Inspect log whose eval is still running (status "started"): it is read once the eval
# has ended, whole, so that each sample is numbered once and carries the log's last status.
STILL_RUNNING = "the Inspect eval is still running"
# An Inspect log that does not open (a .eval still being copied is a ZIP without its end).
UNREADABLE_LOG = "not a readable Inspect AI log"
# The whole-file (line 0) reasons after which a later reading of the file may land it: its
# row is resolved (superseded) once a later ingest reads lines of the file.
READ_AGAIN = (UNREADABLE, STILL_RUNNING, UNREADABLE_LOG)
# The whole-file reasons whose reader says so in a note of its own on every read (with
# what to do), so the run's notes on whole files leave them out.
NOTED_BY_READER = (STILL_RUNNING,)
GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Cut:
    """The stream ended early: the last line, if it has no newline, may be cut."""

    reason: str


@dataclass(frozen=True)
class Rest:
    """Reading stopped here: the rest of the file is one counted block with this reason."""

    reason: str
    raw: str | None = None


Event = Cut | Rest


def snippet(data: bytes) -> str:
    return data[:KEPT_PREFIX_BYTES].decode("utf-8", "backslashreplace")


def byte_blocks(path: Path, max_expanded: int) -> Iterator[tuple[bytes, Event | None]]:
    """The file's bytes in blocks, decompressed; an event ends the blocks."""
    try:
        with open(path, "rb") as handle:
            # gzip bytes are inflated (within the expansion limit) whatever the file's name:
            # a `gzip -c x.jsonl > y.jsonl` is still its lines, and read as text its few
            # kilobytes could stand for gigabytes.
            if not path.name.endswith(".gz") and handle.peek(2)[:2] != GZIP_MAGIC:
                while block := handle.read(READ_BLOCK_BYTES):
                    yield block, None
                return
            yield from _gzip_blocks(handle, max_expanded)
    except OSError as exc:
        yield b"", Rest(f"{UNREADABLE} ({exc.strerror or exc}): the rest is not read")


def _gzip_blocks(handle: BinaryIO, max_expanded: int) -> Iterator[tuple[bytes, Event | None]]:
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
            yield b"", Rest(f"not a readable gzip file ({exc}): the rest is not read")
            return
        data = inflater.unconsumed_tail
        expanded += len(out)
        if expanded > max_expanded:
            yield out[: len(out) - (expanded - max_expanded)], None
            yield (
                b"",
                Rest(
                    f"decompressed past the limit of {max_expanded} bytes (the limit is set "
                    f"by {set_by(MAX_EXPANDED_BYTES_ENV)}): the rest of the file is not read"
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
                    Rest(
                        "trailing bytes after the end of the gzip data are not gzip "
                        f"({left} bytes, not read)",
                        snippet(data),
                    ),
                )
                return
            inflater = zlib.decompressobj(wbits=31)
    if not inflater.eof:
        yield b"", Cut("gzip stream ends early (file truncated): the last line may be cut")


def _bytes_left(handle: BinaryIO) -> int:
    here = handle.tell()
    return handle.seek(0, os.SEEK_END) - here
