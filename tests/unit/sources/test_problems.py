"""What is wrong with a line on its text alone: size, depth, bytes, the file's own problem."""

from __future__ import annotations

import polars as pl

from pipeline.sources.limits import ReadLimits
from pipeline.sources.lines import LINE_SCHEMA
from pipeline.sources.problems import nesting_depth, with_problems

LIMITS = ReadLimits(record_bytes=10, report_bytes=20, depth=2, expanded_bytes=1000)


def test_nesting_depth_counts_brackets_outside_strings() -> None:
    lines = ["1", "{}", '{"a":[1,{"b":2}]}', '"[[["', '["]",[]]', ""]
    depths = pl.DataFrame({"raw": lines}).select(nesting_depth(pl.col("raw"))).to_series()
    assert depths.to_list() == [0, 1, 3, 0, 2, 0]


def _lines(*rows: tuple[str, str | None, bool, str | None]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "source": [r[0] for r in rows],
            "line": list(range(1, len(rows) + 1)),
            "raw": [r[1] for r in rows],
            "not_utf8": [r[2] for r in rows],
            "file_problem": [r[3] for r in rows],
        },
        schema=LINE_SCHEMA,
    )


def test_each_line_gets_its_first_problem_and_row_numbers_go_on() -> None:
    lines = _lines(
        ("a.jsonl", "[1]", False, None),
        ("a.jsonl", "[[[1]]]", False, None),
        ("a.jsonl", "x" * 11, False, None),
        ("a.jsonl", "\\xff", True, None),
        ("a.jsonl", "[1]", False, "gzip stream ends early"),
        ("r.json", "y" * 15, False, None),
    )
    checked = with_problems(lines, 100, LIMITS)
    assert checked["row_nr"].to_list() == list(range(100, 106))
    assert checked["problem"].to_list() == [
        None,
        "record nests 3 levels deep, over the limit of 2 "
        "(the limit is set by --max-depth or PIPELINE_MAX_DEPTH)",
        "record is 11 bytes, over the limit of 10 bytes (raw text cut to 1 KiB; "
        "the limit is set by --max-record-bytes or PIPELINE_MAX_RECORD_BYTES)",
        "line is not valid UTF-8 (bad bytes shown as \\x escapes)",
        "gzip stream ends early",
        None,  # a report has its own, larger limit
    ]
    assert checked["raw"][2] == "x" * 11 + "…"
