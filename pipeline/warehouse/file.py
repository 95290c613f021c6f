"""The warehouse file, ``<lake>/warehouse.duckdb``: where it is, how it is opened, and
the facts it keeps about its own build (``_meta``: rubric, fingerprint, storage version).

The build (``build.py``) writes it; everything else opens it read-only through here.
"""

from __future__ import annotations

import secrets
import shlex
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pipeline.core.sql import sql_text
from pipeline.storage.lake import WAREHOUSE_FILE

# DuckDB is imported where a file is opened (see pipeline/core/sql.py).
if TYPE_CHECKING:
    import duckdb

# Named with the lake's layout, which tells a lake from a copied warehouse by it.
WAREHOUSE_NAME = WAREHOUSE_FILE
# An older storage format than DuckDB 2.0's default, so that DuckDB 1.4.0 and later open the
# file, among them the `duckdb` command `pip install duckdb-cli` gives (1.5.x reads format
# numbers 64..68 only; this one is 67). Tests open it with duckdb-cli 1.5.
STORAGE_VERSION = "v1.4.0"
OLDEST_READER = STORAGE_VERSION.removeprefix("v")

T = TypeVar("T")


class WarehouseError(RuntimeError):
    pass


def warehouse_path(lake: Path) -> Path:
    return lake / WAREHOUSE_NAME


def existing_warehouse(lake: Path) -> Path:
    """The lake's warehouse file; WarehouseError, saying what builds it, when there is none."""
    from pipeline.storage.lake import command_on

    path = warehouse_path(lake)
    if not path.exists():
        raise WarehouseError(f"no warehouse at {path}: {command_on(lake, 'score')} builds it")
    return path


def _unreadable(path: Path, exc: duckdb.Error) -> WarehouseError:
    return WarehouseError(f"cannot open {path} read-only: {exc}")


def connect_read_only(lake: Path) -> duckdb.DuckDBPyConnection:
    """The analysts' door: the views, and nothing that writes. A connection of its own,
    which the caller closes; the pipeline's own reads go through ``reading``."""
    import duckdb

    path = existing_warehouse(lake)
    try:
        return duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        raise _unreadable(path, exc) from exc


# Starting a DuckDB instance (duckdb.connect) costs 15-30 ms of CPU in DuckDB 2.0, attaching a
# file to a running one about 5 ms (measured 2026-12-04), and a command opens the file several
# times: the previous build's record, the build, the run summary, the check, a comparison. So
# the pipeline's own openings attach the file to an instance the process keeps, each in a
# cursor of its own whose default database is the file, detached after.
class SharedInstance:
    """One in-memory DuckDB instance per process, that files are attached to."""

    def __init__(self) -> None:
        self._con: duckdb.DuckDBPyConnection | None = None
        self._lock = threading.Lock()

    def cursor(self) -> duckdb.DuckDBPyConnection:
        import duckdb

        with self._lock:
            if self._con is None:
                self._con = duckdb.connect()
            return self._con.cursor()

    def forget(self) -> None:
        """An instance DuckDB has invalidated answers nothing again: the next opening
        starts another, so that one damaged file cannot fail the openings of every other."""
        with self._lock:
            self._con = None

    @contextmanager
    def attached(self, path: str, options: str) -> Iterator[duckdb.DuckDBPyConnection]:
        """The DuckDB file at ``path`` attached with ``options`` (ours, never from data),
        as the default database of a cursor that is the caller's until the block ends."""
        import duckdb

        alias = f"file_{secrets.token_hex(8)}"
        cursor = self.cursor()
        try:
            try:
                cursor.execute(f"attach ? as {alias} ({options})", [path])
            except (duckdb.FatalException, duckdb.InternalException):
                self.forget()
                raise
            try:
                cursor.execute(f"use {alias}")
                # Spilled query state beside the file, as a connection to the file keeps
                # it (an in-memory instance would use ./.tmp, wherever the command ran).
                cursor.execute("set temp_directory = ?", [f"{path}.tmp"])
                yield cursor
            finally:
                try:
                    cursor.execute("use memory")
                    cursor.execute(f"detach {alias}")
                except duckdb.Error:
                    self.forget()
        finally:
            cursor.close()


_READER = SharedInstance()
# DuckDB refuses to attach one path twice to an instance, so a read that overlaps another
# of the same file (nested, or on another thread) opens a connection of its own.
_attached: set[str] = set()
_attached_lock = threading.Lock()


@contextmanager
def _own_connection(path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        yield con
    finally:
        con.close()


@contextmanager
def opened(path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """The DuckDB file at ``path``, read-only, as the default database of a connection
    that is the caller's until the block ends. Raises duckdb.Error when it cannot be read."""
    key = str(path.resolve())
    with _attached_lock:
        shared = key not in _attached
        _attached.add(key)
    if not shared:
        with _own_connection(path) as con:
            yield con
        return
    try:
        with _READER.attached(key, "read_only") as con:
            yield con
    finally:
        with _attached_lock:
            _attached.discard(key)


@contextmanager
def reading(lake: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """The lake's warehouse, read-only, for the pipeline's own reads (see ``opened``)."""
    import duckdb

    path = existing_warehouse(lake)
    with ExitStack() as stack:
        try:
            con = stack.enter_context(opened(path))
        except duckdb.Error as exc:
            raise _unreadable(path, exc) from exc
        try:
            yield con
        except duckdb.CatalogException as exc:
            stale = stale_reason(con, lake)
            if stale is None:
                raise
            raise WarehouseError(f"{exc} ({stale})") from exc


def stale_reason(con: duckdb.DuckDBPyConnection, lake: Path) -> str | None:
    """Why a view or column a reader names can be missing from the open file, when another
    version of the pipeline built it (with the command that builds it again); else None."""
    import duckdb

    from pipeline.warehouse.build import built_by_this_version, other_version

    try:
        return other_version(lake) if built_by_this_version(con) is False else None
    except duckdb.Error:
        return None  # no record of its build: nothing better to say than DuckDB's error


def read_if_usable(path: Path, read: Callable[[duckdb.DuckDBPyConnection], T]) -> T | None:
    """``read`` over the file at ``path`` opened read-only; None when there is no file
    there or DuckDB cannot read it (a build from nothing follows)."""
    if not path.is_file():
        return None
    import duckdb

    try:
        with opened(path) as con:
            return read(con)
    except duckdb.Error:
        return None


def meta_value(con: duckdb.DuckDBPyConnection, key: str) -> str | None:
    """One fact the build recorded about itself (rubric_id, fingerprint, storage_version)."""
    # Every row fetched: a result left open would refuse the connection's next statement.
    rows = con.execute(sql_text("queries/meta_get.sql"), [key]).fetchall()
    return str(rows[0][0]) if rows else None


def built_rubric_id(lake: Path) -> str | None:
    """The rubric the warehouse file was built for, or None when there is no usable file."""
    return read_if_usable(warehouse_path(lake), lambda con: meta_value(con, "rubric_id"))


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
        # Where the install below puts it, which is not on PATH outside the activated venv.
        "shell": f"{_shell_path(cli)} -readonly {file}",
        "readers": f"DuckDB {OLDEST_READER} or later",
    }
    if not cli.is_file():
        commands["shell_install"] = f"{_shell_path(python)} -m pip install duckdb-cli"
    return commands
