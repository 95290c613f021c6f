"""The analysts' door: read-only SQL over the warehouse views.

Three locks, each enough on its own for some statements, together for all:

1. DuckDB's own parser classifies every statement; only reading statements
   (SELECT and its forms: FROM, WITH, VALUES, DESCRIBE, SHOW, SUMMARIZE; and
   EXPLAIN of one of those) run. Anything else (INSERT, COPY ... TO, ATTACH,
   INSTALL/LOAD, SET, PRAGMA, CALL checkpoint, EXPORT, CREATE, DROP...) is
   refused before it reaches the database.
2. The warehouse is opened ``read_only``: no statement can change it.
3. File access is confined to the lake (``allowed_directories``,
   ``enable_external_access = false``, then ``lock_configuration``), so the
   views still read their Parquet files but no query reads or writes a file
   elsewhere, and no query can lift the confinement.

And bounds, so that an analyst's query cannot starve the nightly job on a shared
machine: a memory limit and a thread count (DuckDB settings, locked with the
rest), a time limit (the query is interrupted), and at most ``max_rows`` rows
fetched, streamed in batches instead of materialising the whole result.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa

from pipeline.reader import limit_from_env
from pipeline.warehouse import WarehouseError, warehouse_path

READING = {duckdb.StatementType.SELECT}
# EXPLAIN ANALYZE runs its statement: what it explains is judged like any statement.
EXPLAINING = {duckdb.StatementType.EXPLAIN}
EXPLAIN_KEYWORDS = {"explain", "analyze", "analyse"}
DEFAULT_MAX_ROWS = 1000
DEFAULT_MEMORY_BYTES = 2 * 1024**3
DEFAULT_THREADS = 2
DEFAULT_SECONDS = 300
MEMORY_ENV = "PIPELINE_QUERY_MEMORY_BYTES"
THREADS_ENV = "PIPELINE_QUERY_THREADS"
SECONDS_ENV = "PIPELINE_QUERY_SECONDS"
STREAM_BATCH_ROWS = 2048


@dataclass(frozen=True)
class QueryLimits:
    """What one ``query`` may use; None takes the environment variable, then the default."""

    max_rows: int = DEFAULT_MAX_ROWS
    memory_bytes: int | None = None
    threads: int | None = None
    seconds: int | None = None

    def resolved(self) -> tuple[int, int, int]:
        """memory bytes, threads, seconds."""
        return (
            self.memory_bytes or limit_from_env(MEMORY_ENV, DEFAULT_MEMORY_BYTES),
            self.threads or limit_from_env(THREADS_ENV, DEFAULT_THREADS),
            self.seconds or limit_from_env(SECONDS_ENV, DEFAULT_SECONDS),
        )


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


def _statement_type_name(kind: object) -> str:
    return str(kind).rsplit(".", 1)[-1]


def _explained(statement: duckdb.Statement) -> str:
    """The text an EXPLAIN [ANALYZE] statement explains, found with DuckDB's tokenizer."""
    text: str = statement.query
    for offset, kind in duckdb.tokenize(text):
        if kind != duckdb.token_type.keyword:
            return text[offset:]
        word = text[offset:].split(None, 1)[0].lower()
        if word not in EXPLAIN_KEYWORDS:
            return text[offset:]
    return ""


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
        while inner.type in EXPLAINING:
            explained = duckdb.extract_statements(_explained(inner))
            if len(explained) != 1:
                raise QueryRefused(f"cannot tell what this explains: {inner.query.strip()}")
            inner = explained[0]
        if inner.type not in READING:
            raise QueryRefused(
                f"refused: a {_statement_type_name(inner.type)} statement is not read-only "
                f"({inner.query.strip()[:80]}); the warehouse is for reading, "
                "only SELECT, FROM, WITH, DESCRIBE, SHOW, SUMMARIZE and EXPLAIN run here"
            )
        texts.append(statement.query)
    return texts


def connect_confined(lake: Path, limits: QueryLimits | None = None) -> duckdb.DuckDBPyConnection:
    """The warehouse, read-only, able to read the lake's files and no others, within limits."""
    path = warehouse_path(lake)
    if not path.exists():
        raise WarehouseError(
            f"no warehouse at {path}: run `python -m pipeline run` (or `score`) to build it"
        )
    memory, threads, _ = (limits or QueryLimits()).resolved()
    con = duckdb.connect(
        str(path), read_only=True, config={"memory_limit": f"{memory}B", "threads": threads}
    )
    try:
        root = str(lake.resolve())
        con.execute("set allowed_directories = ?", [[root + "/"]])
        con.execute("set enable_external_access = false")
        con.execute("set lock_configuration = true")
    except duckdb.Error:
        con.close()
        raise
    return con


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
    _, _, seconds = chosen.resolved()
    con = connect_confined(lake, chosen)
    timer = threading.Timer(seconds, con.interrupt)
    timer.start()
    try:
        for text in statements:
            relation = con.sql(text)
            if relation is None:
                yield Result(statement=text.strip(), frame=pl.DataFrame())
                continue
            frame, truncated = _fetch(relation, chosen.max_rows)
            yield Result(statement=text.strip(), frame=frame, truncated=truncated)
    except duckdb.InterruptException as exc:
        raise QueryTimeout(
            f"the query ran past the time limit of {seconds} s ({SECONDS_ENV})"
        ) from exc
    finally:
        timer.cancel()
        con.close()


class QueryTimeout(duckdb.Error):
    """A query interrupted at the time limit."""


def flat(frame: pl.DataFrame) -> pl.DataFrame:
    """Nested columns as JSON text, for CSV and the terminal."""
    nested = [name for name, dtype in frame.schema.items() if dtype.is_nested()]
    return frame.with_columns(
        pl.struct(name)
        .struct.json_encode()
        # json_encode wraps the value as {"<name>":<value>}: keep the value.
        .str.slice(len(json.dumps(name)) + 2, None)
        .str.strip_suffix("}")
        .alias(name)
        for name in nested
    )


def as_json(frame: pl.DataFrame) -> str:
    return frame.write_json()


def as_csv(frame: pl.DataFrame) -> str:
    return flat(frame).write_csv()
