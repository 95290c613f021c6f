"""Text from data, as a terminal shows it: control characters (ESC, NUL, DEL, C1, ...) as
``\\x..`` escapes, so a tool or file name cannot recolour the terminal, move its cursor or
retitle it. Tabs and newlines stay: a cell may span lines."""

from __future__ import annotations

_KEPT = {0x09, 0x0A}
_ESCAPES = {
    code: f"\\x{code:02x}"
    for code in (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0))
    if code not in _KEPT
}


def visible(text: str) -> str:
    return text.translate(_ESCAPES)
