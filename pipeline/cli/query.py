"""The query command (CONTRACT section 7): an analyst's read-only SQL over the warehouse
views (pipeline/warehouse/query.py), printed as a table, CSV, JSON or markdown."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from pipeline.cli.options import (
    EXIT_FAILED,
    LakeOption,
    console,
    errors,
    lake_or_exit,
    settings_or_exit,
    usage_error,
)
from pipeline.core.settings import QUERY_MEMORY_ENV, QUERY_SECONDS_ENV
from pipeline.core.visible import visible
from pipeline.storage.lake import DEFAULT_LAKE

if TYPE_CHECKING:
    import polars as pl

    from pipeline.core.settings import Settings

# DuckDB's memory limit does not count every buffer (one repeat() of a 3 GB string ran to
# 6 GB under a 256 MiB limit), and its interrupt waits for the running vector to finish
# (22 s under a 2 s limit). Past these margins the process ends, whatever DuckDB is doing.
HARD_MEMORY_FACTOR = 2
HARD_SECONDS_GRACE = 5.0
WATCH_EVERY_SECONDS = 0.02
# ``query -`` reads its SQL from standard input, at most this much of it: analysts keep
# their queries in .sql files, whose leading -- comment would read as an option.
STDIN_SQL = "-"
MAX_STDIN_SQL_BYTES = 1 << 20


def _resident_bytes() -> int | None:
    """This process's resident memory now (Linux), or None where it cannot be read."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


