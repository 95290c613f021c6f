"""The analysts' door: read-only SQL over the warehouse views.

Three locks, each enough on its own for some statements, together for all:

1. DuckDB's own parser classifies every statement; only reading statements
   (SELECT and its forms: FROM, WITH, VALUES, DESCRIBE, SHOW, SUMMARIZE; and
   EXPLAIN of one of those) run. Anything else (INSERT, COPY ... TO, ATTACH,
   INSTALL/LOAD, SET, PRAGMA, CALL checkpoint, EXPORT, CREATE, DROP...) is
   refused before it reaches the database.
2. The warehouse is opened ``read_only``: no statement can change it.
3. File access is off (``enable_external_access = false`` and
   ``lock_configuration``, set as the file is opened): the warehouse holds every
   row the views read, so no query reads or writes any file, not even the lake's,
   no extension loads, and no query can lift it.

And bounds, so that an analyst's query cannot starve the nightly job on a shared
machine: a memory limit and a thread count (DuckDB settings, locked with the
rest), a time limit (the query is interrupted), and at most ``max_rows`` rows
fetched, streamed in batches instead of materialising the whole result.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa

from pipeline.core.settings import (
    QUERY_MEMORY_ENV,
    QUERY_SECONDS_ENV,
    Settings,
    current_settings,
)
from pipeline.core.sql import quoted
from pipeline.core.visible import visible, visible_expr
from pipeline.warehouse.file import WarehouseError, existing_warehouse, stale_reason

READING = {duckdb.StatementType.SELECT}
# EXPLAIN ANALYZE runs its statement: what it explains is judged like any statement.
EXPLAINING = {duckdb.StatementType.EXPLAIN}
EXPLAIN_KEYWORDS = {"explain", "analyze", "analyse"}
# Words that open a statement: "EXPLAIN (SELECT 1)" explains a query in brackets, where
# "EXPLAIN (FORMAT JSON) SELECT 1" gives options.
STATEMENT_OPENERS = {
    *("select", "with", "from", "values", "table", "pivot", "unpivot", "("),
    *("describe", "show", "summarize"),
}
DEFAULT_MAX_ROWS = 1000
# The columns DuckDB answers EXPLAIN with.
EXPLAIN_COLUMNS = ("explain_key", "explain_value")
# How `query` shows a float to a person (CSV and JSON keep every digit).
SIGNIFICANT_DIGITS = 4
ROUND_WHOLE_FROM = 10_000
NULL_TEXT = "NULL"
STREAM_BATCH_ROWS = 2048


@dataclass(frozen=True)
class QueryLimits:
    """What one ``query`` may use: rows from the command line, the rest from settings."""

    max_rows: int = DEFAULT_MAX_ROWS
    settings: Settings = field(default_factory=current_settings)


# What a query that runs can still fail with (a missing column, a refused file).
QueryError = duckdb.Error


class QueryRefused(ValueError):
    """A statement that would write, or text that is not SQL."""


@dataclass(frozen=True)
class Result:
    statement: str
    frame: pl.DataFrame
    # True when the statement had more rows than were fetched (max_rows).
    truncated: bool = False
    # Why the answer may differ from this version's views (another version built the
    # file, and no command has written since), with what builds it again; on the first.
    stale: str | None = None


def _kind(statement: duckdb.Statement) -> duckdb.StatementType | None:
    """The statement's type; None for one the Python module has no name for (UPDATE
    EXTENSIONS had failed the check with a ValueError): not one that only reads."""
    try:
        return statement.type
    except ValueError:
        return None


def _tokens(text: str) -> list[tuple[int, duckdb.token_type, str]]:
    """(offset, kind, word in lower case) of each token of ``text`` but comments, found with
    DuckDB's tokenizer; a word ends where the next token, a comment's included, starts
    (``EXPLAIN/*x*/SELECT``)."""
    every = duckdb.tokenize(text)
    ends = [*(offset for offset, _ in every[1:]), len(text)]
    return [
        (offset, kind, text[offset:end].strip().lower())
        for (offset, kind), end in zip(every, ends, strict=True)
        if kind != duckdb.token_type.comment
    ]


def _statement_name(statement: duckdb.Statement, kind: duckdb.StatementType | None) -> str:
    """How a refusal names a statement: its type, but by its own first word where the type
    says less (INSTALL is filed as LOAD, which puzzled who typed INSTALL; an unnamed type)."""
    words = [word.upper() for _, _, word in _tokens(statement.query) if word != "force"]
    name = str(kind).rsplit(".", 1)[-1] if kind is not None else "LOAD"
    return words[0] if name == "LOAD" and words else name


def _explained(statement: duckdb.Statement) -> str:
    """The text an EXPLAIN [ANALYZE] [(options)] statement explains: comments are read past
    (one before EXPLAIN had been taken for the statement it explains, and the check looped
    on it)."""
    text: str = statement.query
    tokens = _tokens(text)
    depth = 0  # inside EXPLAIN's parenthesised options
    options_taken = False
    for index, (offset, kind, word) in enumerate(tokens):
        following = tokens[index + 1][2] if index + 1 < len(tokens) else ""
        if depth:
            depth += {"(": 1, ")": -1}.get(word, 0)
        elif kind == duckdb.token_type.keyword and word in EXPLAIN_KEYWORDS:
            continue
        elif word == "(" and not options_taken and following not in STATEMENT_OPENERS:
            depth, options_taken = 1, True
        else:
            return text[offset:]
    return ""


def _bracketed(text: str) -> list[duckdb.Statement]:
    """The statement inside brackets that are not a statement themselves: EXPLAIN (DESCRIBE
    t) runs, where (DESCRIBE t) alone does not parse. Nothing when the inside is not one."""
    inside = text.strip()
    if not (inside.startswith("(") and inside.endswith(")")):
        return []
    try:
        return duckdb.extract_statements(inside[1:-1])
    except duckdb.Error:
        return []


def check_read_only(sql: str) -> list[str]:
    """Each statement of ``sql`` if every one only reads; else QueryRefused naming the first."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryRefused(f"not a statement DuckDB can parse: {exc}") from exc
    if not statements:
        raise QueryRefused("no statement given")
    texts: list[str] = []
    for statement in statements:
        inner = statement
        while _kind(inner) in EXPLAINING:
            text = _explained(inner)
            try:
                explained = duckdb.extract_statements(text)
            except duckdb.Error:
                explained = _bracketed(text)
            # Each step must take an EXPLAIN off: one that did not had looped forever.
            if len(explained) != 1 or explained[0].query.strip() == inner.query.strip():
                raise QueryRefused(f"cannot tell what this explains: {inner.query.strip()}")
            inner = explained[0]
        kind = _kind(inner)
        if kind == duckdb.StatementType.MULTI:
            # DuckDB's PIVOT without IN first creates an ENUM type of the values it finds.
            raise QueryRefused(
                f"this statement writes before it reads ({inner.query.strip()[:80]}): a PIVOT "
                "without IN creates a type first; name the values instead, "
                "PIVOT ... ON column IN ('a', 'b') USING ..."
            )
        if kind not in READING:
            raise QueryRefused(
                f"{_statement_name(inner, kind)} is not a read-only statement "
                f"({inner.query.strip()[:80]}); the warehouse is for reading, "
                "only SELECT, FROM, WITH, VALUES, DESCRIBE, SHOW, SUMMARIZE and EXPLAIN run here"
            )
        texts.append(statement.query)
    return texts


