"""Tables that stay whole at any console width, terminal or not (a pipe, a CI log).

Rich shrinks a table that is too wide by cutting cells (``0.3…``). Here every
column gets a fixed width no narrower than its longest number (a number is never
folded or cut) and its longest word up to ``TEXT_WORD_CAP`` (longer words fold:
every character is still shown; a cell wraps between words, so a column's
no_wrap is not kept); spare width goes to the columns that want it. When those
widths do not fit, the borders go; when they still do not, the table is shown
one block per row ("column  value" lines), which stays readable at 80 columns
however many columns a row has.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rich import box
from rich.cells import cell_len
from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.rule import Rule
from rich.table import Column, Table
from rich.text import Text

from pipeline.core.visible import visible

# A text word longer than this may fold over lines instead of widening its column.
TEXT_WORD_CAP = 24
# Spaces between a column's name and its value when rows are shown as records.
RECORD_GAP = 2
# One "word" that is a number, possibly signed, bracketed or followed by a separator:
# 0.312, -1.2e-07, +0.05, 12.5%, [0.1, 0.2], (3), 1,234.
_NUMBER = re.compile(r"^[\[(]?[-+−]?\$?\d[\d,]*(\.\d+)?([eE][-+]?\d+)?%?[\])]?[,;:]?$")


def _plain(cell: RenderableType) -> str | None:
    if isinstance(cell, Text):
        return cell.plain
    if isinstance(cell, str):
        return cell  # print_table's cells are Text; a str is taken as it is, never as markup
    return None


def _widths(console: Console, cell: RenderableType) -> tuple[int, int]:
    """(narrowest width that keeps every number whole, width the cell would like)."""
    text = _plain(cell)
    if text is None:
        measured = Measurement.get(console, console.options, cell)
        return measured.minimum, measured.maximum
    lines = text.splitlines() or [""]
    want = max(cell_len(line) for line in lines)
    need = 0
    for line in lines:
        if _is_interval(line):
            # One value: split over two lines, its upper bound sat beside the next column's
            # number and read as the interval's ("[-0.026,  0.1123" over "+0.240]").
            need = max(need, cell_len(line.strip()))
            continue
        for word in line.split():
            width = cell_len(word)
            need = max(need, width if _NUMBER.match(word) else min(width, TEXT_WORD_CAP))
    return need, want


def _is_interval(line: str) -> bool:
    """``[low, high]`` (or parenthesized): two numbers in brackets, the line's all."""
    words = line.split()
    return (
        len(words) == 2
        and line.lstrip().startswith(("[", "("))
        and all(_NUMBER.match(word) for word in words)
    )


def _column_widths(console: Console, column: Column) -> tuple[int, int]:
    cells: Iterable[RenderableType] = [column.header, *column.cells]
    need, want = 1, 1
    for cell in cells:
        cell_need, cell_want = _widths(console, cell)
        need, want = max(need, cell_need), max(want, cell_want)
    return need, want


