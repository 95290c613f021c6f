"""Generated parts of the docs: the text between two markers, written anew from a source."""

from __future__ import annotations


def with_generated(text: str, begin: str, end: str, body: str, where: str) -> str:
    """``text`` with what lies between ``begin`` and ``end`` replaced by ``body``."""
    if text.count(begin) != 1 or text.count(end) != 1:
        raise ValueError(f"{where} must hold the markers {begin!r} and {end!r} once each")
    head, rest = text.split(begin)
    _, tail = rest.split(end)
    return f"{head}{begin}\n\n{body}\n{end}{tail}"