@contextmanager
def hard_limits(settings: Settings) -> Iterator[None]:
    """Backstops beside DuckDB's own limits while a query runs and its rows are fetched: at
    twice the memory limit above what the command held before it (on Linux, where the
    process's resident memory can be read), or 5 s past the time limit, the command exits 1
    at once, saying which."""
    stop = threading.Event()
    # Held to end the process, and to finish the block: never both (a query that has just
    # finished is not ended for what it was).
    ending = threading.Lock()
    baseline = _resident_bytes()
    cap = None if baseline is None else baseline + HARD_MEMORY_FACTOR * settings.query_memory_bytes
    deadline = time.monotonic() + settings.query_seconds + HARD_SECONDS_GRACE

    def end(why: str) -> None:
        with ending:
            if stop.is_set():
                return
            errors.print(
                f"[bold red]query failed:[/] {why}; the command was ended", highlight=False
            )
            sys.stderr.flush()
            os._exit(EXIT_FAILED)

    def watch() -> None:
        while not stop.wait(WATCH_EVERY_SECONDS):
            if time.monotonic() > deadline:
                end(
                    f"the query ran {HARD_SECONDS_GRACE:g} s past the time limit of "
                    f"{settings.query_seconds} s ({QUERY_SECONDS_ENV}) and did not stop"
                )
            held = _resident_bytes()
            if cap is not None and held is not None and held > cap:
                end(
                    f"the query took {held - (baseline or 0)} bytes, past {HARD_MEMORY_FACTOR}x "
                    f"the memory limit of {settings.query_memory_bytes} bytes ({QUERY_MEMORY_ENV})"
                )

    watcher = threading.Thread(target=watch, name="query-hard-limits", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        with ending:
            stop.set()
        watcher.join()


class OutputFormat(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"
    markdown = "markdown"


def _query_format(chosen: OutputFormat | None, as_json: bool, as_csv: bool) -> OutputFormat:
    """--json and --csv are short for --format json / csv; two different choices are refused."""
    asked = {f for f, on in ((OutputFormat.json, as_json), (OutputFormat.csv, as_csv)) if on}
    if chosen is not None:
        asked.add(chosen)
    if len(asked) > 1:
        names = " and ".join(sorted(f.value for f in asked))
        raise usage_error(f"choose one output format, not {names}")
    return asked.pop() if asked else OutputFormat.table


def _one_line(exc: Exception) -> str:
    """An error as one line (DuckDB's messages span several)."""
    return " ".join(str(exc).split())


def _stdin_sql() -> str:
    """The SQL given on standard input (``query -``), refused past MAX_STDIN_SQL_BYTES or
    when it is not UTF-8."""
    if sys.stdin is None:
        raise usage_error("query - reads the SQL from standard input, which is closed")
    if sys.stdin.isatty():
        errors.print("reading the SQL from standard input; end it with Ctrl-D", highlight=False)
    text = sys.stdin.buffer.read(MAX_STDIN_SQL_BYTES + 1)
    if len(text) > MAX_STDIN_SQL_BYTES:
        raise usage_error(f"the SQL on standard input is over {MAX_STDIN_SQL_BYTES} bytes")
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise usage_error(
            f"the SQL on standard input is not UTF-8 ({exc.reason} at byte {exc.start})"
        ) from exc


def print_query_result(frame: pl.DataFrame, output: OutputFormat, max_rows: int) -> None:
    from rich.table import Table
    from rich.text import Text

    from pipeline.cli.tables import print_table
    from pipeline.warehouse import query as q

    if output is OutputFormat.json:
        sys.stdout.write(q.as_json(frame) + "\n")
    elif output is OutputFormat.csv:
        sys.stdout.write(q.as_csv(frame))
    elif output is OutputFormat.markdown:
        sys.stdout.write(q.as_markdown(frame.head(max_rows)))
    elif frame.columns == list(q.EXPLAIN_COLUMNS):
        # A query plan is a drawing: as text, never squeezed into a table cell.
        for key, plan in frame.rows():
            sys.stdout.write(f"{visible(str(key))}:\n{visible(str(plan))}\n")
    else:
        shown = q.readable(frame.head(max_rows))
        more = f", the first {max_rows} shown" if frame.height > max_rows else ""
        table = Table(caption=f"{frame.height} row(s){more}")
        for name, dtype in frame.schema.items():
            table.add_column(name, justify="right" if dtype.is_numeric() else "left")
        for row in shown.rows():
            table.add_row(*(Text(visible(value)) for value in row))
        print_table(console, table)


def query(
    sql: Annotated[
        str,
        typer.Argument(
            help="SQL: SELECT, FROM, WITH, VALUES, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN; - reads "
            "it from standard input (query - < report.sql)."
        ),
    ],
    lake: LakeOption = DEFAULT_LAKE,
    output: Annotated[
        OutputFormat | None,
        typer.Option(
            "--format",
            help="table (numbers rounded for reading, default), csv or json "
            "(every digit), markdown (rounded).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Same as --format csv.")] = False,
    max_rows: Annotated[
        int | None,
        typer.Option(
            "--max-rows",
            min=1,
            help="Rows fetched per statement, in every format (default 1000; streamed: the "
            "rest are not computed).",
        ),
    ] = None,
) -> None:
    """Read the warehouse views; a statement that would write is refused (exit 2).

    SQL that starts with a -- comment goes after a lone --, which ends the options, or on
    standard input (-)."""
    chosen = _query_format(output, as_json, as_csv)
    settings = settings_or_exit()
    lake_or_exit(lake, warehouse_will_do=True)
    if sql == STDIN_SQL:  # after the checks: a wrong --lake is said before any wait
        sql = _stdin_sql()
    from pipeline.warehouse import WarehouseError
    from pipeline.warehouse import query as q

    rows = max_rows or q.DEFAULT_MAX_ROWS
    try:
        statements = q.check_read_only(sql)
        if chosen in (OutputFormat.json, OutputFormat.csv) and len(statements) > 1:
            # Two JSON arrays or two CSV headers in one stream would parse as neither.
            raise usage_error(
                f"--format {chosen.value} prints one result: give one statement "
                f"({len(statements)} given), or use --format table or markdown"
            )
        with hard_limits(settings):
            results = list(q.run_query(lake, sql, q.QueryLimits(rows, settings)))
    except WarehouseError as exc:
        # No warehouse there (or --lake names a file): the --lake given is not a lake.
        raise usage_error(_one_line(exc)) from exc
    except q.QueryRefused as exc:
        raise usage_error(_one_line(exc), label="refused") from exc
    except q.QueryError as exc:
        errors.print(
            f"[bold red]query failed:[/] {escape(visible(_one_line(exc)))}", highlight=False
        )
        raise typer.Exit(EXIT_FAILED) from exc
    for index, result in enumerate(results):
        if result.stale is not None:
            errors.print(f"note: {escape(result.stale)}", highlight=False)
        if result.truncated:
            errors.print(
                f"note: only the first {rows} rows were fetched (--max-rows)", highlight=False
            )
        if index and chosen is OutputFormat.markdown:
            sys.stdout.write("\n")  # two tables, not one: Markdown ends a table at a blank line
        print_query_result(result.frame, chosen, rows)
