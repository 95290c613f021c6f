"""The warehouse: ``<lake>/warehouse.duckdb``, one self-contained DuckDB file.

The staging layer lives inside the file: ``stg_<table>`` is a table holding the
rows of one lake table (every landed table, and every score table under the
current rubric only), each row tagged with ``_part``, the name of the lake file
(part) it came from. The views (``sql/staging/``, ``sql/marts/``, each applied after the
macros of ``sql/macros/`` and after every view it reads) read those tables, never the
lake's Parquet: DuckDB resolves a path in a view against the reader's working
directory, so views over Parquet could not follow the lake when it is copied,
moved or tarred. This file answers wherever it goes, with no command run first,
and it is written in a storage version that older DuckDB releases read.

Readers see a build whole or not at all. It is written beside its final name
and renamed into place after the lake's transaction has committed, and a part
whose runs have no score under the current rubric yet is left out whole (its
runs, metadata and quarantine rows), so no reader sees a run without its score.

A build is incremental: when the previous file was built by the same code (its
fingerprint: the views' SQL, the tables' schemas, the storage version), it is
copied and only the lake files added, changed or removed since are loaded or
dropped; under a new rubric that is every score file, while the landed tables
stay. Otherwise the file is built from nothing.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shlex
import shutil
import sys
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import cache
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import duckdb
import polars as pl

from pipeline.core.sql import SQL_DIR, sql_text
from pipeline.storage.lake import SCORE_FAMILIES
from pipeline.storage.store import LakeStore
from schemas import polars_schema
from schemas.registry import LANDED, SCORED

WAREHOUSE_NAME = "warehouse.duckdb"
# An older storage format than DuckDB 2.0's default, so that DuckDB 1.4.0 and later open the
# file, among them the `duckdb` command `pip install duckdb-cli` gives (1.5.x reads format
# numbers 64..68 only; this one is 67). Tests open it with duckdb-cli 1.5.
STORAGE_VERSION = "v1.4.0"
OLDEST_READER = STORAGE_VERSION.removeprefix("v")
# Raised when the file's layout changes in a way the SQL files and schemas do not show.
LAYOUT = 1
STAGE_PREFIX = "stg_"
PART_COLUMN = "_part"
# Characters DuckDB's read_parquet expands as a glob even in a list of paths: a lake
# path holding one would make the build read other folders' files.
GLOB_CHARACTERS = set("*?[]{}")
IDENTIFIER = re.compile(r"[a-z][a-z0-9_]*")
FILE_COLUMNS = {
    "tbl": pl.String,
    "path": pl.String,
    "part": pl.String,
    "size": pl.Int64,
    "mtime_ns": pl.Int64,
}


class WarehouseError(RuntimeError):
    pass


@dataclass(frozen=True)
class Build:
    """What one build did: from nothing or from the previous file, and the files it moved."""

    path: Path
    incremental: bool
    files_loaded: int
    files_dropped: int
    seconds: float
    size_bytes: int


def warehouse_path(lake: Path) -> Path:
    return lake / WAREHOUSE_NAME


def view_files() -> list[Path]:
    """The macro files, then every view's file, each after the views it reads."""
    found = models()
    return [*macro_files(), *(found[name].path for name in view_order(found))]


def staged_tables() -> dict[str, pl.Schema]:
    """Every lake table the warehouse holds, by its name in the lake, with its schema."""
    return {name: polars_schema(model) for name, model in {**LANDED, **SCORED}.items()}


@cache
def fingerprint() -> str:
    """What a previous file must have been built with for this code to add to it."""
    digest = hashlib.sha256(f"{LAYOUT} {STORAGE_VERSION}".encode())
    for path in view_files():
        digest.update(path.relative_to(SQL_DIR).as_posix().encode() + path.read_bytes())
    for name, schema in staged_tables().items():
        digest.update(f"{name} {schema!r}".encode())
    return digest.hexdigest()


def _stage_sql(template: str, table: str) -> str:
    """A staging statement for one table. The table name is the only text put into
    SQL, and it is a key of the schema registry (never data), checked as an identifier."""
    if table not in staged_tables() or not IDENTIFIER.fullmatch(table):
        raise WarehouseError(f"not a lake table: {table!r}")
    return sql_text(f"warehouse/{template}.sql").replace("{table}", STAGE_PREFIX + table)


def check_lake_path(lake: Path) -> str:
    root = str(lake.resolve())
    if GLOB_CHARACTERS & set(root) or "\x00" in root:
        raise WarehouseError(f"the lake path {root!r} holds glob characters; choose another")
    return root


# --------------------------------------------------------------------------- the views

