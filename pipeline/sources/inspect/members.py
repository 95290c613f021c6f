"""A .eval log's ZIP members: the sizes its directory records, and whether each decompresses
within its own. Both are known before Inspect reads a member, and bound the log as a gzip
file is bounded (table.inspect_frames): Inspect parses a log's header whole, and holds a
sample's input and, for a sample holding NaN, the whole member.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, BinaryIO, cast

# A .eval log's ZIP members as inspect-ai writes them: each sample x epoch in a member of
# its own, and the members it reads whole with the header: the header (while the eval
# runs, the start journal and its config updates) and the reductions.
SAMPLES_DIR = "samples/"
HEADER = "header.json"
REDUCTIONS = "reductions.json"
RUNNING_HEADER = ("_journal/start.json", "_journal/config_updates/")
# inspect-ai writes its members with Zstandard (ZIP method 93); it also reads stored and
# deflated ones. A member of any other method is left to Inspect, which refuses it.
ZSTANDARD = 93
# Compressed bytes read at a time while a member is counted.
COUNT_BLOCK = 1024 * 1024
# A ZIP local file header: 30 bytes, its name's and extra field's lengths at 26 and 28.
LOCAL_HEADER = 30


def sample_member(sample_id: Any, epoch: int) -> str:
    """The ZIP member a .eval log holds a sample x epoch in (as inspect-ai writes it)."""
    return f"{SAMPLES_DIR}{sample_id}_epoch_{epoch}.json"


@dataclass(frozen=True)
class Directory:
    """What a .eval log's ZIP directory records: the size of the members read with its
    header, and of each sample's member (by its distinct names: an eval_retry of a killed
    eval writes the samples that were in flight again, under the same names, and a reader
    gets the last); ``infos``, the entries of the log at ``path`` they come from."""

    header_bytes: int
    samples: dict[str, int]
    header: tuple[str, ...] = ()
    path: Path | None = None
    infos: dict[str, zipfile.ZipInfo] = field(default_factory=dict)

    @classmethod
    def of(cls, path: Path) -> Directory:
        with zipfile.ZipFile(path) as archive:
            infos = {info.filename: info for info in archive.infolist()}
        sizes = {name: info.file_size for name, info in infos.items()}
        samples = {
            name: size
            for name, size in sizes.items()
            if name.startswith(SAMPLES_DIR) and name.endswith(".json")
        }
        header = tuple(
            name
            for name in sizes
            if name == REDUCTIONS
            or (name == HEADER if HEADER in sizes else name.startswith(RUNNING_HEADER))
        )
        return cls(sum(sizes[name] for name in header), samples, header, path, infos)

    def damaged(self, names: tuple[str, ...] | list[str]) -> list[tuple[str, str]]:
        """Those of ``names`` whose bytes are not what the directory records for them (a
        log damaged or altered after Inspect wrote it), each with what is wrong: Inspect
        would read a member to its end, however large, and not check its CRC-32. Each is
        decompressed, and counted, up to one byte past its recorded size."""
        if self.path is None:
            return []
        found: list[tuple[str, str]] = []
        with open(self.path, "rb") as handle:
            for name in names:
                info = self.infos.get(name)
                why = None if info is None else damage(handle, info)
                if why is not None:
                    found.append((name, why))
        return found


def damage(handle: BinaryIO, info: zipfile.ZipInfo) -> str | None:
    """What is wrong with the bytes of the member ``info`` of the ZIP open as ``handle``,
    against the size and CRC-32 the directory records; None when nothing is (or when its
    method, or a ZIP cut short, is Inspect's to refuse)."""
    blocks = _decompressed(handle, info, info.file_size + 1)
    if blocks is None:
        return None
    count = crc = 0
    for block in blocks:
        count += len(block)
        crc = zlib.crc32(block, crc)
        if count > info.file_size:
            return f"holds more than the {info.file_size} bytes"
    if count < info.file_size:
        return f"holds {count} bytes, not the {info.file_size}"
    if crc != info.CRC:
        return "does not match the CRC-32"
    return None


def _decompressed(handle: BinaryIO, info: zipfile.ZipInfo, cap: int) -> Iterator[bytes] | None:
    """The member's bytes, decompressed a block at a time, until ``cap`` of them are out;
    None for a method Inspect does not read, or a ZIP cut short before the member."""
    handle.seek(info.header_offset)
    local = handle.read(LOCAL_HEADER)
    if len(local) < LOCAL_HEADER:
        return None
    name_length, extra_length = struct.unpack("<HH", local[26:LOCAL_HEADER])
    handle.seek(info.header_offset + LOCAL_HEADER + name_length + extra_length)
    if info.compress_type == zipfile.ZIP_STORED:
        return _capped(_compressed(handle, info.compress_size), cap)
    if info.compress_type == zipfile.ZIP_DEFLATED:
        return _capped(_inflated(_compressed(handle, info.compress_size)), cap)
    if info.compress_type == ZSTANDARD:
        return _capped(_unzstd(handle, info.compress_size), cap)
    return None


def _capped(blocks: Iterator[bytes], cap: int) -> Iterator[bytes]:
    count = 0
    for block in blocks:
        yield block
        count += len(block)
        if count >= cap:
            return


def _compressed(handle: BinaryIO, size: int) -> Iterator[bytes]:
    left = size
    while left > 0 and (block := handle.read(min(COUNT_BLOCK, left))):
        left -= len(block)
        yield block


def _inflated(blocks: Iterator[bytes]) -> Iterator[bytes]:
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    for block in blocks:
        data = block
        while data:
            yield inflater.decompress(data, COUNT_BLOCK)
            data = inflater.unconsumed_tail
    yield inflater.flush()


def _unzstd(handle: BinaryIO, size: int) -> Iterator[bytes]:
    import zstandard  # inspect-ai's own dependency, as the inspect extra installs it

    # zstandard reads any object with read(); its stubs ask for a file.
    bounded = cast(IO[bytes], _Bounded(handle, size))
    # inspect-ai writes a member as several frames, one after another.
    with zstandard.ZstdDecompressor().stream_reader(bounded, read_across_frames=True) as reader:
        while block := reader.read(COUNT_BLOCK):
            yield block


class _Bounded:
    """``size`` bytes of ``handle`` from where it stands, as a readable stream."""

    def __init__(self, handle: BinaryIO, size: int) -> None:
        self.handle = handle
        self.left = size

    def read(self, size: int = -1) -> bytes:
        wanted = self.left if size < 0 else min(size, self.left)
        block = self.handle.read(wanted)
        self.left -= len(block)
        return block
