"""Building the warehouse: ``<lake>/warehouse.duckdb``, one self-contained DuckDB file.

The staging layer lives inside the file: ``stg_<table>`` is a table holding the
rows of one lake table (every landed table, and every score table under the
current rubric only), each row tagged with ``_part``, the name of the lake file
(part) it came from. The views (``models.py``: ``sql/intermediate/``, ``sql/marts/``)
read those tables, never the lake's Parquet: DuckDB resolves a path in a view
against the reader's working directory, so views over Parquet could not follow
the lake when it is copied, moved or tarred. This file answers wherever it goes,
with no command run first, and it is written in a storage version that older
DuckDB releases read (``file.py``, which also opens it read-only).

Readers see a build whole or not at all. It is written beside its final name
and renamed into place after the lake's transaction has committed, and a part
whose runs have no score under the current rubric yet is left out whole (its
runs, metadata and quarantine rows), so no reader sees a run without its score.

What a file holds (its fingerprint, rubric and lake files) is also recorded beside it
(``HELD_RECORD``), so a build that finds nothing to change need not open it.

A build is incremental: when the previous file was built by the same code (its
fingerprint: the views' SQL, the tables' schemas, the storage version), it is
copied and only the lake files added, changed or removed since are loaded or
dropped; under a new rubric that is every score file, while the landed tables
stay (a score table the new rubric leaves as it was, but for the rubric its rows name,
keeps its rows and has that column rewritten: ``relabel.py``). A file whose size or mtime
moved is hashed, and one rewritten with the same bytes (a lake restored from a copy, a file
touched by hand; a rescore under the same rubric leaves such score files in place) is not
loaded again: the warehouse holds its rows already. Otherwise the file is built from
nothing: from a copy of the empty file (facts, staging tables, views), which a process
creates once, since creating the views costs more than loading a small lake.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from pipeline.core.settings import current_settings
from pipeline.core.sql import SQL_DIR, duckdb_config, sql_text
from pipeline.storage import lake as lk
from pipeline.storage.lake import (
    SCORE_FAMILIES,
    fsync_path,
)
from pipeline.storage.parts import file_facts
from pipeline.storage.store import LakeStore
from pipeline.warehouse.file import (
    STORAGE_VERSION,
    WAREHOUSE_NAME,
    SharedInstance,
    WarehouseError,
    meta_value,
    read_if_usable,
    warehouse_path,
)
from pipeline.warehouse.loads import Relabel, load_all, load_failed, plan
from pipeline.warehouse.models import (
    IDENTIFIER,
    STAGE_PREFIX,
    create_views,
    stage_sql,
    staged_tables,
    view_files,
)
from pipeline.warehouse.relabel import relabelled
from schemas.registry import LANDED

# DuckDB is imported where the file is written (see pipeline/core/sql.py): a build that
# finds nothing to change reads what the file holds from its record instead (``_held``).
if TYPE_CHECKING:
    import duckdb

# Raised when the file's layout changes in a way the SQL files and schemas do not show.
LAYOUT = 3
PART_COLUMN = "_part"
FILE_COLUMNS = {
    "tbl": pl.String,
    "path": pl.String,
    "part": pl.String,
    "size": pl.Int64,
    "mtime_ns": pl.Int64,
    "sha256": pl.String,
}
# What says a held file may have changed; only then are its bytes hashed.
FILE_STAT = ["tbl", "path", "part", "size", "mtime_ns"]


@dataclass(frozen=True)
class Build:
    """What one build did: from nothing or from the previous file, and the files it moved."""

    path: Path
    incremental: bool
    files_loaded: int
    files_dropped: int
    seconds: float
    size_bytes: int
    # False: the file already showed the lake as it is, and nothing was written.
    written: bool = True


@cache
def fingerprint() -> str:
    """What a previous file must have been built with for this code to add to it."""
    digest = hashlib.sha256(f"{LAYOUT} {STORAGE_VERSION}".encode())
    # DuckDB's build too: how it writes a view's SQL back, which check compares, is its own.
    # Read from its package, not imported: a command that changes nothing imports no DuckDB.
    duckdb = find_spec("duckdb")
    for name in ("_build_info.py", "_version.py"):
        found = Path(duckdb.origin).with_name(name) if duckdb and duckdb.origin else None
        if found is not None and found.is_file():
            digest.update(found.read_bytes())
    for path in view_files():
        digest.update(path.relative_to(SQL_DIR).as_posix().encode() + path.read_bytes())
    for name, schema in staged_tables().items():
        digest.update(f"{name} {schema!r}".encode())
    return digest.hexdigest()


def other_version(lake: Path) -> str:
    """What `check`, `query` and the pipeline's own reads (file.stale_reason) say of a file
    another version built: it keeps its views until a command that writes builds it again
    (its fingerprint differs)."""
    return (
        "the warehouse was built by another version of the pipeline, whose views differ from "
        f"this one's: {lk.command_on(lake, 'score')} (or any command that writes) builds it again"
    )


def built_by_this_version(con: duckdb.DuckDBPyConnection) -> bool | None:
    """Whether the open file's build record names this code's fingerprint; None when it
    records none (a file whose build never finished)."""
    recorded = meta_value(con, "fingerprint")
    return None if recorded is None else recorded == fingerprint()


def check_lake_path(lake: Path) -> str:
    root = str(lake.resolve())
    problem = lk.lake_path_problem(lake)
    if problem:
        raise WarehouseError(problem)
    return root


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
    content (size, mtime: every lake file is written whole and renamed into place); their
    hashes are left null, for ``Changes.between`` to fill in where it needs them."""
    store = LakeStore(lake)
    hidden = hidden_parts(lake, rubric_id)
    per_part = {table for tables in SCORE_FAMILIES.values() for table in tables}
    rows: list[tuple[str, str, str, int, int, None]] = []
    for table in staged_tables():
        for path in store.files(table, None if table in LANDED else rubric_id):
            if path.stem in hidden and (table in LANDED or table in per_part):
                continue
            stat = path.stat()
            relative = path.relative_to(lake).as_posix()
            rows.append((table, relative, path.stem, stat.st_size, stat.st_mtime_ns, None))
    return pl.DataFrame(rows, schema=FILE_COLUMNS, orient="row")


