"""Ingest batches of a few lines, and ``dedupe`` of them against a lake given as frames, for
the tests of pipeline/ingest/dedupe.py."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import polars as pl

from pipeline.ingest.batch import Batch, build_batch
from pipeline.ingest.dedupe import LANDED_ATTEMPTS_SCHEMA, Attempts, Deduped, dedupe
from pipeline.sources.inspect.attempts import run_attempts
from pipeline.sources.lines import Lines

SOURCE = "f.jsonl"
# What ``earlier_runs`` reads of the lake's runs (task or surface) at a batch's run_ids.
LANDED_RUNS = pl.Schema(
    {"run_id": pl.String, "content_hash": pl.String, "source": pl.String, "line": pl.Int64}
)
NOTHING_HELD = pl.DataFrame(
    schema={"source": pl.String, "line": pl.Int64, "line_end": pl.Int64, "raw": pl.String}
)


def batch_of(records: list[dict[str, Any]], indent: list[int | None] | None = None) -> Batch:
    """A batch of ``records`` (task records or reports) on lines 1, 2, ... of ``f.jsonl``,
    each written with its ``indent`` (none: compact). An indent makes other text of the same
    content (the same content hash): a copy that is not an exact copy of the line."""
    spacing = indent or [None] * len(records)
    frame = pl.DataFrame(
        {
            "row_nr": pl.Series(range(len(records)), dtype=pl.UInt32),
            "source": SOURCE,
            "line": pl.Series(range(1, len(records) + 1), dtype=pl.Int64),
            "raw": [
                json.dumps(record, indent=i).replace("\n", "")
                for record, i in zip(records, spacing, strict=True)
            ],
            "problem": pl.Series([None] * len(records), dtype=pl.String),
        }
    )
    return build_batch(Lines(frame=frame, files=[SOURCE]), ["exploit"], "b")


def landed_as(batch: Batch, table: str, source: str, line: int) -> dict[str, Any]:
    """A lake's run of ``table`` (LANDED_RUNS' columns) with the run_id and content of the
    batch's first run there, landed from ``source`` at ``line``."""
    first = batch.tables[table].row(0, named=True)
    return {
        "run_id": first["run_id"],
        "content_hash": first["content_hash"],
        "source": source,
        "line": line,
    }


def deduped(
    batch: Batch,
    landed_runs: Sequence[dict[str, Any]] = (),
    landed_attempts: Sequence[tuple[str, str, str]] = (),
    landed_surfaces: Sequence[dict[str, Any]] = (),
) -> Deduped:
    """``dedupe`` of ``batch`` against a lake holding ``landed_runs`` (task runs),
    ``landed_surfaces`` (surface runs) and, as (attempt, run_id, batch_id),
    ``landed_attempts``."""
    runs = pl.DataFrame(list(landed_runs), schema=LANDED_RUNS)
    surfaces = pl.DataFrame(list(landed_surfaces), schema=LANDED_RUNS)
    landed = pl.DataFrame(list(landed_attempts), schema=LANDED_ATTEMPTS_SCHEMA, orient="row")
    attempts = Attempts(run_attempts(batch.tables["run_metadata"]), landed)
    return dedupe(batch, runs, surfaces, NOTHING_HELD, attempts=attempts)
