"""Score tables a new rubric leaves as they were but for the rubric they name: their rows
kept in the warehouse and relabelled, instead of reloaded.

A new rubric writes every score file again under new paths, and the warehouse replaces every
score table. Many changes leave a table's values alone: a penalty scale or a pass threshold
changes no component score, yet every task_component_scores file is new, since each row names
its rubric. Reloading that table re-encodes every column of its rows (at 300k runs, 975k rows:
~0.85 s of CPU, the longest load of the build); rewriting the one column costs ~0.1 s.

A table is relabelled only where the result is, row for row and in the same order, the table a
reload would give (``tests/e2e/test_warehouse.py`` holds the two equal):

- every file the warehouse holds of it goes, each replaced by one new file of the same part,
  and the table stores each part's rows together, in the order the new files load in;
- each held file still has the bytes the warehouse loaded (its recorded SHA-256), so its rows
  are the table's rows of that part;
- each new file has the held one's schema and row groups, and every column but
  ``RUBRIC_COLUMN`` stored in the same bytes (so it decodes to the same values: the lake's
  writer writes equal rows alike), and ``RUBRIC_COLUMN`` holds one value in every new file.

Comparing the stored bytes costs a few milliseconds where decoding both files and comparing
their rows cost ~0.35 s, which left nothing of the gain. Anything else (a file missing or
unreadable, another schema, one value changed, the same values written otherwise) reloads the
table as before.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from pipeline.core.sql import sql_text
from pipeline.warehouse.models import stage_sql, staged_tables

if TYPE_CHECKING:
    import duckdb

# The column a score row names its rubric in; the only one a relabel changes
# (sql/warehouse/stage_relabel.sql rewrites it).
RUBRIC_COLUMN = "rubric_id"

# A file's column chunks: (row group, column) -> (rows of the group, first byte, bytes).
Chunks = dict[tuple[int, str], tuple[int, int, int]]


@dataclass(frozen=True)
class Pair:
    """One part of a table: the file the warehouse holds (with its recorded SHA-256 and the
    rows the table stores of it) and the new file that replaces it."""

    held: Path
    sha256: str
    rows: int
    new: Path


def _chunks(con: duckdb.DuckDBPyConnection, files: list[Path]) -> dict[str, Chunks]:
    """Each file's column chunks, by path, read from the files' footers."""
    found: dict[str, Chunks] = {str(path): {} for path in files}
    query = sql_text("warehouse/parquet_chunks.sql")
    for name, group, rows, column, start, size in con.execute(query, [list(found)]).fetchall():
        found.setdefault(name, {})[group, column] = (rows, start, size)
    return found


def _same_but_rubric(pair: Pair, chunks: Mapping[str, Chunks]) -> bool:
    """The new file of ``pair`` holds the held file's rows but for ``RUBRIC_COLUMN``, and the
    held file has the bytes the warehouse loaded."""
    try:
        held, new = pair.held.read_bytes(), pair.new.read_bytes()
        if hashlib.sha256(held).hexdigest() != pair.sha256:
            return False
        schema = pl.read_parquet_schema(io.BytesIO(held))
        if schema != pl.read_parquet_schema(io.BytesIO(new)) or RUBRIC_COLUMN not in schema:
            return False
    except (OSError, pl.exceptions.PolarsError, pl.exceptions.PanicException):
        return False  # reloaded, and the load names what is wrong
    before, after = chunks.get(str(pair.held), {}), chunks.get(str(pair.new), {})
    if not before or before.keys() != after.keys():
        return False
    groups = {group: rows for (group, _), (rows, _, _) in before.items()}
    if sum(groups.values()) != pair.rows:
        return False
    for (group, column), (rows, start, size) in before.items():
        new_rows, new_start, new_size = after[group, column]
        if rows != new_rows:
            return False
        if (
            column != RUBRIC_COLUMN
            and held[start : start + size] != new[new_start : new_start + new_size]
        ):
            return False
    return True


def _label(files: list[Path]) -> str | None:
    """The one value ``RUBRIC_COLUMN`` holds in every row of ``files``; else None."""
    try:
        values = pl.scan_parquet(files).select(RUBRIC_COLUMN).unique().collect()
    except (OSError, pl.exceptions.PolarsError, pl.exceptions.PanicException):
        return None
    column = values[RUBRIC_COLUMN]
    if values.height != 1 or column.null_count() or column.dtype != pl.String:
        return None
    label: str = column[0]
    return label


def _pairs(
    con: duckdb.DuckDBPyConnection, lake: Path, table: str, drop: pl.DataFrame, load: pl.DataFrame
) -> list[Pair] | None:
    """Each held file of ``table`` with the new one of its part, in the order the new files
    load in, when every held file goes for a new one of its part and the table stores each
    part's rows together in that order; else None."""
    parts = load["part"].to_list()
    if not parts or sorted(drop["part"].to_list()) != sorted(parts) or len(set(parts)) < len(parts):
        return None
    # Part, rows, first and last rowid, by first rowid. A part of no rows is not there.
    stored = con.execute(stage_sql("stage_parts", table)).fetchall()
    present = {part for part, *_ in stored}
    if [part for part, *_ in stored] != [part for part in parts if part in present]:
        return None
    if any(before[3] >= after[2] for before, after in pairwise(stored)):
        return None  # a part's rows between another's
    rows = {part: count for part, count, _, _ in stored}
    held = {part: (path, sha) for part, path, sha in drop.select("part", "path", "sha256").rows()}
    return [
        Pair(lake / held[part][0], held[part][1], rows.get(part, 0), lake / path)
        for part, path in load.select("part", "path").rows()
    ]


def relabelled(
    con: duckdb.DuckDBPyConnection,
    lake: Path,
    drop: Mapping[str, pl.DataFrame],
    load: Mapping[str, pl.DataFrame],
) -> dict[str, str]:
    """Of the tables whose every held file goes (``drop``: part, path relative to ``lake``,
    sha256) for new ones (``load``: part, path, in the order they load), those that can keep
    their rows, each with the value its ``RUBRIC_COLUMN`` takes."""
    import duckdb

    relabels: dict[str, str] = {}
    for table, files in load.items():
        if RUBRIC_COLUMN not in staged_tables()[table] or table not in drop:
            continue
        pairs = _pairs(con, lake, table, drop[table], files)
        if pairs is None or not all(pair.held.is_file() and pair.new.is_file() for pair in pairs):
            continue
        try:
            chunks = _chunks(con, [path for pair in pairs for path in (pair.held, pair.new)])
        except duckdb.Error:
            continue  # a footer that does not read: reloaded, and the load names the file
        if all(_same_but_rubric(pair, chunks) for pair in pairs):
            label = _label([pair.new for pair in pairs])
            if label is not None:
                relabels[table] = label
    return relabels