# --------------------------------------------------------------------------- the file's side


_WRITER = SharedInstance()


@contextmanager
def _writing(path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A new file at ``path``, in the storage version readers need (``file.py``), written
    through the process's writer instance (``SharedInstance``), closed when the block ends."""
    with _WRITER.attached(str(path), f"storage_version '{STORAGE_VERSION}'") as con:
        # The settings' threads, which load_all also takes as its number of loads side by
        # side, and memory (an instance's settings: builds in one process take the same).
        # Without a limit DuckDB holds up to 80% of the machine: a build from nothing of
        # a 10M-run lake peaked at 8.2 GiB; past the limit it writes blocks to the file.
        config = duckdb_config()
        con.execute("set threads = ?", [config["threads"]])
        con.execute("set memory_limit = ?", [config["memory_limit"]])
        yield con


# Columns of long text, each a record's whole input line: stored with zstd (stage_add_text.sql).
# At 100k runs task_runs.record takes 7 MB instead of 31, and 0.4 s less CPU to write. DuckDB
# sets a column's compression only when the column is made, so these come last in their table.
ZSTD_COLUMNS = ("record", "raw")


def _create_table(con: duckdb.DuckDBPyConnection, table: str) -> None:
    # From the lake's schema through Arrow: the same column types read_parquet gives
    # for the table's files (a test holds them equal).
    schema = staged_tables()[table]
    text = [column for column in ZSTD_COLUMNS if column in schema]
    if any(schema[column] != pl.String or not IDENTIFIER.fullmatch(column) for column in text):
        raise WarehouseError(f"{table}: a column of ZSTD_COLUMNS is not a string column")
    rest = {column: dtype for column, dtype in schema.items() if column not in text}
    empty = pl.DataFrame(schema={**rest, PART_COLUMN: pl.String})
    con.from_arrow(empty.to_arrow()).create(STAGE_PREFIX + table)
    for column in text:
        con.execute(stage_sql("stage_add_text", table).replace("{column}", column))


def _create(con: duckdb.DuckDBPyConnection) -> None:
    """An empty warehouse: facts, the file list, one table per lake table, the views; one
    transaction, not a commit per statement."""
    con.execute("begin")
    con.execute(sql_text("queries/meta_create.sql"))
    con.execute(sql_text("queries/meta_set.sql"), ["fingerprint", fingerprint()])
    con.execute(sql_text("queries/meta_set.sql"), ["storage_version", STORAGE_VERSION])
    con.execute(sql_text("warehouse/files_create.sql"))
    for table in staged_tables():
        _create_table(con, table)
    create_views(con)
    con.execute("commit")


# The schema a build creates the pipeline's objects in.
MAIN_SCHEMA = "main"


def object_name(schema: str, name: str) -> str:
    """How check names an object of the file: by its name in main, with its schema in
    another (an analyst's, which may hold a table or view of a name the pipeline's has)."""
    return name if schema == MAIN_SCHEMA else f"{schema}.{name}"


def catalog(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], str]:
    """The open file's tables, views and macros, (kind, object_name) -> definition (its
    spacing evened out)."""
    rows = con.execute(sql_text("queries/warehouse_catalog.sql")).fetchall()
    return {
        (kind, object_name(schema, name)): " ".join(str(text).split())
        for kind, schema, name, text in rows
    }


