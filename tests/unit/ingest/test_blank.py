"""A blank line holds only what JSON calls whitespace (space, tab, CR, LF); a line of any
other space (a form feed, a no-break space, U+2028) is a line that is not JSON."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.ingest.batch import build_batch
from pipeline.ingest.classify import is_blank
from pipeline.sources.lines import EMPTY_REPORT, Lines


def test_only_json_whitespace_is_blank() -> None:
    raws = ["", " \t ", "\r", "\x0c", "\u00a0", "\u2028", "\u3000", " x "]
    blank = pl.select(is_blank(pl.Series(raws, dtype=pl.String))).to_series()
    assert blank.to_list() == [True, True, True, False, False, False, False, False]


def test_a_line_of_other_spaces_is_quarantined_not_skipped() -> None:
    raws = ["", "\u00a0", "\u00a0", "\t"]  # the copy shares its first's fate
    frame = pl.DataFrame(
        {
            "row_nr": pl.Series(range(4), dtype=pl.UInt32),
            "source": "f.jsonl",
            "line": pl.Series(range(1, 5), dtype=pl.Int64),
            "raw": raws,
            "problem": pl.Series([None] * 4, dtype=pl.String),
        }
    )
    batch = build_batch(Lines(frame=frame, files=["f.jsonl"]), ["exploit"], "b")
    assert batch.blank_lines == 2
    assert batch.quarantine["line"].to_list() == [2, 3]
    assert set(batch.quarantine["reason"]) == {"not valid JSON (the line does not parse)"}


def test_a_chunk_of_blank_lines_only_is_counted_without_a_parse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pipeline.ingest import batch as batch_module

    def no_parse(*args: object) -> None:
        raise AssertionError("a chunk of blank lines was parsed")

    monkeypatch.setattr(batch_module, "_build_unique", no_parse)
    frame = pl.DataFrame(
        {
            "row_nr": pl.Series(range(3), dtype=pl.UInt32),
            "source": "f.jsonl",
            "line": pl.Series([1, 2, 3], dtype=pl.Int64),
            "raw": ["", " ", "\t\r"],
            "problem": pl.Series([None] * 3, dtype=pl.String),
        }
    )
    batch = build_batch(Lines(frame=frame, files=["f.jsonl"]), ["exploit"], "b")
    assert (batch.lines_read, batch.blank_lines, batch.quarantine.height) == (3, 3, 0)
    assert all(table.is_empty() for table in batch.tables.values())


def test_a_blank_line_is_not_a_copy_of_an_empty_report_file() -> None:
    # An empty report file is one line of text "" with a problem; a blank line of another
    # file read in the same chunk had been taken for its copy and quarantined with its reason.
    frame = pl.DataFrame(
        {
            "row_nr": pl.Series(range(3), dtype=pl.UInt32),
            "source": ["a.json", "b.jsonl", "b.jsonl"],
            "line": pl.Series([1, 1, 2], dtype=pl.Int64),
            "raw": ["", "", " "],
            "problem": pl.Series([EMPTY_REPORT, None, None], dtype=pl.String),
        }
    )
    batch = build_batch(Lines(frame=frame, files=["a.json", "b.jsonl"]), ["exploit"], "b")
    assert batch.blank_lines == 2
    assert batch.quarantine.select("source", "line", "reason").rows() == [
        ("a.json", 1, EMPTY_REPORT)
    ]
