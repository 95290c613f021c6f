"""Lake files into the warehouse's staging tables: each table's files cut into loads (one
insert each), loads run side by side, each table's rows stored in the lake's file order.

A table alone keeps few threads busy: DuckDB's unit of work is a Parquet row group (at 100k
runs task_runs' files hold one each), and a large commit compresses the table's last row
groups as it checkpoints. Side by side, the loads keep the cores busy, each on one thread
(``one_thread_per_load``). A table larger than its share of the work (the files' bytes over
the workers) is cut into consecutive runs of files, so that one table's insert does not keep
a core busy while the other idles: after a rubric change the warehouse reloads two score
tables, one of them twice the other's size.

Every load runs in its own transaction, and a table's loads commit in its file order: the
table's rows end up in the order one insert of all its files gives, since appends to one table
from two transactions never conflict and a commit appends its rows after those committed
before it. Commits run on the loads' threads, and no thread waits for another's commit (a
commit writes the rows it appended: up to as much work as the insert). Readers see none of it
before the file is renamed into place; after a failed load the file is never renamed
(``build._write``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

from pipeline.core.sql import quoted, sql_text
from pipeline.warehouse.file import WarehouseError
from pipeline.warehouse.models import stage_sql, staged_tables

# DuckDB is imported where the file is written (see pipeline/core/sql.py).
if TYPE_CHECKING:
    import duckdb


@dataclass(frozen=True)
class Load:
    """One insert: consecutive files of one table (absolute paths) and their bytes."""

    table: str
    files: tuple[str, ...]
    size: int


def plan(
    tables: Mapping[str, Sequence[tuple[str, int]]], workers: int, beside: int = 0
) -> list[list[Load]]:
    """Each table's loads, its files (path, bytes) in their order.

    A load takes the next file while it holds less than its share of the work (all files'
    bytes, with ``beside``, over ``workers``) minus half that file, so a table of twice the
    share becomes two loads of about the share and a table within its share stays one load.
    ``beside`` is the bytes of the files of tables relabelled beside the loads (``Relabel``):
    without them, after a rubric change that relabels task_component_scores, task_scores
    alone was past its share and cut in two, and merging the two loads' partly filled row
    groups cost the closing checkpoint 0.15 s of CPU, alone on one core, at 300k runs.
    """
    total = sum(size for files in tables.values() for _, size in files) + beside
    share = total / max(workers, 1)
    planned: list[list[Load]] = []
    for table, files in tables.items():
        loads: list[Load] = []
        taken: list[str] = []
        size = 0
        for path, file_size in files:
            if taken and size + file_size / 2 > share:
                loads.append(Load(table, tuple(taken), size))
                taken, size = [], 0
            taken.append(path)
            size += file_size
        if taken:
            loads.append(Load(table, tuple(taken), size))
        planned.append(loads)
    return planned


def load_failed(table: str, exc: Exception) -> WarehouseError:
    """The error of a table that could not be loaded (dropped, inserted or committed)."""
    return WarehouseError(f"loading {table} into the warehouse failed: {exc}")


def insert(con: duckdb.DuckDBPyConnection, table: str, files: Sequence[str]) -> None:
    """Rows of ``files`` into ``table``'s staging table (sql/warehouse/stage_insert.sql)."""
    import duckdb

    try:
        con.execute(stage_sql("stage_insert", table), [list(staged_tables()[table]), list(files)])
    except duckdb.Error as exc:
        raise load_failed(table, exc) from exc


@dataclass(frozen=True)
class Relabel:
    """One relabel, beside the loads: every row of a staging table given the rubric id
    ``rubric_id`` (``relabel.py``); ``size`` the bytes of the files it stands for."""

    table: str
    rubric_id: str
    size: int


