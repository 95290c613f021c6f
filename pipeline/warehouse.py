"""The warehouse: ``<lake>/warehouse.duckdb``, views over the lake's Parquet.

The views are the files ``sql/NN_*.sql``, applied in filename order. They read
the lake by glob, so they keep working as the lake gains files; the file is
built beside its final name and renamed into place, so an analyst never opens
half a warehouse.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import duckdb
import polars as pl

from pipeline.lake import parquet_files, score_dir, table_dir, write_parquet_atomic
from pipeline.sql import SQL_DIR, sql_text
from schemas import polars_schema
from schemas.registry import LANDED, SCORED

WAREHOUSE_NAME = "warehouse.duckdb"
LAKE_TOKEN = "{{lake}}"
# Scores for the placeholder rubric key: an empty file per score table, so the
# score globs match before anything is scored.
EMPTY_RUBRIC = "__empty__"
# Characters DuckDB's glob would read as patterns; a lake path with them would
# make the views read other folders' files.
GLOB_CHARACTERS = set("*?[]{}")


class WarehouseError(RuntimeError):
    pass


def warehouse_path(lake: Path) -> Path:
    return lake / WAREHOUSE_NAME


def view_files() -> list[Path]:
    return sorted(SQL_DIR.glob("[0-9][0-9]_*.sql"))


def lake_literal(lake: Path) -> str:
    """The lake's absolute path as the text inside a SQL string literal.

    DuckDB cannot bind parameters in CREATE VIEW, so the one value that must
    be written into the views' text is the lake root: it is the operator's
    configuration, never data, it is refused if it holds glob characters, and
    its quotes are doubled.
    """
    root = str(lake.resolve())
    if GLOB_CHARACTERS & set(root) or "\x00" in root:
        raise WarehouseError(f"the lake path {root!r} holds glob characters; choose another")
    return root.replace("'", "''")


def ensure_empty_tables(lake: Path) -> None:
    """One empty file of its full schema in every table folder that has none."""
    for name, model in LANDED.items():
        directory = table_dir(lake, name)
        if not parquet_files(directory):
            write_parquet_atomic(
                pl.DataFrame(schema=polars_schema(model)), directory / "empty.parquet"
            )
    for name, model in SCORED.items():
        directory = score_dir(lake, EMPTY_RUBRIC, name)
        if not parquet_files(directory):
            write_parquet_atomic(
                pl.DataFrame(schema=polars_schema(model)), directory / "empty.parquet"
            )


def build_warehouse(lake: Path, rubric_id: str) -> Path:
    """(Re)create every view; the current rubric's scores are what the views show."""
    ensure_empty_tables(lake)
    final = warehouse_path(lake)
    tmp = final.with_name(f".{final.name}.{secrets.token_hex(4)}.tmp")
    literal = lake_literal(lake)
    try:
        con = duckdb.connect(str(tmp))
        try:
            con.execute(sql_text("queries/meta_create.sql"))
            con.execute(sql_text("queries/meta_insert.sql"), ["rubric_id", rubric_id])
            con.execute(sql_text("queries/meta_insert.sql"), ["lake", str(lake.resolve())])
            for path in view_files():
                text = path.read_text(encoding="utf-8").replace(LAKE_TOKEN, literal)
                try:
                    con.execute(text)
                except duckdb.Error as exc:
                    raise WarehouseError(f"view {path.name} failed: {exc}") from exc
            con.execute("checkpoint")
        finally:
            con.close()
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}.wal").unlink(missing_ok=True)
    return final


def built_rubric_id(lake: Path) -> str | None:
    """The rubric the warehouse file was built for, or None when there is no usable file."""
    path = warehouse_path(lake)
    if not path.exists():
        return None
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error:
        return None
    try:
        row = con.execute(sql_text("queries/meta_get.sql"), ["rubric_id"]).fetchone()
    except duckdb.Error:
        return None
    finally:
        con.close()
    return None if row is None else str(row[0])


def connect_read_only(lake: Path) -> duckdb.DuckDBPyConnection:
    """The analysts' door: the views, and nothing that writes."""
    path = warehouse_path(lake)
    if not path.exists():
        raise WarehouseError(f"no warehouse at {path}: run `python -m pipeline run` first")
    return duckdb.connect(str(path), read_only=True)
