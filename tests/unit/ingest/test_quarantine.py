"""Quarantine rows on tiny frames: counted blocks past a file's first N bad lines, the
lines a row stands for, a file that fails whole (CONTRACT 8: no line lost uncounted)."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.ingest.quarantine import (
    FileFailure,
    compact_quarantine,
    empty_quarantine,
    failed_block,
    guarded,
    quarantine_rows,
    quarantined_lines,
)


def bad_lines(source: str, lines: list[int], reason: str = "not JSON") -> pl.DataFrame:
    rows = [
        {
            "row_nr": i,
            "source": source,
            "line": line,
            "line_end": None,
            "reason": reason,
            "raw": f"line {line}",
            "record_kind": None,
            "batch_id": "b1",
        }
        for i, line in enumerate(lines)
    ]
    return pl.DataFrame(rows, schema=empty_quarantine().schema)


NOTHING_KEPT = pl.DataFrame(schema={"source": pl.String, "kept": pl.Int64})


def test_past_the_first_two_adjacent_lines_become_one_counted_block() -> None:
    compact = compact_quarantine(bad_lines("a.jsonl", [1, 2, 3, 4, 5]), NOTHING_KEPT, keep=2)
    assert compact.select("line", "line_end", "raw").rows() == [
        (1, None, "line 1"),
        (2, None, "line 2"),
        (3, 5, None),  # lines 3, 4 and 5: one row, no text, replay reads them again
    ]
    assert quarantined_lines(compact) == 5


def test_a_gap_or_another_reason_starts_a_new_block() -> None:
    frame = pl.concat(
        [bad_lines("a.jsonl", [1, 2, 3, 7, 8]), bad_lines("a.jsonl", [9], reason="bad score")]
    )
    compact = compact_quarantine(frame, NOTHING_KEPT, keep=1)
    assert compact.select("line", "line_end", "reason").rows() == [
        (1, None, "not JSON"),
        (2, 3, "not JSON"),
        (7, 8, "not JSON"),
        (9, 9, "bad score"),
    ]


def test_rows_kept_in_earlier_chunks_count_against_the_files_share() -> None:
    kept = pl.DataFrame({"source": ["a.jsonl"], "kept": [2]})
    compact = compact_quarantine(bad_lines("a.jsonl", [10, 11]), kept, keep=3)
    # one more line in full (the third of the file), then a block
    assert compact.select("line", "line_end").rows() == [(10, None), (11, 11)]


@given(
    lines=st.lists(st.integers(1, 200), min_size=1, max_size=40, unique=True),
    keep=st.integers(0, 10),
)
def test_compacting_keeps_every_line_counted(lines: list[int], keep: int) -> None:
    frame = bad_lines("a.jsonl", sorted(lines))
    assert quarantined_lines(compact_quarantine(frame, NOTHING_KEPT, keep)) == len(lines)


def test_quarantine_rows_join_each_reason_to_its_line() -> None:
    lines = pl.DataFrame(
        {"row_nr": [0, 1, 2], "source": ["a"] * 3, "line": [1, 2, 3], "raw": ["x", "{}", "y"]}
    )
    reasons = pl.DataFrame(
        {"row_nr": [0, 2], "reason": ["not JSON", "not JSON"], "record_kind": [None, None]},
        schema={"row_nr": pl.Int64, "reason": pl.String, "record_kind": pl.String},
    )
    rows = quarantine_rows(lines, reasons, "b9").sort("line")
    assert rows.select("line", "raw", "batch_id").rows() == [(1, "x", "b9"), (3, "y", "b9")]


def test_a_file_that_fails_whole_is_one_block_naming_the_failure() -> None:
    lines = pl.DataFrame(
        {"row_nr": [5, 6, 7], "source": ["a", "a", "b"], "line": [1, 2, 1]},
        schema={"row_nr": pl.UInt32, "source": pl.String, "line": pl.Int64},
    )
    block = failed_block(lines, FileFailure(ValueError("boom\nsecond line")), "b1")
    assert block.select("source", "line", "line_end").rows() == [("a", 1, 2), ("b", 1, 1)]
    assert block["reason"][0] == (
        "could not be read or landed, quarantined whole (lines 1-2): ValueError: boom"
    )


def test_guarded_turns_any_failure_into_the_files_failure() -> None:
    def step() -> int:
        raise KeyError("x")

    with pytest.raises(FileFailure, match="KeyError"):
        guarded(step)
    assert guarded(lambda a: a + 1, 1) == 2