def relabel(con: duckdb.DuckDBPyConnection, job: Relabel) -> None:
    """``job.table``'s rubric_id column rewritten (sql/warehouse/stage_relabel.sql)."""
    import duckdb

    try:
        con.execute(sql_text("warehouse/relabel_label.sql"), [job.rubric_id])
        try:
            con.execute(stage_sql("stage_relabel", job.table))
        finally:
            con.execute(sql_text("warehouse/relabel_unlabel.sql"))
    except duckdb.Error as exc:
        raise load_failed(job.table, exc) from exc


def commit(table: str, cursor: duckdb.DuckDBPyConnection) -> None:
    """Commit the transaction of ``cursor``, which loaded or relabelled ``table``, and close it."""
    import duckdb

    try:
        cursor.execute("commit")
    except duckdb.Error as exc:
        raise load_failed(table, exc) from exc
    finally:
        cursor.close()


def load_all(
    con: duckdb.DuckDBPyConnection,
    planned: list[list[Load]],
    workers: int,
    relabels: Sequence[Relabel] = (),
) -> None:
    """Run every load of ``planned`` and every relabel, ``workers`` at a time, the largest
    first (so that the small ones fill the other threads meanwhile), each in a transaction
    of its own; a table's loads commit in its file order.

    A load whose table's load before it has not committed yet is left open, and its thread
    moves on to the next load: the thread that commits the load before it commits it next.
    """
    loads = sorted((load for table in planned for load in table), key=lambda load: -load.size)
    jobs: list[Load | Relabel] = sorted([*loads, *relabels], key=lambda job: -job.size)
    if min(workers, len(jobs)) <= 1:
        for job in relabels:
            relabel(con, job)
        for table in planned:
            for load in table:
                insert(con, load.table, load.files)
        return

    # A cursor's default database is the instance's own: each is pointed at the file.
    ((database,),) = con.execute("select current_database()").fetchall()
    before = {later: earlier for table in planned for earlier, later in pairwise(table)}
    following = {earlier: later for later, earlier in before.items()}
    lock = threading.Lock()
    committed: set[Load] = set()
    waiting: dict[Load, duckdb.DuckDBPyConnection] = {}  # inserted, not yet committed

    def commit_from(load: Load, cursor: duckdb.DuckDBPyConnection) -> None:
        """Commit ``load``, then each of its table's following loads that waits for it."""
        while True:
            commit(load.table, cursor)
            with lock:
                committed.add(load)
                later = following.get(load)
                if later is None or later not in waiting:
                    return
                load, cursor = later, waiting.pop(later)

    def run(job: Load | Relabel) -> None:
        cursor = con.cursor()
        try:
            cursor.execute(f"use {quoted(database)}")
            cursor.execute("begin")
            if isinstance(job, Relabel):
                relabel(cursor, job)
            else:
                insert(cursor, job.table, job.files)
        except BaseException:
            cursor.close()  # uncommitted: rolled back
            raise
        if isinstance(job, Relabel):
            commit(job.table, cursor)  # its table has no load to wait for it
            return
        load = job
        with lock:
            if load in before and before[load] not in committed:
                waiting[load] = cursor
                return
        commit_from(load, cursor)

    try:
        with one_thread_per_load(con), ThreadPoolExecutor(min(workers, len(jobs))) as pool:
            # Every job ends before the pool does; the first failure in ``jobs``' order is
            # raised, so the table named is one whose load failed.
            list(pool.map(run, jobs))
    finally:
        # Loads after a failed one were never committed: rolled back.
        for cursor in waiting.values():
            cursor.close()


@contextmanager
def one_thread_per_load(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """The instance's threads set to one while loads run side by side, each on the thread
    of its own cursor. An insert on several threads writes partly filled row groups,
    which the closing checkpoint merges and writes again, alone on one core: at 300k runs a
    build from nothing took 4.5-5.4 s, 1.2-1.7 s of it that checkpoint, and left 30 MB of
    freed blocks in a 163 MB file; with one thread a table, 3.0-3.4 s and 132 MB."""
    ((threads,),) = con.execute("select current_setting('threads')").fetchall()
    con.execute("set threads = 1")
    try:
        yield
    finally:
        con.execute("set threads = ?", [threads])