def _share(needs: Sequence[int], wants: Sequence[int], spare: int) -> list[int]:
    """Give spare width to the columns that want more, the least hungry served first."""
    widths = list(needs)
    order = sorted(range(len(widths)), key=lambda i: wants[i] - needs[i])
    for served, index in enumerate(order):
        give = min(wants[index] - needs[index], spare // (len(order) - served))
        widths[index] += give
        spare -= give
    return widths


def _as_text(cell: RenderableType) -> Text:
    if isinstance(cell, Text):
        return cell
    return Text(cell) if isinstance(cell, str) else Text(str(cell))


def _record(console: Console, names: Sequence[str], cells: Sequence[RenderableType]) -> Text:
    """One row as "name  value" lines; a long value folds under itself (a number never does,
    being shorter than the value's width)."""
    name_width = min(max((cell_len(n) for n in names), default=1), console.width // 2)
    value_width = max(console.width - name_width - RECORD_GAP, 1)
    indent = " " * (name_width + RECORD_GAP)
    lines: list[Text] = []
    for name, cell in zip(names, cells, strict=True):
        value = _as_text(cell)
        need, _ = _widths(console, value)
        if cell_len(name) > name_width or need > value_width:
            # A name longer than half the width, or a value whose number (or interval) is
            # wider than beside the names, gets a line of its own: the value takes the
            # whole width under it, so a number folds only when wider than the screen.
            lines.append(Text(name, style="bold"))
            under = max(console.width - RECORD_GAP, 1)
            below = value.wrap(console, under, overflow="fold")
            lines.extend(Text(" " * RECORD_GAP) + line for line in below)
            continue
        wrapped = list(value.wrap(console, value_width, overflow="fold"))
        for index, line in enumerate(wrapped or [Text()]):
            head = name.ljust(name_width + RECORD_GAP) if index == 0 else indent
            lines.append(Text(head, style="bold" if index == 0 else "") + line)
    return Text("\n").join(lines)


def _as_records(console: Console, table: Table) -> RenderableType:
    """One block per row: each column's name, then its value."""
    names = [_plain(c.header) or "" for c in table.columns]
    columns = [list(c.cells) for c in table.columns]
    parts: list[RenderableType] = [table.title] if table.title else []
    for row in range(table.row_count):
        parts.append(Rule(f"{row + 1} of {table.row_count}", align="left", characters="─"))
        parts.append(_record(console, names, [c[row] if row < len(c) else "" for c in columns]))
    if table.caption:
        parts.append(table.caption)
    return Group(*parts)


def _used(console: Console, table: Table) -> int:
    """The width ``table`` takes with its columns' fixed widths, borders and padding."""
    return Measurement.get(console, console.options.update(width=1 << 16), table).maximum


def _compact(table: Table) -> None:
    """No border, no column rules, two spaces between columns."""
    table.box, table.show_edge, table.pad_edge = box.SIMPLE_HEAD, False, False
    table.padding = (0, 1, 0, 0)


def _fits(console: Console, table: Table, widths: Sequence[int]) -> int | None:
    """The width left over with these column widths, None when they do not fit."""
    for column, width in zip(table.columns, widths, strict=True):
        column.width = width
    spare = console.width - _used(console, table)
    return spare if spare >= 0 else None


def fitted(console: Console, table: Table) -> RenderableType:
    """``table`` with widths that keep every number whole, or its rows as records.

    Tried in order: every cell on one line, boxed then compact; then cells wrapped
    between words, boxed then compact, with the spare width shared out.
    """
    if not table.columns:
        return table
    needs, wants = zip(*(_column_widths(console, c) for c in table.columns), strict=True)
    for column in table.columns:
        column.overflow, column.no_wrap = "fold", False
    boxed = (table.box, table.show_edge, table.pad_edge, table.padding)
    for widths in (wants, needs):
        for compact in (False, True):
            if compact and table.box is None:
                continue
            if compact:
                _compact(table)
            else:
                table.box, table.show_edge, table.pad_edge, table.padding = boxed
            spare = _fits(console, table, widths)
            if spare is not None:
                _fits(console, table, _share(needs, wants, spare) if widths is needs else wants)
                return table
    return _as_records(console, table)


def print_table(console: Console, table: Table, *, markup: bool = False) -> None:
    """Print ``table`` whole at the console's width (see the module docstring). Its text
    (cells, headers, title and caption hold names from data) is shown as it is: control
    characters as escapes, and brackets as brackets, never read as Rich markup (a name
    ``[/bold]`` had failed the command after its work, and ``[link=...]`` made a link).
    ``markup``: the table's strings are markup its maker wrote, with the data in them
    escaped (compare.render's blocks)."""

    def shown(value: str | Text) -> Text:
        # A Text is never highlighted: a str cell went through Rich's highlighter regexes,
        # whose time grows with the square of a long name (40k characters: 14 s).
        if isinstance(value, str):
            return Text.from_markup(value, emoji=False) if markup else Text(visible(value))
        if visible(value.plain) != value.plain:
            return Text(visible(value.plain), style=value.style)
        return value

    def cell(value: RenderableType) -> RenderableType:
        return shown(value) if isinstance(value, str | Text) else value

    for column in table.columns:
        column._cells = [cell(c) for c in column._cells]
        column.header = cell(column.header)
    table.title = None if table.title is None else shown(table.title)
    table.caption = None if table.caption is None else shown(table.caption)
    console.print(fitted(console, table))
