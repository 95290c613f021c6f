"""What a batch brings that the lake has never held: new fields, finding kinds, components.

A grader that starts writing a new field, a probe that emits a new finding
kind, or a rubric-less component must not break a nightly run (they land), but
a person should hear of it: ``schema_news`` lists them for the run summary.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import polars as pl

from pipeline import lake as lk
from pipeline.sql import run_sql
from schemas import polars_schema
from schemas.registry import LANDED

# news key -> (table, column, JSON record column or not)
NEWS: dict[str, tuple[str, str, bool]] = {
    "task_fields": ("task_runs", "record", True),
    "surface_fields": ("surface_runs", "record", True),
    "finding_kinds": ("surface_findings", "kind", False),
    "components": ("task_components", "component", False),
}


def _names(frame: pl.DataFrame, column: str, is_record: bool) -> pl.DataFrame:
    """Distinct names: the top-level keys of JSON records, or a column's values."""
    if is_record:
        keys = run_sql("evolution/top_level_keys.sql", {"records": frame.select(record=column)})
        return keys.select(pl.col("name").cast(pl.String))
    return frame.select(name=pl.col(column).cast(pl.String)).drop_nulls().unique()


def schema_news(batch_tables: Mapping[str, pl.DataFrame], lake: Path) -> dict[str, list[str]]:
    """New top-level fields, finding kinds and component names of a batch, sorted.

    Compared with every other batch the lake holds, so it gives the same answer
    called before or after the batch is committed.
    """
    news: dict[str, list[str]] = {}
    for key, (table, column, is_record) in NEWS.items():
        batch = batch_tables.get(table)
        if batch is None or batch.height == 0:
            news[key] = []
            continue
        own_batches = batch.select("batch_id").unique()
        landed = (
            lk.scan_table(lk.table_dir(lake, table), polars_schema(LANDED[table]))
            .select(column, "batch_id")
            .join(own_batches.lazy(), on="batch_id", how="anti")
            .collect()
        )
        fresh = _names(batch, column, is_record).join(
            _names(landed, column, is_record), on="name", how="anti"
        )
        news[key] = fresh["name"].sort().to_list()
    return news