@cache
def built_catalog() -> dict[tuple[str, str], str]:
    """The catalog this code's build creates: of the empty file every build starts from, in
    the same storage version (which decides how DuckDB writes a view's SQL back)."""
    import tempfile

    import duckdb

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / WAREHOUSE_NAME
        _write_empty(path)
        with duckdb.connect(str(path), read_only=True) as con:
            return catalog(con)


def foreign_objects(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The pipeline's tables, views and macros the open file lacks or defines otherwise than
    this code's build (by hand: an incremental build keeps them, so `by_agent` could show
    other numbers for good). Objects an analyst added beside them are theirs."""
    built, found = built_catalog(), catalog(con)
    return [f"{kind} {name} is missing" for kind, name in built.keys() - found] + [
        f"{kind} {name} is not defined as the pipeline defines it"
        for (kind, name), text in found.items()
        if (kind, name) in built and built[kind, name] != text
    ]


# The empty warehouse's bytes by fingerprint, made once per process: creating the views
# costs more than the rest of a small build, and every build from nothing starts the same.
_EMPTY: dict[str, bytes] = {}


def _write_empty(path: Path) -> None:
    """An empty warehouse at ``path`` (``_create``), the same bytes every time."""
    made = _EMPTY.get(fingerprint())
    if made is not None:
        path.write_bytes(made)
        return
    with _writing(path) as con:
        _create(con)
        con.execute("checkpoint")
    _EMPTY[fingerprint()] = path.read_bytes()


@dataclass(frozen=True)
class Held:
    """What the warehouse file holds: the lake files it was loaded from, and the rubric it
    was built under."""

    files: pl.DataFrame
    rubric_id: str | None


# What the file holds, recorded beside it (``_state/warehouse_held.json``) once a build has
# put it in place: a command that finds nothing to change (a rescore under the same rubric)
# reads the record instead of opening the file, which spares DuckDB's import and an attach
# (~0.07 s of a 1.3 s rescore of 300k runs). The record speaks for the file only while the
# file is the one it was written for: the same size, mtime and inode (a copied lake, a new
# build or a hand's change makes another file, and the file itself is read).
HELD_RECORD = "warehouse_held"


def _identity(path: Path) -> list[int]:
    stat = path.stat()
    return [stat.st_size, stat.st_mtime_ns, stat.st_ino]


def _record_held(lake: Path, held: Held) -> None:
    document = {
        "file": _identity(warehouse_path(lake)),
        "fingerprint": fingerprint(),
        "rubric_id": held.rubric_id,
        "files": held.files.select(list(FILE_COLUMNS)).rows(),
    }
    lk.write_json_atomic(document, lk.state_path(lake, HELD_RECORD))


def _recorded(lake: Path) -> Held | None:
    """The record of what the file holds, when it is for the file in place; else None."""
    try:
        document = lk.read_json(lk.state_path(lake, HELD_RECORD), None)
        identity = _identity(warehouse_path(lake))
    except (lk.StateFileError, OSError):
        return None  # no record or no file, or a damaged record: the file is read
    if not (
        isinstance(document, dict)
        and document.get("file") == identity
        and document.get("fingerprint") == fingerprint()
        and isinstance(document.get("rubric_id"), str | None)
        and isinstance(document.get("files"), list)
    ):
        return None
    try:
        files = pl.DataFrame(document["files"], schema=FILE_COLUMNS, orient="row")
    except (TypeError, ValueError, pl.exceptions.PolarsError):
        return None
    return Held(files, document["rubric_id"])


def _held_files(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    # Through the Arrow stream, not .pl(): that imports pyarrow (with numpy), ~0.06 s of a
    # command that has no other use for it.
    files = pl.DataFrame(con.sql(sql_text("warehouse/files_get.sql")))
    return files.cast(FILE_COLUMNS)  # type: ignore[arg-type]


def unheld(con: duckdb.DuckDBPyConnection, lake: Path, rubric_id: str) -> Changes:
    """What a build under ``rubric_id`` would load into and drop from the open warehouse
    file: nothing when it shows the lake as it is (a command killed between the lake's
    commit and the warehouse's leaves files to load)."""
    return Changes.between(lake, _held_files(con), lake_files(lake, rubric_id))


def _read_held(path: Path) -> Held | None:
    """What the warehouse file at ``path`` holds, when this code can add to it (same
    fingerprint); else None: build from nothing. One opening of the file reads both."""

    def read(con: duckdb.DuckDBPyConnection) -> Held | None:
        if not built_by_this_version(con):
            return None
        return Held(_held_files(con), meta_value(con, "rubric_id"))

    return read_if_usable(path, read)


@dataclass(frozen=True)
class Changes:
    """Lake files to load (new or changed) and to drop (removed or changed), and the file
    list the warehouse holds after them (``wanted`` with every file's hash)."""

    load: pl.DataFrame
    drop: pl.DataFrame
    wanted: pl.DataFrame
    # Files rewritten with the bytes the warehouse holds: only their mtimes are recorded.
    redated: int

    @classmethod
    def between(cls, lake: Path, held: pl.DataFrame, wanted: pl.DataFrame) -> Changes:
        moved = wanted.join(held, on=FILE_STAT, how="anti")
        hashes = [file_facts(lake / relative)["sha256"] for relative in moved["path"]]
        moved = moved.with_columns(sha256=pl.Series(hashes, dtype=pl.String))
        # Same table, path and bytes as the file the warehouse holds: only its mtime moved.
        same = moved.join(held, on=["tbl", "path", "part", "size", "sha256"], how="semi")
        load = moved.join(same, on=["tbl", "path"], how="anti")
        drop = held.join(wanted, on=FILE_STAT, how="anti").join(
            same, on=["tbl", "path"], how="anti"
        )
        known = pl.concat([held.join(moved, on=["tbl", "path"], how="anti"), moved])
        wanted = wanted.drop("sha256").join(
            known.select("tbl", "path", "sha256"), on=["tbl", "path"], how="left"
        )
        return cls(load, drop, wanted.select(list(FILE_COLUMNS)), same.height)


def _apply(con: duckdb.DuckDBPyConnection, lake: Path, changes: Changes) -> None:
    """Drop the rows of the parts in ``changes.drop``, load the files of ``changes.load``,
    and record ``changes.wanted`` as the files the warehouse now holds."""
    import duckdb

    wanted = changes.wanted
    tables = sorted(set(changes.drop["tbl"]) | set(changes.load["tbl"]))
    drops = {table: changes.drop.filter(pl.col("tbl") == table) for table in tables}
    new = {table: changes.load.filter(pl.col("tbl") == table) for table in tables}
    # Tables whose every held file goes (a new rubric's scores): those whose new files hold
    # the rows they hold, but for the rubric named, keep them (relabel.py).
    replaced = [
        table
        for table in tables
        if drops[table].height and new[table].height == wanted.filter(pl.col("tbl") == table).height
    ]
    relabels = relabelled(con, lake, {t: drops[t] for t in replaced}, {t: new[t] for t in replaced})
    # Per table, the files to load (absolute path, bytes), in the order they are stored.
    loads: dict[str, list[tuple[str, int]]] = {}
    for table in tables:
        if table in relabels:
            continue
        dropped = drops[table]["part"].to_list()
        loaded = new[table].select("path", "size").rows()
        kept = wanted.filter(pl.col("tbl") == table).height - len(loaded)
        try:
            if dropped and not kept:
                # Every row goes (a new rubric's scores): a new table, whose old blocks
                # the next build reuses, rather than a file that grows with deleted rows.
                con.execute(stage_sql("stage_drop", table))
                _create_table(con, table)
            elif dropped:
                con.execute(stage_sql("stage_delete", table), [dropped])
        except duckdb.Error as exc:
            raise load_failed(table, exc) from exc
        if loaded:
            loads[table] = [(str(lake / relative), size) for relative, size in loaded]
    workers = current_settings().duckdb_threads
    jobs = [
        Relabel(table, label, int(new[table]["size"].sum())) for table, label in relabels.items()
    ]
    load_all(con, plan(loads, workers, sum(job.size for job in jobs)), workers, jobs)
    con.register("wanted_files", wanted)
    try:
        con.execute(sql_text("warehouse/files_replace.sql"))
    finally:
        con.unregister("wanted_files")


def leftovers(lake: Path) -> list[Path]:
    """Temporary files of a build that died (the file and DuckDB's write-ahead log)."""
    return sorted(lake.glob(f".{WAREHOUSE_NAME}.*"))


def remove_leftovers(lake: Path) -> None:
    for stray in leftovers(lake):
        stray.unlink(missing_ok=True)


def _write(lake: Path, rubric_id: str, *, incremental: bool, changes: Changes) -> None:
    """The new file, beside the final one (a copy of it when ``incremental``), renamed into
    place once whole."""
    final = warehouse_path(lake)
    tmp = final.with_name(f".{final.name}.{secrets.token_hex(4)}.tmp")
    try:
        if incremental:
            shutil.copyfile(final, tmp)
        else:
            _write_empty(tmp)
        with _writing(tmp) as con:
            con.execute(sql_text("queries/meta_set.sql"), ["rubric_id", rubric_id])
            _apply(con, lake, changes)
            con.execute("checkpoint")
        fsync_path(tmp)
        os.replace(tmp, final)
        fsync_path(lake)
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
    recorded = _recorded(lake)
    held = recorded or _read_held(warehouse_path(lake))
    empty = pl.DataFrame(schema=FILE_COLUMNS)
    changes = Changes.between(lake, empty if held is None else held.files, wanted)
    changed = changes.load.height or changes.drop.height or changes.redated
    written = held is None or bool(changed) or held.rubric_id != rubric_id
    if held is None or written:
        _write(lake, rubric_id, incremental=held is not None, changes=changes)
        _record_held(lake, Held(changes.wanted, rubric_id))
    elif recorded is None:
        _record_held(lake, held)
    return Build(
        path=warehouse_path(lake),
        incremental=held is not None,
        files_loaded=changes.load.height,
        files_dropped=changes.drop.height,
        seconds=time.perf_counter() - started,
        size_bytes=warehouse_path(lake).stat().st_size,
        written=written,
    )
