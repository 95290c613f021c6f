"""ZIP files damaged as a crafted Inspect log could be."""

from __future__ import annotations

import struct
from pathlib import Path

# Where a central directory entry records a member's CRC-32 and uncompressed size.
CRC_AT, SIZE_AT = 16, 24


def understated(path: Path, member: str, size: int) -> Path:
    """``path`` with its ZIP directory recording ``member`` as ``size`` bytes (a damaged or
    crafted log)."""
    return recorded(path, member, SIZE_AT, size)


def recorded(path: Path, member: str, at_offset: int, value: int) -> Path:
    """``path`` with the 4-byte field ``at_offset`` into ``member``'s central directory
    entry holding ``value``."""
    data = bytearray(path.read_bytes())
    end = data.rfind(b"PK\x05\x06")
    directory_size, at = struct.unpack("<II", data[end + 12 : end + 20])
    stop = at + directory_size
    while at < stop:
        name_length, extra, comment = struct.unpack("<HHH", data[at + 28 : at + 34])
        if bytes(data[at + 46 : at + 46 + name_length]) == member.encode():
            data[at + at_offset : at + at_offset + 4] = struct.pack("<I", value)
        at += 46 + name_length + extra + comment
    path.write_bytes(bytes(data))
    return path


def corrupted(path: Path, member: str) -> Path:
    """``path`` with the first bytes of ``member``'s compressed stream flipped (its
    directory entry as it was): the member no longer decompresses."""
    import zipfile

    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(member)
    data = bytearray(path.read_bytes())
    at = info.header_offset
    name_length, extra = struct.unpack("<HH", data[at + 26 : at + 30])
    start = at + 30 + name_length + extra
    for place in range(start, start + 4):
        data[place] ^= 0xFF
    path.write_bytes(bytes(data))
    return path
