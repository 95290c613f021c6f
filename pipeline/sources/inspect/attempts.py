"""Which attempt an Inspect sample's run is: its uuid, under ``columns.ATTEMPT_KEY`` in a
run_metadata table (a batch's or the lake's). The ingest lands one attempt once
(``ingest.dedupe``); a record of this form from a ``.jsonl`` file counts too.
"""

from __future__ import annotations

import polars as pl

from pipeline.sources.inspect.columns import ATTEMPT_KEY, RUN_ID_PREFIX


def attempt_rows() -> pl.Expr:
    """The run_metadata rows naming an attempt: a JSON string that is not empty, under a
    run_id of the reader's form (a null or empty uuid names no attempt)."""
    value = pl.col("value")
    return (
        (pl.col("key") == ATTEMPT_KEY)
        & pl.col("run_id").str.starts_with(RUN_ID_PREFIX)
        & value.str.starts_with('"')
        & (value != '""')
    )


def run_attempts(run_metadata: pl.DataFrame) -> pl.DataFrame:
    """The attempts a batch's runs are (row_nr, attempt), from its run_metadata table."""
    return run_metadata.filter(attempt_rows()).select("row_nr", attempt="value")
