"""JSON documents walked one level at a time in DuckDB, each level judged as it is made.

DuckDB's json_tree carries the whole document on every node, so a list of 100k items costs
100k copies of it. A recursive query walking level by level keeps every level it made until
it ends, and a list nested n deep holds the text below it on each of its n levels: a 16 MB
string 60 lists deep held 1 GB for one line, 4.3 GiB at peak for a chunk of four such lines,
8.4 GiB with two chunks built side by side. Here only the current level is held: the
caller's query (``judge``) keeps what it needs of each level's nodes, and only the objects'
and lists' text goes on to make the next level. The loop is over levels, never rows: the
reader's depth limit bounds it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from pipeline.core.sql import sql_text

if TYPE_CHECKING:
    import duckdb

DOCS_VIEW = "walk_docs"


def walk_json(
    docs: pl.DataFrame,
    judge: str,
    con: duckdb.DuckDBPyConnection,
    params: list[Any] | None = None,
    finish: str = "queries/walk_found.sql",
) -> pl.DataFrame:
    """``finish`` (sql/<finish>, over the table walk_found) of what ``judge`` found.

    ``docs``: row_nr and doc (JSON text; null for none). ``judge``: sql/<judge>, a query over
    the table walk_level (queries/walk_roots.sql names its columns) with ``params`` bound,
    run on every level of the documents; its rows of all levels make walk_found.
    """
    con.register(DOCS_VIEW, docs)
    try:
        con.execute(sql_text("queries/walk_roots.sql"))
        con.execute(f"create or replace temp table walk_found as {sql_text(judge)}", params)
        while _containers(con):
            con.execute(sql_text("queries/walk_children.sql"))
            con.execute(f"insert into walk_found {sql_text(judge)}", params)
        found: pl.DataFrame = con.sql(sql_text(finish)).pl()
        return found
    finally:
        con.unregister(DOCS_VIEW)
        con.execute(sql_text("queries/walk_drop.sql"))


def _containers(con: duckdb.DuckDBPyConnection) -> bool:
    ((found,),) = con.execute(sql_text("queries/walk_containers.sql")).fetchall()
    return bool(found)