# No file, no extension, and settings no statement can change. No spilling either: DuckDB
# had written a query's overflow beside the warehouse (<lake>/warehouse.duckdb.tmp, up to 90%
# of the free disk); past its memory a query fails, naming the setting that raises it.
CONFINED: dict[str, str | bool] = {
    "max_temp_directory_size": "0B",
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "lock_configuration": True,
}


def connect_confined(lake: Path, limits: QueryLimits | None = None) -> duckdb.DuckDBPyConnection:
    """The warehouse, read-only, with no access to any file, within limits."""
    if lake.exists() and not lake.is_dir():
        raise WarehouseError(f"--lake {lake} is a file; give the lake's folder")
    path = existing_warehouse(lake)
    chosen = (limits or QueryLimits()).settings
    config: dict[str, str | int | bool] = {
        "memory_limit": f"{chosen.query_memory_bytes}B",
        "threads": chosen.query_threads,
    }
    return duckdb.connect(str(path), read_only=True, config={**config, **CONFINED})


def _as_text_variants(relation: duckdb.DuckDBPyRelation) -> duckdb.DuckDBPyRelation:
    """``relation`` with its columns that hold VARIANTs as text: Arrow hands them over as an
    extension type no frame can show (`select * from duckdb_settings()` had failed)."""
    types = [str(kind) for kind in relation.types]
    if not any("VARIANT" in kind for kind in types):
        return relation
    return relation.project(
        ", ".join(
            f"cast({quoted(name)} as varchar) as {quoted(name)}"
            if "VARIANT" in kind  # also inside a list, struct or map
            else quoted(name)
            for name, kind in zip(relation.columns, types, strict=True)
        )
    )


def _fetch(relation: duckdb.DuckDBPyRelation, max_rows: int) -> tuple[pl.DataFrame, bool]:
    """At most ``max_rows`` rows, streamed in batches; whether there were more."""
    reader = relation.to_arrow_reader(STREAM_BATCH_ROWS)
    batches: list[pa.RecordBatch] = []
    fetched = 0
    while fetched <= max_rows:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            break
        batches.append(batch)
        fetched += batch.num_rows
    table = pa.Table.from_batches(batches, schema=reader.schema)
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame.head(max_rows), fetched > max_rows


