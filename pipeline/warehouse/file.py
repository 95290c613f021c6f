"""The warehouse file, ``<lake>/warehouse.duckdb``: where it is, how it is opened, and
the facts it keeps about its own build (``_meta``: rubric, fingerprint, storage version).

The build (``build.py``) writes it; everything else opens it read-only through here.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import duckdb

from pipeline.core.sql import sql_text

WAREHOUSE_NAME = "warehouse.duckdb"
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


def connect_read_only(lake: Path) -> duckdb.DuckDBPyConnection:
    """The analysts' door: the views, and nothing that writes."""
    path = warehouse_path(lake)
    if not path.exists():
        raise WarehouseError(f"no warehouse at {path}: run `python -m pipeline run` first")
    try:
        return duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        raise WarehouseError(f"cannot open {path} read-only: {exc}") from exc


def read_if_usable(path: Path, read: Callable[[duckdb.DuckDBPyConnection], T]) -> T | None:
    """``read`` over the file at ``path`` opened read-only; None when there is no file
    there or DuckDB cannot read it (a build from nothing follows)."""
    if not path.is_file():
        return None
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error:
        return None
    try:
        return read(con)
    except duckdb.Error:
        return None
    finally:
        con.close()


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
        "shell": f"{_shell_path(cli) if cli.is_file() else 'duckdb'} -readonly {file}",
        "readers": f"DuckDB {OLDEST_READER} or later",
    }
    if not cli.is_file():
        commands["shell_install"] = f"{_shell_path(python)} -m pip install duckdb-cli"
    return commands
