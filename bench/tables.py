"""The bench's result tables, as Markdown (the report) and as rich tables (the terminal),
from one list of columns each."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.table import Table


@dataclass(frozen=True)
class Column:
    """A column: its header, the row attribute it shows and, for a number, its format
    (``suffix`` after it: a ratio reads 1.23x). Numbers align right, text left; a number
    that is None shows as -."""

    header: str
    attribute: str
    number: str | None = None
    suffix: str = ""


def cells(row: object, columns: Sequence[Column]) -> list[str]:
    shown = []
    for column in columns:
        value = getattr(row, column.attribute)
        if column.number is None:
            shown.append(str(value))
        else:
            shown.append("-" if value is None else format(value, column.number) + column.suffix)
    return shown


def markdown_table(columns: Sequence[Column], rows: Sequence[object]) -> list[str]:
    return [
        "| " + " | ".join(column.header for column in columns) + " |",
        "|" + "|".join("---" if column.number is None else "---:" for column in columns) + "|",
        *("| " + " | ".join(cells(row, columns)) + " |" for row in rows),
    ]


def fill_table(table: Table, columns: Sequence[Column], rows: Sequence[object]) -> Table:
    for column in columns:
        table.add_column(column.header, justify="left" if column.number is None else "right")
    for row in rows:
        table.add_row(*cells(row, columns))
    return table
