"""Quarantine rows: a reason per refused line, the first N bad lines of a file in full and
the rest as counted blocks, and a file that fails whole kept to itself (CONTRACT 8).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

import polars as pl

from pipeline.sources.limits import failure_text
from schemas import polars_schema
from schemas.tasks import Quarantine

P = ParamSpec("P")
R = TypeVar("R")


def quarantine_rows(lines: pl.DataFrame, reasons: pl.DataFrame, batch_id: str) -> pl.DataFrame:
    """Quarantine rows (row_nr + the Quarantine model's columns) for row_nr -> reason."""
    joined = reasons.join(lines.select("row_nr", "source", "line", "raw"), on="row_nr")
    return joined.select(line_rows(batch_id))


def line_rows(batch_id: str) -> list[pl.Expr]:
    """A quarantine row's columns for one refused line (row_nr first; not a block)."""
    return [
        pl.col("row_nr"),
        pl.col("source"),
        pl.col("line"),
        pl.lit(None, pl.Int64).alias("line_end"),
        pl.col("reason"),
        pl.col("raw"),
        pl.col("record_kind").cast(pl.String),
        pl.lit(batch_id).alias("batch_id"),
    ]


def row_lines() -> pl.Expr:
    """How many input lines a quarantine row stands for (a block: line..line_end)."""
    return pl.col("line_end").fill_null(pl.col("line")) - pl.col("line") + 1


def quarantined_lines(quarantine: pl.DataFrame) -> int:
    return int(quarantine.select(row_lines().sum()).item() or 0)


def empty_quarantine() -> pl.DataFrame:
    return pl.DataFrame(schema={"row_nr": pl.UInt32, **polars_schema(Quarantine)})


class FileFailure(Exception):
    """Reading or landing an input failed in a way no rule foresaw (the file's, not the lake's)."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(failure_text(cause))


def compact_quarantine(
    quarantine: pl.DataFrame, kept_before: pl.DataFrame, keep: int
) -> pl.DataFrame:
    """The first ``keep`` bad lines of each file in full; the rest as counted blocks.

    ``kept_before`` (source, kept) counts the rows each file kept in full in earlier
    chunks. Past the first ``keep``, runs of adjacent lines with the same reason become
    one row (line..line_end) without raw text: replay reads them again from the source.
    Like DuckDB's rejects_limit, but nothing is dropped without a count.
    """
    ordered = (
        quarantine.sort("source", "line")
        .join(kept_before, on="source", how="left")
        .with_columns(
            rank=pl.int_range(pl.len()).over("source") + pl.col("kept").fill_null(0),
            end=pl.col("line_end").fill_null(pl.col("line")),
        )
    )
    full = ordered.filter(pl.col("rank") < keep).select(quarantine.columns)
    rest = ordered.filter(pl.col("rank") >= keep)
    same = ["source", "reason", "record_kind", "batch_id"]
    starts = ~pl.all_horizontal(pl.col(c).eq_missing(pl.col(c).shift()) for c in same) | (
        pl.col("line") != pl.col("end").shift() + 1
    ).fill_null(True)
    blocks = (
        rest.with_columns(block=starts.cum_sum())
        .group_by("block", maintain_order=True)
        .agg(
            pl.col("row_nr").first(),
            *(pl.col(c).first() for c in same),
            pl.col("line").first(),
            line_end=pl.col("end").last(),
            raw=pl.lit(None, pl.String),
        )
        .select(quarantine.columns)
    )
    return pl.concat([full, blocks.cast(quarantine.schema)])


def failed_block(lines: pl.DataFrame, failure: FileFailure, batch_id: str) -> pl.DataFrame:
    """One quarantine row per file of ``lines``: the block of its lines, with the failure."""
    return (
        lines.group_by("source", maintain_order=True)
        .agg(
            row_nr=pl.col("row_nr").min(),
            line=pl.col("line").min(),
            last=pl.col("line").max(),
        )
        .select(
            pl.col("row_nr").cast(pl.UInt32),
            "source",
            "line",
            line_end="last",
            reason=pl.format(
                "could not be read or landed, quarantined whole (lines {}-{}): {}",
                pl.col("line"),
                pl.col("last"),
                pl.lit(str(failure)),
            ),
            raw=pl.lit(None, pl.String),
            record_kind=pl.lit(None, pl.String),
            batch_id=pl.lit(batch_id),
        )
    )


def guarded(step: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """``step``, with any failure of it raised as the input's FileFailure.

    Only steps that compute over input lines go through here; the lake's reads
    and writes do not, so their failures stop the run instead.
    """
    try:
        return step(*args, **kwargs)
    except Exception as exc:  # every failure of one file stays with it
        raise FileFailure(exc) from exc
