"""Ingest: input files to lines, lines to records, records to landed tables.

Every input line ends in exactly one place (CONTRACT section 8): landed,
quarantined with a reason, or skipped (an exact duplicate, or a blank line).
The line frame carries a ``row_nr`` through every step so the three outcomes
can be counted against the lines read.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipeline import surface
from pipeline.core.sql import connect
from pipeline.ingest.classify import classify, is_blank
from pipeline.ingest.quarantine import empty_quarantine, quarantine_rows
from pipeline.sources.blocks import GZIP_MAGIC
from pipeline.sources.lines import Lines
from pipeline.tasks.parse import accepted_keys, task_tables
from schemas import checked, polars_schema
from schemas.tasks import Quarantine


@dataclass
class Batch:
    """What one ingest produces, before it is checked against the lake."""

    batch_id: str
    tables: dict[str, pl.DataFrame]
    quarantine: pl.DataFrame
    lines_read: int
    blank_lines: int
    files: list[str] = field(default_factory=list)
    # How many of ``copies`` there are: counted as duplicates unless dedupe says otherwise.
    parse_skipped: int = 0
    # The top-level keys of each task record (row_nr, top_keys), from the one parse.
    task_keys: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(
            schema={"row_nr": pl.UInt32, "top_keys": pl.List(pl.String)}
        )
    )
    # Lines whose exact text came earlier in the chunk and passed there (counted in
    # parse_skipped as duplicates of it): should dedupe quarantine the first as a clash with
    # the lake, they share its fate (row_nr, first_row, source, line, raw).
    copies: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(
            schema={
                "row_nr": pl.UInt32,
                "first_row": pl.UInt32,
                "source": pl.String,
                "line": pl.Int64,
                "raw": pl.String,
            }
        )
    )


# Plain JSON Lines files, whose every line ends in a newline when the writer is done.
LINE_FILE_SUFFIX = ".jsonl"


def unterminated_notes(files: Sequence[Path]) -> list[str]:
    """A note per plain JSON Lines file whose last byte is not a newline: its last line may
    have been cut by a writer still at work (if so it is quarantined now, and replaced when
    the file is read again whole)."""
    notes: list[str] = []
    for path in files:
        try:
            if path.suffix != LINE_FILE_SUFFIX or path.stat().st_size == 0:
                continue
            with open(path, "rb") as handle:
                first = handle.read(len(GZIP_MAGIC))
                handle.seek(-1, os.SEEK_END)
                last = handle.read(1)
        except OSError:
            continue  # the reader reports a file it cannot open
        # gzip bytes are read as gzip whatever the name (sources/blocks.py), and checked there.
        if last != b"\n" and first != GZIP_MAGIC:
            notes.append(
                f"{path}: the last line has no newline; it may have been cut while the "
                "file was being written (read the file again once it is complete)"
            )
    return notes


def build_batch(lines: Lines, env_types: Sequence[str], batch_id: str) -> Batch:
    """Lines to landed-shape tables (each keyed by row_nr) and quarantine rows.

    A line whose exact text came earlier in the chunk is not parsed again: it shares the
    first one's fate (quarantined with its reason, blank, or a duplicate of what landed).
    Millions of identical bad lines (``{}``) then cost a hash each, not a parse each.
    """
    frame = lines.frame
    # The usual chunk starts with a record: one row tells, where checking every line for
    # blankness costs ~40 ms of a 75k-line chunk.
    opening = frame.head(1).select(is_blank(pl.col("raw")) & pl.col("problem").is_null())
    maybe_blank = opening.is_empty() or bool(opening.item())
    if (
        maybe_blank
        and frame.select((is_blank(pl.col("raw")) & pl.col("problem").is_null()).all()).item()
    ):
        # A chunk of blank lines only (a file of newlines, gzipped small): counted, not
        # parsed; a gigabyte of them had paid a parse's fixed cost every 100k lines.
        return _blank_batch(frame.height, lines.files, batch_id)
    # Only a line the reader passed can be the one its copies follow: an empty report file's
    # line has the text "" and a problem, and a blank line after it is not a copy of it.
    unread = pl.col("problem").is_not_null()
    first = pl.when(~unread).then(pl.col("row_nr")).min().over("raw")
    copy = (pl.col("row_nr") != first) & ~unread & pl.col("raw").is_not_null()
    marked = frame.with_columns(first_row=first, copy=copy)
    copies = marked.filter("copy").select("row_nr", "first_row", "raw")
    batch = _build_unique(
        marked.filter(~pl.col("copy")).drop("first_row", "copy"), lines.files, env_types, batch_id
    )
    if copies.is_empty():
        return batch
    held = batch.quarantine.select(first_row="row_nr", reason="reason", record_kind="record_kind")
    fated = copies.join(held, on="first_row", how="left")
    quarantined = fated.filter(pl.col("reason").is_not_null())
    blank = fated.filter(pl.col("reason").is_null() & (is_blank(pl.col("raw"))))
    batch.quarantine = pl.concat(
        [batch.quarantine, quarantine_rows(frame, quarantined.drop("raw", "first_row"), batch_id)]
    ).sort("row_nr")
    batch.lines_read = frame.height
    batch.blank_lines += blank.height
    passed = fated.filter(pl.col("reason").is_null()).join(blank, on="row_nr", how="anti")
    batch.parse_skipped += passed.height
    batch.copies = (
        passed.join(frame.select("row_nr", "source", "line"), on="row_nr")
        .select(list(batch.copies.columns))
        .cast(batch.copies.schema)
    )
    return batch


def _blank_batch(lines: int, files: list[str], batch_id: str) -> Batch:
    from schemas.registry import LANDED

    tables = {
        name: pl.DataFrame(schema={"row_nr": pl.UInt32, **polars_schema(model)})
        for name, model in LANDED.items()
        if name not in ("quarantine", "quarantine_resolved")
    }
    return Batch(batch_id, tables, empty_quarantine(), lines, lines, files)


def _build_unique(
    frame: pl.DataFrame, files: list[str], env_types: Sequence[str], batch_id: str
) -> Batch:
    """build_batch over lines that are each parsed."""
    # One DuckDB connection for the batch's queries: opening one costs ~30 ms.
    con = connect()
    try:
        lines_parsed = classify(frame, con)
        kinds = lines_parsed.kinds
        with_kind = frame.drop("problem").join(kinds, on="row_nr")
        task_records = with_kind.filter(
            pl.col("problem").is_null() & (pl.col("record_kind") == "task")
        )
        surface_records = with_kind.filter(
            pl.col("problem").is_null() & (pl.col("record_kind") == "surface")
        )
        tables, task_rejects = task_tables(
            task_records, lines_parsed.fields, env_types, batch_id, con
        )
        task_keys = accepted_keys(tables, lines_parsed.fields)
    finally:
        con.close()
    parsed = surface.parse_reports(
        surface_records.select("source", "line", "raw", "content_hash", batch_id=pl.lit(batch_id))
    )
    # The surface stage keys rows by (source, line); map them back to row_nr. A report
    # repeating a run_id of the chunk is a run for dedupe to judge, as a task record is.
    locate = surface_records.select("row_nr", "source", "line")
    run_rows = parsed.runs.join(locate, on=["source", "line"])
    tables["surface_runs"] = pl.concat(
        [run_rows, parsed.repeats.join(locate, on=["source", "line"])]
    ).sort("row_nr")
    # Findings only of the first report of each run_id: no later one can land.
    tables["surface_findings"] = parsed.findings.join(
        run_rows.select("row_nr", "run_id"), on="run_id"
    )
    quarantined = pl.concat(
        [
            with_kind.filter(pl.col("problem").is_not_null()).select(
                "row_nr", reason="problem", record_kind="record_kind"
            ),
            task_rejects.select("row_nr", "reason", record_kind=pl.lit("task")),
            parsed.quarantine.join(locate, on=["source", "line"]).select(
                "row_nr", "reason", record_kind=pl.lit("surface")
            ),
        ]
    )
    return Batch(
        batch_id=batch_id,
        tables=tables,
        quarantine=quarantine_rows(frame, quarantined, batch_id),
        lines_read=frame.height,
        blank_lines=int(kinds["blank"].sum()),
        files=files,
        task_keys=task_keys,
    )


def landed_frames(batch: Batch) -> dict[str, pl.DataFrame]:
    """The batch's tables without row_nr, each checked by its model."""
    from schemas.registry import LANDED

    out: dict[str, pl.DataFrame] = {}
    for name, frame in batch.tables.items():
        out[name] = checked(LANDED[name], frame.drop("row_nr"))
    out["quarantine"] = checked(Quarantine, batch.quarantine.drop("row_nr"))
    return out
