"""Task-grade lines to fields, and accepted records to the landed task tables.

The parse SQL (``sql/ingest/parse_lines.sql``) reads every candidate line once; its field
columns come from ``fields.py``. As ``pipeline/surface/parse.py`` does for reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import duckdb
import polars as pl

from pipeline.tasks.fields import (
    FIELDS_MARK,
    TYPE_PATHS_MARK,
    VALUE_PATHS_MARK,
    select_list,
    type_paths,
    value_paths,
)
from pipeline.tasks.validate import validate_task_records

PARSE_LINES_SQL = "ingest/parse_lines.sql"


@cache
def parse_marks() -> dict[str, str]:
    """What parse_lines.sql's marks stand for, generated from the task fields."""
    return {
        VALUE_PATHS_MARK: value_paths(),
        TYPE_PATHS_MARK: type_paths(),
        FIELDS_MARK: select_list(),
    }


def task_tables(
    records: pl.DataFrame,
    fields: pl.DataFrame,
    env_types: Sequence[str],
    batch_id: str,
    con: duckdb.DuckDBPyConnection,
) -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
    """Validated task records as the four landed task tables, plus rejects (row_nr, reason).

    ``records`` are the task lines (row_nr, source, line, raw, content_hash), ``fields``
    their parsed fields (Parsed.fields: the same rows).
    """
    checked_records = validate_task_records(fields, env_types, con=con)
    # Lazy, so each join gathers only the columns its table keeps: the fields are ~60
    # columns wide, and the lines carry every record's raw text.
    accepted = checked_records.fields.lazy().join(
        records.lazy().select("row_nr", "source", "line", "raw", "content_hash"),
        on="row_nr",
        maintain_order="left",
    )
    keys = checked_records.fields.lazy().select("row_nr", "run_id")
    batch = pl.lit(batch_id)
    runs = accepted.select(
        "row_nr",
        "run_id",
        "agent",
        "agent_version",
        "problem_id",
        "env_type",
        pl.col("graded_at").dt.convert_time_zone("UTC").dt.cast_time_unit("us"),
        pl.col("defect_id"),
        pl.col("cwe"),
        pl.col("project"),
        pl.col("trial").cast(pl.Int64).fill_null(0),
        pl.col("cost_usd"),
        pl.col("tokens"),
        pl.col("wall_seconds"),
        pl.col("env_internal_failure").fill_null(False),
        pl.col("allow_unbounded").fill_null(False),
        pl.col("failure_logs").cast(pl.List(pl.String)).fill_null([]),
        pl.col("minimization_final_size"),
        pl.col("minimization_minimal_size"),
        pl.col("audit_recall"),
        pl.col("audit_precision"),
        record=pl.col("raw"),
        source=pl.col("source"),
        line=pl.col("line"),
        batch_id=batch,
        content_hash=pl.col("content_hash"),
    )
    # Rows keep the parse's order (each join keeps its left side's), as the lake stores them.
    parts = checked_records.parts.lazy().join(keys, on="row_nr", maintain_order="left")
    subscores = parts.filter(pl.col("part") == "subscores").select(
        "row_nr", "run_id", component="name", stored_subscore="value"
    )
    weights = parts.filter(pl.col("part") == "weights").select(
        "row_nr", component="name", record_weight="value"
    )
    components = subscores.join(weights, on=["row_nr", "component"], maintain_order="left").select(
        "row_nr", "run_id", "component", "stored_subscore", "record_weight", batch_id=batch
    )
    penalties = parts.filter(pl.col("part") == "penalties").select(
        "row_nr", "run_id", penalty="name", value="value", batch_id=batch
    )
    metadata = (
        checked_records.metadata.lazy()
        .join(keys, on="row_nr", maintain_order="left")
        .select("row_nr", "run_id", "key", "value", "value_num", batch_id=batch)
    )
    names = ("task_runs", "task_components", "task_penalties", "run_metadata")
    built = pl.collect_all([runs, components, penalties, metadata])
    tables = dict(zip(names, built, strict=True))
    return tables, checked_records.rejected


def accepted_keys(tables: dict[str, pl.DataFrame], fields: pl.DataFrame) -> pl.DataFrame:
    """Each accepted task record's top-level keys (row_nr, top_keys), as parsed."""
    # Narrowed before the join: joined whole, the ~60 columns of fields were gathered first.
    return fields.select("row_nr", pl.col("top_keys").cast(pl.List(pl.String))).join(
        tables["task_runs"].select("row_nr"), on="row_nr", how="semi"
    )