def run_query(lake: Path, sql: str, limits: QueryLimits | None = None) -> Iterator[Result]:
    """Results of each statement of ``sql``; refused as a whole if any would write."""
    chosen = limits or QueryLimits()
    statements = check_read_only(sql)
    seconds = chosen.settings.query_seconds
    con = connect_confined(lake, chosen)
    stale = stale_reason(con, lake)
    timer = threading.Timer(seconds, con.interrupt)
    timer.start()
    try:
        for index, text in enumerate(statements):
            said = stale if index == 0 else None
            relation = con.sql(text)
            if relation is None:
                yield Result(statement=text.strip(), frame=pl.DataFrame(), stale=said)
                continue
            frame, truncated = _fetch(_as_text_variants(relation), chosen.max_rows)
            yield Result(statement=text.strip(), frame=frame, truncated=truncated, stale=said)
    except duckdb.InterruptException as exc:
        raise QueryTimeout(
            f"the query ran past the time limit of {seconds} s ({QUERY_SECONDS_ENV})"
        ) from exc
    except duckdb.OutOfMemoryException as exc:
        # DuckDB's own advice is to SET a larger limit, which query refuses as a write.
        limit = chosen.settings.query_memory_bytes
        raise QueryOutOfMemory(
            f"the query needs more than the memory limit of {limit} bytes ({QUERY_MEMORY_ENV}); "
            "raise it, or ask for fewer rows or columns"
        ) from exc
    except duckdb.CatalogException as exc:
        if stale is None:
            raise
        raise StaleWarehouse(f"{exc}\n({stale})") from exc
    finally:
        timer.cancel()
        con.close()


class QueryTimeout(duckdb.Error):
    """A query interrupted at the time limit."""


class QueryOutOfMemory(duckdb.Error):
    """A query stopped at the memory limit."""


class StaleWarehouse(duckdb.Error):
    """A view or column the query names is missing from a warehouse another version built."""


def flat(frame: pl.DataFrame) -> pl.DataFrame:
    """Nested columns as JSON text, for CSV and the terminal."""
    nested = [name for name, dtype in frame.schema.items() if dtype.is_nested()]
    return frame.with_columns(
        pl.when(pl.col(name).is_not_null())
        .then(
            pl.struct(name)
            .struct.json_encode()
            # json_encode wraps the value as {"<name>":<value>}: keep the value.
            .str.slice(len(json.dumps(name)) + 2, None)
            .str.strip_suffix("}")
        )
        .alias(name)
        for name in nested
    )


def as_json(frame: pl.DataFrame) -> str:
    """Every value at full precision."""
    return frame.write_json()


def as_csv(frame: pl.DataFrame) -> str:
    """Every value at full precision; nested values as JSON text."""
    return flat(frame).write_csv()


def _rounded(column: pl.Expr) -> pl.Expr:
    """A float as text rounded for reading: 4 significant digits, whole units from 10^4 up,
    and a whole number without its ".0"."""
    large = column.abs() >= ROUND_WHOLE_FROM
    return (
        pl.when(large)
        .then(column.round(0))
        .otherwise(column.round_sig_figs(SIGNIFICANT_DIGITS))
        .cast(pl.String)
        .str.strip_suffix(".0")
    )


def readable(frame: pl.DataFrame) -> pl.DataFrame:
    """Every column as text for a person: floats rounded, nested values as JSON, nulls as NULL."""
    shown = flat(frame)
    return shown.select(
        (
            _rounded(pl.col(name).cast(pl.Float64))
            if dtype.is_float() or (isinstance(dtype, pl.Decimal) and dtype.scale > 0)
            else pl.col(name).bin.encode("hex")
            if dtype == pl.Binary
            else pl.col(name).cast(pl.String)
        ).fill_null(NULL_TEXT)
        for name, dtype in shown.schema.items()
    )


def as_markdown(frame: pl.DataFrame) -> str:
    """A Markdown (GitHub) table of the readable values; | and line breaks escaped."""
    shown = readable(frame)
    if not shown.columns:
        return ""

    def row(cells: list[pl.Expr]) -> pl.Expr:
        return pl.concat_str([pl.lit("| "), pl.concat_str(cells, separator=" | "), pl.lit(" |")])

    def escaped(cell: pl.Expr) -> pl.Expr:
        # Control characters as escapes too: the format is for pasting, and a terminal shows it.
        lines = cell.str.replace_all("|", r"\|", literal=True).str.replace_all(r"\r?\n", " ")
        return visible_expr(lines)

    header = " | ".join(visible(name).replace("|", r"\|") for name in shown.columns)
    lines = shown.select(row([escaped(pl.col(c)) for c in shown.columns]).alias("line"))
    rule = "|" + "---|" * shown.width
    body = "\n".join(lines.get_column("line").to_list())
    return f"| {header} |\n{rule}\n" + (body + "\n" if body else "")
