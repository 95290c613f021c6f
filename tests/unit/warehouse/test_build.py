"""Builds from nothing (pipeline/warehouse/build.py): each starts from the same empty file,
made once per process, and holds every view and staging table the code defines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from pipeline.warehouse import STAGE_PREFIX, build_warehouse, models, staged_tables, warehouse_path


def _catalog(lake: Path) -> dict[str, Any]:
    con = duckdb.connect(str(warehouse_path(lake)), read_only=True)
    try:
        return {
            "tables": con.execute(
                "select table_name, column_name, data_type from information_schema.columns "
                "order by all"
            ).fetchall(),
            "views": con.execute(
                "select view_name, sql from duckdb_views() where not internal order by all"
            ).fetchall(),
            "macros": con.execute(
                "select distinct function_name from duckdb_functions() "
                "where not internal and function_type like '%macro%' order by all"
            ).fetchall(),
            "meta": con.execute("select * from _meta order by all").fetchall(),
        }
    finally:
        con.close()


def test_every_build_from_nothing_holds_the_same_views_tables_and_facts(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for lake in (first, second):
        lake.mkdir()
        built = build_warehouse(lake, "r-1")
        assert not built.incremental
    assert _catalog(first) == _catalog(second)
    catalog = _catalog(second)
    assert {name for name, _ in catalog["views"]} == set(models())
    tables = {name for name, _, _ in catalog["tables"]}
    assert {STAGE_PREFIX + table for table in staged_tables()} <= tables
    assert ("rubric_id", "r-1") in catalog["meta"]
    assert catalog["macros"], "the macros of sql/macros/ are in the file"
