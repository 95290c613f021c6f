"""Text from data, as a terminal shows it: control characters (ESC, NUL, DEL, C1, ...) as
``\\x..`` escapes, so a tool or file name cannot recolour the terminal, move its cursor or
retitle it; the characters that reorder text or break a line without being a newline (bidi
overrides and isolates, U+2028, U+2029) as ``\\u....``, so a name cannot show as another.
Tabs and newlines stay: a cell may span lines."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI imports this at start-up, where Polars is not imported yet
    import polars as pl

_KEPT = {0x09, 0x0A}
_ESCAPES = {
    code: f"\\x{code:02x}"
    for code in (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0))
    if code not in _KEPT
} | {
    code: f"\\u{code:04x}"
    for code in (
        0x061C,  # Arabic letter mark
        0x200E,
        0x200F,
        *range(0x202A, 0x202F),
        *range(0x2066, 0x206A),
        0x2028,
        0x2029,
    )
}


def visible(text: str) -> str:
    return text.translate(_ESCAPES)


def visible_expr(text: pl.Expr) -> pl.Expr:
    """``visible`` over a column of text, for a frame shown whole."""
    return text.str.replace_many([chr(code) for code in _ESCAPES], list(_ESCAPES.values()))