# Views by layer, as dbt lays a project out: staging views (stg_*) shape the staging tables
# for the marts, the views analysts read. A view's name is its file's name.
MODEL_FOLDERS = ("staging", "marts")
MACRO_FOLDER = "macros"
_COMMENT = re.compile(r"--[^\n]*")
_STRING = re.compile(r"'(?:[^']|'')*'")
_WORD = re.compile(r"[a-z_][a-z0-9_]*")
_CREATED = re.compile(r"^\s*create\s+or\s+replace\s+view\s+([a-z_][a-z0-9_]*)\s+as\b")
# A relation a query reads: the name after from/join, unless a call follows (unnest(...)).
_READ = re.compile(r"(?<!distinct )\b(?:from|join)\s+([a-z_][a-z0-9_]*)\b(?!\s*\()")
# A common table expression the query defines itself: `with [recursive] x as (` or `, x as (`.
_CTE = re.compile(r"(?:\bwith(?:\s+recursive)?|,)\s+([a-z_][a-z0-9_]*)\s+as\s*\(")


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
    known = {*names, *(STAGE_PREFIX + table for table in staged_tables())}
    return {path.stem: _model(path, known) for path in found}


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
    found = models()
    chosen = set(found) if wanted is None else upstream(found, wanted, given)
    order = [name for name in view_order(found, given) if name in chosen]
    for path in [*macro_files(), *(found[name].path for name in order)]:
        try:
            con.execute(path.read_text(encoding="utf-8"))
        except duckdb.Error as exc:
            raise WarehouseError(f"{path.relative_to(SQL_DIR)} failed: {exc}") from exc
    return order


# --------------------------------------------------------------------------- the lake's side


def hidden_parts(lake: Path, rubric_id: str) -> set[str]:
    """Parts with runs that lack any of their score files under ``rubric_id``."""
    store = LakeStore(lake)
    hidden: set[str] = set()
    for runs, tables in SCORE_FAMILIES.items():
        landed = {p.stem for p in store.files(runs)}
        for table in tables:
            hidden |= landed - {p.stem for p in store.files(table, rubric_id)}
    return hidden


def lake_files(lake: Path, rubric_id: str) -> pl.DataFrame:
    """The lake files the warehouse shows under ``rubric_id``, with what identifies their
    content (size, mtime: every lake file is written whole and renamed into place)."""
    store = LakeStore(lake)
    hidden = hidden_parts(lake, rubric_id)
    per_part = {table for tables in SCORE_FAMILIES.values() for table in tables}
    rows: list[tuple[str, str, str, int, int]] = []
    for table in staged_tables():
        for path in store.files(table, None if table in LANDED else rubric_id):
            if path.stem in hidden and (table in LANDED or table in per_part):
                continue
            stat = path.stat()
            relative = path.relative_to(lake).as_posix()
            rows.append((table, relative, path.stem, stat.st_size, stat.st_mtime_ns))
    return pl.DataFrame(rows, schema=FILE_COLUMNS, orient="row")


# --------------------------------------------------------------------------- the file's side


def _connect(path: Path) -> duckdb.DuckDBPyConnection:
    return duckdb.connect(str(path), config={"storage_compatibility_version": STORAGE_VERSION})


def _create_table(con: duckdb.DuckDBPyConnection, table: str) -> None:
    # From the lake's schema through Arrow: the same column types read_parquet gives
    # for the table's files (a test holds them equal).
    empty = pl.DataFrame(schema={**staged_tables()[table], PART_COLUMN: pl.String})
    con.from_arrow(empty.to_arrow()).create(STAGE_PREFIX + table)


def _create(con: duckdb.DuckDBPyConnection) -> None:
    """An empty warehouse: facts, the file list, one table per lake table, the views."""
    con.execute(sql_text("queries/meta_create.sql"))
    con.execute(sql_text("queries/meta_set.sql"), ["fingerprint", fingerprint()])
    con.execute(sql_text("queries/meta_set.sql"), ["storage_version", STORAGE_VERSION])
    con.execute(sql_text("warehouse/files_create.sql"))
    for table in staged_tables():
        _create_table(con, table)
    create_views(con)


def _held_files(path: Path) -> pl.DataFrame | None:
    """The lake files the warehouse at ``path`` holds, when this code can add to it (same
    fingerprint); else None: build from nothing."""
    if not path.is_file():
        return None
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error:
        return None
    try:
        get = sql_text("queries/meta_get.sql")
        if con.execute(get, ["fingerprint"]).fetchall() != [(fingerprint(),)]:
            return None
        held: pl.DataFrame = con.sql(sql_text("warehouse/files_get.sql")).pl()
    except duckdb.Error:
        return None
    finally:
        con.close()
    return held.cast(FILE_COLUMNS)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Changes:
    """Lake files to load (new or changed) and to drop (removed or changed)."""

    load: pl.DataFrame
    drop: pl.DataFrame

    @classmethod
    def between(cls, held: pl.DataFrame, wanted: pl.DataFrame) -> Changes:
        keys = list(FILE_COLUMNS)
        return cls(
            load=wanted.join(held, on=keys, how="anti"),
            drop=held.join(wanted, on=keys, how="anti"),
        )


