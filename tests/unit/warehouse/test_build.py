"""Builds from nothing (pipeline/warehouse/build.py): each starts from the same empty file,
made once per process, and holds every view and staging table the code defines."""

from __future__ import annotations

import importlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipeline.core.settings import current_settings, use_settings
from pipeline.warehouse import STAGE_PREFIX, build_warehouse, models, staged_tables, warehouse_path
from pipeline.warehouse import build as build_module
from pipeline.warehouse.models import lake_tables


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


def test_a_build_runs_within_the_settings_memory_and_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, str]] = []
    real = build_module._apply

    def recorded(con: duckdb.DuckDBPyConnection, *args: Any) -> None:
        ((memory, threads),) = con.execute(
            "select current_setting('memory_limit'), current_setting('threads')::varchar"
        ).fetchall()
        seen.append((memory, threads))
        real(con, *args)

    monkeypatch.setattr(build_module, "_apply", recorded)
    settings = replace(current_settings(), duckdb_memory_bytes=3 * 2**30, duckdb_threads=1)
    with use_settings(settings):
        build_warehouse(tmp_path, "r-1")
    # DuckDB shows the limit in its own units: 3 GiB is 3.0 GiB.
    assert seen == [("3.0 GiB", "1")]


def test_the_warehouse_holds_the_lake_tables_its_views_read_and_no_other() -> None:
    read = {relation for model in models().values() for relation in model.reads}
    assert set(staged_tables()) == {t for t in lake_tables() if STAGE_PREFIX + t in read}
    # The landed components stay in the lake: task_component_scores carries each of their
    # values (stored_subscore, weight_as_graded) for the views.
    assert "task_components" not in staged_tables()
    assert {"task_runs", "task_penalties", "run_metadata", "task_component_scores"} <= set(
        staged_tables()
    )


def test_the_projects_views_are_parsed_once_a_process(monkeypatch: pytest.MonkeyPatch) -> None:
    models_module = importlib.import_module("pipeline.warehouse.models")
    parsed: list[None] = []
    real = models_module.models

    def counted(*args: Any, **kwargs: Any) -> Any:
        parsed.append(None)
        return real(*args, **kwargs)

    monkeypatch.setattr(models_module, "models", counted)
    for cached in (models_module.project_models, staged_tables, build_module.fingerprint):
        cached.cache_clear()
    # What a command that finds its warehouse up to date derives from the views.
    build_module.fingerprint()
    staged_tables()
    models_module.view_files()
    assert len(parsed) == 1
