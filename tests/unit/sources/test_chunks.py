"""Lines in chunks of bounded size: numbering and files named across chunks, limits from
the settings given."""

from __future__ import annotations

from pathlib import Path

from pipeline.core.settings import Settings
from pipeline.sources.chunks import iter_line_chunks, read_lines


def test_chunks_hold_at_most_chunk_lines_and_name_every_file_they_hold(tmp_path: Path) -> None:
    a, empty, b = tmp_path / "a.jsonl", tmp_path / "e.jsonl", tmp_path / "b.jsonl"
    a.write_text("1\n2\n3\n")
    empty.write_text("")
    b.write_text("4\n5\n")
    chunks = list(iter_line_chunks([a, empty, b], chunk_lines=2))
    assert [c.frame["raw"].to_list() for c in chunks] == [["1", "2"], ["3"], ["4", "5"]]
    assert [c.frame["row_nr"].to_list() for c in chunks] == [[0, 1], [2], [3, 4]]
    assert [c.files for c in chunks] == [[str(a)], [str(a), str(empty)], [str(b)]]
    assert chunks[2].frame["line"].to_list() == [1, 2]


def test_no_files_still_give_one_empty_chunk() -> None:
    chunks = list(iter_line_chunks([]))
    assert len(chunks) == 1 and chunks[0].frame.height == 0 and chunks[0].files == []


def test_the_record_limit_is_the_settings_given(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text("12345\n123\n")
    frame = read_lines([path], Settings(max_record_bytes=4)).frame
    assert frame["problem"].to_list() == [
        "record is 5 bytes, over the limit of 4 bytes (raw text cut to 1 KiB; "
        "the limit is set by --max-record-bytes or PIPELINE_MAX_RECORD_BYTES)",
        None,
    ]


def test_an_empty_report_file_is_its_one_line_with_why(tmp_path: Path) -> None:
    # A report is one object: a file with none (a writer that died first) is said, at line 1.
    (tmp_path / "empty.json").write_bytes(b"")
    (tmp_path / "spaces.json").write_bytes(b"\xef\xbb\xbf \n\t")
    (tmp_path / "one.json").write_text('{"a": 1}\n')
    frame = read_lines(sorted(tmp_path.iterdir())).frame.sort("source")
    assert frame.select("line", "raw", "problem").rows() == [
        (1, "", "the report file is empty (no JSON object in it)"),
        (1, '{"a": 1} ', None),
        (1, "\ufeff \n\t", "the report file is empty (no JSON object in it)"),
    ]