def _apply(
    con: duckdb.DuckDBPyConnection, lake: Path, changes: Changes, wanted: pl.DataFrame
) -> None:
    """Drop the rows of the parts in ``changes.drop``, load the files of ``changes.load``,
    and record ``wanted`` as the files the warehouse now holds."""
    tables = set(changes.drop["tbl"]) | set(changes.load["tbl"])
    for table in sorted(tables):
        dropped = changes.drop.filter(pl.col("tbl") == table)["part"].to_list()
        loaded = changes.load.filter(pl.col("tbl") == table)["path"].to_list()
        kept = wanted.filter(pl.col("tbl") == table).height - len(loaded)
        try:
            if dropped and not kept:
                # Every row goes (a new rubric's scores): a new table, whose old blocks
                # the next build reuses, rather than a file that grows with deleted rows.
                con.execute(_stage_sql("stage_drop", table))
                _create_table(con, table)
            elif dropped:
                con.execute(_stage_sql("stage_delete", table), [dropped])
            if loaded:
                files = [str(lake / relative) for relative in loaded]
                con.execute(
                    _stage_sql("stage_insert", table), [list(staged_tables()[table]), files]
                )
        except duckdb.Error as exc:
            raise WarehouseError(f"loading {table} into the warehouse failed: {exc}") from exc
    con.register("wanted_files", wanted)
    try:
        con.execute(sql_text("warehouse/files_replace.sql"))
    finally:
        con.unregister("wanted_files")


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_leftovers(lake: Path) -> None:
    """Temporary files of a build that died (the file and DuckDB's write-ahead log)."""
    for stray in lake.glob(f".{WAREHOUSE_NAME}.*"):
        stray.unlink(missing_ok=True)


def _write(
    lake: Path, rubric_id: str, *, incremental: bool, changes: Changes, wanted: pl.DataFrame
) -> None:
    """The new file, beside the final one (a copy of it when ``incremental``), renamed into
    place once whole."""
    final = warehouse_path(lake)
    tmp = final.with_name(f".{final.name}.{secrets.token_hex(4)}.tmp")
    try:
        if incremental:
            shutil.copyfile(final, tmp)
        con = _connect(tmp)
        try:
            if not incremental:
                _create(con)
            con.execute(sql_text("queries/meta_set.sql"), ["rubric_id", rubric_id])
            _apply(con, lake, changes, wanted)
            con.execute("checkpoint")
        finally:
            con.close()
        _fsync(tmp)
        os.replace(tmp, final)
        _fsync(lake)
    finally:
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}.wal").unlink(missing_ok=True)


def build_warehouse(lake: Path, rubric_id: str) -> Build:
    """Bring the warehouse up to the lake under ``rubric_id``; see the module docstring.

    Called under the lake's lock, after the lake's transaction has committed. When the
    file already holds the lake as it is, nothing is written.
    """
    started = time.perf_counter()
    check_lake_path(lake)
    remove_leftovers(lake)
    wanted = lake_files(lake, rubric_id)
    held = _held_files(warehouse_path(lake))
    changes = Changes.between(pl.DataFrame(schema=FILE_COLUMNS) if held is None else held, wanted)
    changed = changes.load.height or changes.drop.height or built_rubric_id(lake) != rubric_id
    if held is None or changed:
        _write(lake, rubric_id, incremental=held is not None, changes=changes, wanted=wanted)
    return Build(
        path=warehouse_path(lake),
        incremental=held is not None,
        files_loaded=changes.load.height,
        files_dropped=changes.drop.height,
        seconds=time.perf_counter() - started,
        size_bytes=warehouse_path(lake).stat().st_size,
    )


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


def _shell_path(path: Path) -> str:
    """``path`` as a person types it here: relative below the working directory, quoted."""
    absolute = path.absolute()
    try:
        shown = absolute.relative_to(Path.cwd()).as_posix()
    except ValueError:
        shown = str(absolute)
    return shlex.quote(shown)


def open_commands(lake: Path, first_query: str) -> dict[str, str]:
    """The commands that open the warehouse, by what they are, as they can be pasted."""
    python = Path(sys.executable)
    cli = python.with_name("duckdb")  # where `pip install duckdb-cli` puts it
    file = _shell_path(warehouse_path(lake))
    commands = {
        "query": f"{_shell_path(python)} -m pipeline query {shlex.quote(first_query)} "
        f"--lake {_shell_path(lake)}",
        "shell": f"{_shell_path(cli) if cli.is_file() else 'duckdb'} -readonly {file}",
        "readers": f"DuckDB {OLDEST_READER} or later",
    }
    if not cli.is_file():
        commands["shell_install"] = f"{_shell_path(python)} -m pip install duckdb-cli"
    return commands


def connect_read_only(lake: Path) -> duckdb.DuckDBPyConnection:
    """The analysts' door: the views, and nothing that writes."""
    path = warehouse_path(lake)
    if not path.exists():
        raise WarehouseError(f"no warehouse at {path}: run `python -m pipeline run` first")
    try:
        return duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        raise WarehouseError(f"cannot open {path} read-only: {exc}") from exc
