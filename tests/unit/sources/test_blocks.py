"""A file's bytes in blocks: plain, gzip members in turn, and where reading stops early."""

from __future__ import annotations

import gzip
from pathlib import Path

from pipeline.sources.blocks import Cut, Event, Rest, byte_blocks

BIG = 1 << 30


def _read(path: Path, max_expanded: int = BIG) -> tuple[bytes, Event | None]:
    data = b""
    event: Event | None = None
    for block, happened in byte_blocks(path, max_expanded):
        data += block
        event = happened or event
    return data, event


def test_a_plain_file_is_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b"1\n2\n")
    assert _read(path) == (b"1\n2\n", None)


def test_every_member_of_a_concatenated_gzip_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl.gz"
    path.write_bytes(gzip.compress(b"1\n") + gzip.compress(b"2\n"))
    assert _read(path) == (b"1\n2\n", None)


def test_expansion_stops_at_the_limit_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl.gz"
    path.write_bytes(gzip.compress(b"x" * 1000))
    data, event = _read(path, max_expanded=100)
    assert data == b"x" * 100
    assert isinstance(event, Rest)
    assert event.reason == (
        "decompressed past the limit of 100 bytes "
        "(the limit is set by PIPELINE_MAX_EXPANDED_BYTES): the rest of the file is not read"
    )


def test_trailing_bytes_that_are_not_gzip_are_one_counted_block(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl.gz"
    path.write_bytes(gzip.compress(b"1\n") + b"junk!")
    data, event = _read(path)
    assert data == b"1\n"
    assert event == Rest(
        "trailing bytes after the end of the gzip data are not gzip (5 bytes, not read)", "junk!"
    )


def test_a_truncated_gzip_file_may_have_cut_its_last_line(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl.gz"
    whole = gzip.compress(b"1\n" * 1000)
    path.write_bytes(whole[: len(whole) // 2])
    _, event = _read(path)
    assert event == Cut("gzip stream ends early (file truncated): the last line may be cut")


def test_a_file_that_cannot_be_opened_is_one_event(tmp_path: Path) -> None:
    data, event = _read(tmp_path / "gone.jsonl")
    assert data == b""
    assert isinstance(event, Rest) and event.reason.startswith("could not read the file (")


def test_gzip_bytes_are_inflated_whatever_the_files_name(tmp_path: Path) -> None:
    # `gzip -c x.jsonl > y.jsonl`: its lines, within the same expansion limit as a .gz
    # (read as text, a few kilobytes of it could stand for gigabytes).
    path = tmp_path / "y.jsonl"
    path.write_bytes(gzip.compress(b"1\n2\n"))
    assert _read(path) == (b"1\n2\n", None)
    path.write_bytes(gzip.compress(b"x" * 1000))
    data, event = _read(path, max_expanded=100)
    assert (data, isinstance(event, Rest)) == (b"x" * 100, True)
