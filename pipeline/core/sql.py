"""SQL lives in ``sql/``: this module finds a file and runs it over frames.

Frames are handed to DuckDB as Arrow-backed views; values never enter SQL text.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from pipeline.core.settings import current_settings

# DuckDB is imported where a connection is made: a command that finds its warehouse up to
# date (a rescore under the same rubric) never needs it, and its import costs ~0.04 s.
if TYPE_CHECKING:
    import duckdb

SQL_DIR = Path(__file__).resolve().parent.parent / "sql"
# A warehouse macro every connection has too: the quoting of a JSON key in a path.
JSON_KEYS_MACRO = "macros/json_keys.sql"


@cache
def sql_text(name: str) -> str:
    """The text of ``sql/<name>``; names are ours, never from data."""
    return (SQL_DIR / name).read_text(encoding="utf-8")


# Rows per Arrow batch handed to DuckDB: it scans the batches of a frame in
# parallel, and a frame of one chunk would keep every query on one thread.
BATCH_ROWS = 16_384


def quoted(name: str) -> str:
    """A name as a DuckDB identifier, whatever it holds: for names a statement cannot bind
    (tables, databases), read from a catalog rather than written here."""
    return '"' + name.replace('"', '""') + '"'


def in_batches(frame: pl.DataFrame, rows: int = BATCH_ROWS) -> pl.DataFrame:
    """The same frame, held in chunks of ``rows`` rows (zero-copy slices)."""
    if frame.height <= rows:
        return frame
    return pl.concat(
        [frame.slice(offset, rows) for offset in range(0, frame.height, rows)], rechunk=False
    )


def duckdb_config() -> dict[str, str | bool | int | float | list[str]]:
    """memory_limit and threads of the running command's settings: past the memory a
    query fails with an out-of-memory error, which fails that input file alone."""
    settings = current_settings()
    return {"memory_limit": f"{settings.duckdb_memory_bytes}B", "threads": settings.duckdb_threads}


def connect() -> duckdb.DuckDBPyConnection:
    import duckdb

    con = duckdb.connect(config=duckdb_config())
    prepare_session(con)
    return con


def prepare_session(con: duckdb.DuckDBPyConnection) -> None:
    """What every pipeline connection has: queries/session.sql and the warehouse's macro
    quoting a JSON key, with which run_metadata's keys are built here."""
    con.execute(sql_text(JSON_KEYS_MACRO))
    con.execute(sql_text("queries/session.sql"))


def run_sql(
    name: str,
    frames: dict[str, pl.DataFrame],
    params: list[Any] | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
    marks: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """Run ``sql/<name>`` with each frame visible as a view of its key, and each mark of
    ``marks`` in its text replaced by SQL generated from a declaration (never by data)."""
    own = con is None
    active = connect() if con is None else con
    try:
        for view, frame in frames.items():
            active.register(view, frame)
        query = sql_text(name)
        for mark, generated in (marks or {}).items():
            query = query.replace(mark, generated)
        relation = active.sql(query, params=params)
        if relation is None:
            raise ValueError(f"sql/{name} is not a query")
        result: pl.DataFrame = relation.pl()
        for view in frames:
            active.unregister(view)
        return result
    finally:
        if own:
            active.close()
