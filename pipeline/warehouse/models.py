"""The warehouse's views as a dbt-style project: ``sql/intermediate/`` and ``sql/marts/``, one
view a file (named after it), applied after the macros of ``sql/macros/`` and after every
view it reads. What a view reads is derived from its SQL, never declared by hand.

Views read the staging tables (``stg_<table>``, one per lake table the warehouse holds:
``staged_tables``, the lake tables some view reads) and other views, never the lake's Parquet.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import cache
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from pipeline.core.sql import SQL_DIR, sql_text
from pipeline.warehouse.file import WarehouseError
from schemas import polars_schema
from schemas.registry import LANDED, SCORED

# DuckDB is imported where a view is made (see pipeline/core/sql.py).
if TYPE_CHECKING:
    import duckdb

STAGE_PREFIX = "stg_"
IDENTIFIER = re.compile(r"[a-z][a-z0-9_]*")
# Views by layer, as dbt lays a project out: the staging tables (stg_*) hold the lake's rows,
# the marts are the views analysts read, and intermediate views (int_*) are what several marts
# build on (they read marts too). A view's name is its file's name.
MODEL_FOLDERS = ("intermediate", "marts")
MACRO_FOLDER = "macros"
_COMMENT = re.compile(r"--[^\n]*")
_STRING = re.compile(r"'(?:[^']|'')*'")
_WORD = re.compile(r"[a-z_][a-z0-9_]*")
_CREATED = re.compile(r"^\s*create\s+or\s+replace\s+view\s+([a-z_][a-z0-9_]*)\s+as\b")
# A relation a query reads: the name after from/join, unless a call follows (unnest(...)).
_READ = re.compile(r"(?<!distinct )\b(?:from|join)\s+([a-z_][a-z0-9_]*)\b(?!\s*\()")
# A common table expression the query defines itself: `with [recursive] x as (` or `, x as (`.
_CTE = re.compile(r"(?:\bwith(?:\s+recursive)?|,)\s+([a-z_][a-z0-9_]*)\s+as\s*\(")


def lake_tables() -> dict[str, pl.Schema]:
    """Every lake table, by its name in the lake, with its schema."""
    return {name: polars_schema(model) for name, model in {**LANDED, **SCORED}.items()}


@cache
def staged_tables() -> dict[str, pl.Schema]:
    """The lake tables the warehouse holds: those some view reads (as ``stg_<table>``),
    derived from the views' SQL. A lake table no view reads stays in the lake alone: the
    landed task_components, whose every value task_component_scores carries (its rows cost
    a build from nothing about 7% of its CPU)."""
    read = {relation for model in project_models().values() for relation in model.reads}
    return {name: schema for name, schema in lake_tables().items() if STAGE_PREFIX + name in read}


def stage_sql(template: str, table: str) -> str:
    """A staging statement (``sql/warehouse/<template>.sql``) for one table. The table name
    is the only text put into SQL, and it is a key of the schema registry (never data),
    checked as an identifier."""
    if table not in staged_tables() or not IDENTIFIER.fullmatch(table):
        raise WarehouseError(f"not a lake table the warehouse holds: {table!r}")
    return sql_text(f"warehouse/{template}.sql").replace("{table}", STAGE_PREFIX + table)


@dataclass(frozen=True)
class Model:
    """One view: its file and the relations (views or staging tables) it reads."""

    name: str
    path: Path
    reads: frozenset[str]


def _code(sql: str) -> str:
    """The SQL without comments and string literals, lowercased: what names are read from."""
    code = _STRING.sub("''", _COMMENT.sub("", sql)).lower()
    return re.sub(r"\s+", " ", code)


def _model(path: Path, known: Collection[str]) -> Model:
    code = _code(path.read_text(encoding="utf-8"))
    created = _CREATED.match(code)
    if created is None or created.group(1) != path.stem:
        raise WarehouseError(
            f"{path}: must create the view {path.stem!r} (a view is named after its file)"
        )
    ctes = set(_CTE.findall(code))
    unknown = sorted(set(_READ.findall(code)) - ctes - set(known))
    if unknown:
        raise WarehouseError(
            f"view {path.stem} ({path}) reads {', '.join(unknown)}: "
            "neither a view nor a staging table"
        )
    reads = {word for word in _WORD.findall(code) if word in known} - ctes - {path.stem}
    return Model(path.stem, path, frozenset(reads))


def model_paths() -> list[Path]:
    return sorted(path for folder in MODEL_FOLDERS for path in (SQL_DIR / folder).glob("*.sql"))


def macro_files() -> list[Path]:
    return sorted((SQL_DIR / MACRO_FOLDER).glob("*.sql"))


def models(paths: Iterable[Path] | None = None) -> dict[str, Model]:
    """Every view by name, with what it reads (derived from its SQL)."""
    found = list(model_paths() if paths is None else paths)
    names = [path.stem for path in found]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise WarehouseError(f"more than one file defines the view(s) {', '.join(twice)}")
    known = {*names, *(STAGE_PREFIX + table for table in lake_tables())}
    return {path.stem: _model(path, known) for path in found}


@cache
def project_models() -> dict[str, Model]:
    """The project's views (``models()`` of sql/), read once a process: the fingerprint and
    the staged tables both derive from them, and their files do not change while it runs."""
    return models()


def view_order(found: dict[str, Model], given: Collection[str] = ()) -> list[str]:
    """View names in an order where each comes after every view it reads; ``given`` names
    relations the caller provides (left out, and their own reads not followed)."""
    graph = TopologicalSorter[str]()
    for name in sorted(set(found) - set(given)):
        graph.add(name, *sorted(found[name].reads & (set(found) - set(given))))
    try:
        return list(graph.static_order())
    except CycleError as exc:
        cycle = " -> ".join(exc.args[1])
        raise WarehouseError(f"views read each other in a cycle: {cycle}") from exc


def view_files() -> list[Path]:
    """The macro files, then every view's file, each after the views it reads."""
    found = project_models()
    return [*macro_files(), *(found[name].path for name in view_order(found))]


def upstream(
    found: dict[str, Model], wanted: Iterable[str], given: Collection[str] = ()
) -> set[str]:
    """``wanted`` and every view they read, directly or not, short of ``given``."""
    todo, seen = list(wanted), set[str]()
    while todo:
        name = todo.pop()
        if name in seen or name in given:
            continue
        if name not in found:
            raise WarehouseError(f"no view named {name!r}")
        seen.add(name)
        todo.extend(found[name].reads)
    return seen


def create_views(
    con: duckdb.DuckDBPyConnection,
    wanted: Collection[str] | None = None,
    given: Collection[str] = (),
) -> list[str]:
    """The macros, then ``wanted`` (default: every view) and what they read, in order;
    relations in ``given`` are the caller's (a test's frame standing in for task_runs)."""
    import duckdb

    found = project_models()
    chosen = set(found) if wanted is None else upstream(found, wanted, given)
    order = [name for name in view_order(found, given) if name in chosen]
    for path in [*macro_files(), *(found[name].path for name in order)]:
        try:
            con.execute(path.read_text(encoding="utf-8"))
        except duckdb.Error as exc:
            raise WarehouseError(f"{path.relative_to(SQL_DIR)} failed: {exc}") from exc
    return order
