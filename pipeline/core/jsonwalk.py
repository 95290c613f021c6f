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

from pipeline.core.sql import run_sql, sql_text

if TYPE_CHECKING:
    import duckdb

DOCS_VIEW = "walk_docs"


def walk_json(
    docs: pl.DataFrame,
    judge: str,
    con: duckdb.DuckDBPyConnection,
    params: list[Any] | None = None,
    finish: str | None = None,
) -> pl.DataFrame:
    """What ``judge`` found on every level of ``docs``, or ``finish`` of it.

    ``docs``: row_nr and doc (JSON text; null for none). ``judge``: sql/<judge>, a query over
    the table walk_level (queries/walk_roots.sql names its columns) with ``params`` bound.
    ``finish``: sql/<finish>, a query over the view walk_found, the judge's rows of every
    level.
    """
    con.register(DOCS_VIEW, docs)
    try:
        con.execute(sql_text("queries/walk_roots.sql"))
        found = [con.sql(sql_text(judge), params=params).pl()]
        while _containers(con):
            con.execute(sql_text("queries/walk_children.sql"))
            found.append(con.sql(sql_text(judge), params=params).pl())
    finally:
        con.unregister(DOCS_VIEW)
        con.execute(sql_text("queries/walk_drop.sql"))
    walked = pl.concat(found)
    return walked if finish is None else run_sql(finish, {"walk_found": walked}, con=con)


def _containers(con: duckdb.DuckDBPyConnection) -> bool:
    ((found,),) = con.execute(sql_text("queries/walk_containers.sql")).fetchall()
    return bool(found)
