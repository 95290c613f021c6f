"""Per-line problems found on the text alone: not UTF-8, over the size limit, nested
too deep (measured without parsing), or the file's own problem at its last line."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from pipeline.core.settings import (
    MAX_DEPTH_ENV,
    MAX_RECORD_BYTES_ENV,
    MAX_REPORT_BYTES_ENV,
    Settings,
    current_settings,
    set_by,
)
from pipeline.sources.limits import CUT_TEXT, KEPT_PREFIX_CHARS, OVERSIZE_REASON, ReadLimits
from pipeline.sources.lines import Lines

# A JSON string literal, escapes included: brackets inside one do not nest.
_JSON_STRING = r'"(?:[^"\\]|\\.)*"'


def nesting_depth(raw: pl.Expr) -> pl.Expr:
    """How deep brackets nest in a line, outside string literals (0 for a scalar).

    Text only, no parse: string literals are removed, the brackets left are a
    walk of +1 / -1 steps, and the depth is the walk's highest point.
    """
    brackets = raw.str.replace_all(_JSON_STRING, "").str.replace_all(r"[^\[\]{}]", "")
    steps = pl.element().is_in(["[", "{"]).cast(pl.Int32) * 2 - 1
    return brackets.str.split("").list.eval(steps.cum_sum()).list.max().fill_null(0)


def with_problems(raw: pl.DataFrame, first_row: int, limits: ReadLimits) -> pl.DataFrame:
    report = pl.col("source").str.ends_with(".json")
    limit = pl.when(report).then(limits.report_bytes).otherwise(limits.record_bytes)
    over = pl.col("size") > pl.col("limit")
    sized = raw.with_row_index("row_nr", offset=first_row).with_columns(
        size=pl.col("raw").str.len_bytes(), limit=limit
    )
    # A line cannot nest deeper than it has opening brackets: only lines with
    # more than max_depth of them are measured.
    suspects = sized.filter(~over & (pl.col("raw").str.count_matches(r"[\[{]") > limits.depth))
    depths = suspects.select("row_nr", depth=nesting_depth(pl.col("raw")))
    measured = sized.join(depths, on="row_nr", how="left", maintain_order="left")
    too_deep = (pl.col("depth") > limits.depth).fill_null(False)
    return measured.select(
        "row_nr",
        "source",
        "line",
        pl.when(over)
        .then(pl.col("raw").str.slice(0, KEPT_PREFIX_CHARS) + pl.lit("…"))
        .otherwise(pl.col("raw"))
        .alias("raw"),
        problem=pl.when(pl.col("file_problem").is_not_null())
        .then(pl.col("file_problem"))
        .when(pl.col("not_utf8"))
        .then(pl.lit("line is not valid UTF-8 (bad bytes shown as \\x escapes)"))
        .when(over)
        .then(
            pl.format(
                OVERSIZE_REASON,
                pl.when(report).then(pl.lit("report")).otherwise(pl.lit("record")),
                pl.col("size"),
                pl.col("limit"),
                pl.lit(CUT_TEXT),
                pl.when(report)
                .then(pl.lit(set_by(MAX_REPORT_BYTES_ENV)))
                .otherwise(pl.lit(set_by(MAX_RECORD_BYTES_ENV))),
            )
        )
        .when(too_deep)
        .then(
            pl.format(
                "record nests {} levels deep, over the limit of {} (the limit is set by {})",
                pl.col("depth"),
                pl.lit(limits.depth),
                pl.lit(set_by(MAX_DEPTH_ENV)),
            )
        ),
    )


def lines_of_text(
    raw: pl.DataFrame, files: Sequence[str], settings: Settings | None = None
) -> Lines:
    """Lines already read (LINE_SCHEMA rows), checked against the limits like any input
    (``settings``', else the running command's)."""
    # CRLF: the carriage return belongs to the line ending, as when a file is read.
    stripped = raw.with_columns(pl.col("raw").str.strip_suffix("\r"))
    limits = ReadLimits.of(settings or current_settings())
    return Lines(frame=with_problems(stripped, 0, limits), files=list(files))
