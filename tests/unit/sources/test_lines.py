"""Bytes to whole numbered lines: BOM and CRLF, blocks cut mid-line, a record over the limit
skipped to its newline, and what a stream that ended early does to the last line."""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from pathlib import Path

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.sources.blocks import Cut, Event, Rest
from pipeline.sources.limits import ReadLimits
from pipeline.sources.lines import LineCutter, split_text
from tests.examples import examples

LIMITS = ReadLimits(record_bytes=8, report_bytes=100, depth=64, expanded_bytes=1000)


def _cut(blocks: Iterable[bytes], event: Event | None = None) -> pl.DataFrame:
    cutter = LineCutter("f.jsonl", LIMITS)
    frames = [frame for block in blocks for frame, _ in cutter.feed(block)]
    frames += [frame for frame, _ in cutter.finish(event)]
    return pl.concat(frames).select("line", "raw", "file_problem")


def test_lines_are_numbered_from_one_across_blocks_without_bom_or_cr() -> None:
    cut = _cut([b"\xef\xbb\xbf1\r\n2", b"2\n33\n"])
    assert cut.rows() == [(1, "1", None), (2, "22", None), (3, "33", None)]


def test_a_line_over_the_record_limit_keeps_its_prefix_and_the_count_goes_on() -> None:
    # The unfinished line passes 8 bytes at the end of the first block: from there it
    # is no longer buffered, only counted up to its newline.
    cut = _cut([b"1\n0123456789", b"abc\n2\n"])
    assert cut.rows() == [
        (1, "1", None),
        (
            2,
            "0123456789…",
            "record is 13 bytes, over the limit of 8 bytes (raw text cut to 1 KiB; "
            "the limit is set by --max-record-bytes or PIPELINE_MAX_RECORD_BYTES)",
        ),
        (3, "2", None),
    ]


def test_a_long_line_whole_in_one_block_is_left_to_the_problem_check() -> None:
    # Buffered already: sources/problems.py cuts it and gives the reason.
    assert _cut([b"0123456789abc\n"]).rows() == [(1, "0123456789abc", None)]


def test_a_last_line_without_its_newline_is_marked_when_the_stream_was_cut() -> None:
    reason = "gzip stream ends early (file truncated): the last line may be cut"
    assert _cut([b"1\n2"], Cut(reason)).rows() == [(1, "1", None), (2, "2", reason)]
    # A last line with its newline was whole.
    assert _cut([b"1\n"], Cut(reason)).rows() == [(1, "1", None)]


def test_a_file_unreadable_from_the_start_is_one_entry_at_line_zero() -> None:
    assert _cut([], Rest("could not read")).rows() == [(0, None, "could not read")]


def test_bad_utf8_is_kept_as_escapes_and_flagged() -> None:
    split = split_text(b"ok\n\xff\xfe\n")
    assert split.rows() == [("ok", False), ("\\xff\\xfe", True)]


def test_text_that_starts_like_compressed_data_is_split_as_text() -> None:
    # Polars' scanner inflates (or fails on) a buffer starting with a gzip, zlib or zstd
    # header: "x^" and "x\x01" are zlib headers, and its zlib read of "x\x01abc" gave no line.
    assert split_text(b"x^hello\nworld\n").rows() == [("x^hello", False), ("world", False)]
    assert split_text(b"x\x01abc\n").rows() == [("x\x01abc", False)]
    assert split_text(b"\x28\xb5\x2f\xfdz\n").rows() == [("(\\xb5/\\xfdz", True)]
    assert split_text(zlib.compress(b'{"a":1}\n'))["not_utf8"].any()
    assert split_text(b"\n\nq").rows() == [("", False), ("", False), ("q", False)]
    assert split_text(b"").height == 0


@given(
    st.lists(
        st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\n\r")), max_size=8
    )
)
@settings(max_examples=examples(100), deadline=None)
def test_every_line_of_utf8_text_comes_back_as_it_was(lines: list[str]) -> None:
    data = "".join(f"{line}\n" for line in lines).encode("utf-8")
    assert split_text(data)["raw"].to_list() == lines


def test_a_stream_cut_after_a_whole_line_is_a_note_not_a_quarantined_line() -> None:
    # A gzip missing its trailer: every line before the cut is whole, so none is refused,
    # but lines after the cut may be missing: the reader says so.
    cutter = LineCutter("f.jsonl.gz", LIMITS)
    frames = [frame for frame, _ in cutter.feed(b"1\n2\n")]
    frames += [
        frame for frame, _ in cutter.finish(Cut("gzip stream ends early (file truncated): x"))
    ]
    rows = pl.concat(frames).select("line", "raw", "file_problem").rows()
    assert rows == [(1, "1", None), (2, "2", None)]
    assert cutter.notes == [
        "f.jsonl.gz: gzip stream ends early (file truncated): every whole line before the cut "
        "was read; any lines after it are not in the file"
    ]


def test_a_truncated_gzip_file_is_a_note_of_its_chunk(tmp_path: Path) -> None:
    import gzip

    from pipeline.sources.chunks import iter_line_chunks

    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(gzip.compress(b"1\n2\n")[:-8])  # no CRC and size trailer
    (chunk,) = list(iter_line_chunks([path]))
    assert chunk.frame.height == 2
    assert len(chunk.notes) == 1 and "gzip stream ends early" in chunk.notes[0]
