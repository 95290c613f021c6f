"""Control characters from data show as escapes; everything printable, tabs and newlines
stay as they are."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.visible import visible
from tests.examples import examples


def test_control_characters_become_escapes() -> None:
    assert visible("a\x1b[31mb\x07\x00\x7f\x9b") == "a\\x1b[31mb\\x07\\x00\\x7f\\x9b"
    assert visible("tab\there\nnext é ✓") == "tab\there\nnext é ✓"


def test_text_that_reorders_or_breaks_lines_becomes_escapes() -> None:
    # "\u202e" showed "txt.exe" as "exe.txt"; "\u2028" made a second line no newline made.
    shown = visible("a\u202eexe.txt\u2066b\u2069c\u2028d")
    assert shown == "a\\u202eexe.txt\\u2066b\\u2069c\\u2028d"


REORDERING = {
    0x061C,
    0x200E,
    0x200F,
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
    0x2028,
    0x2029,
}


def acted_on(c: str) -> bool:
    return c not in "\t\n" and (ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or ord(c) in REORDERING)


@given(st.text())
@settings(max_examples=examples(200), deadline=None)
def test_nothing_a_terminal_acts_on_is_left(text: str) -> None:
    shown = visible(text)
    assert not any(acted_on(c) for c in shown)
    if not any(acted_on(c) for c in text):
        assert shown == text


@given(st.lists(st.text(), max_size=20))
@settings(max_examples=examples(100), deadline=None)
def test_the_column_form_shows_what_the_text_form_shows(texts: list[str]) -> None:
    import polars as pl

    from pipeline.core.visible import visible_expr

    column = pl.Series("t", texts, dtype=pl.String)
    shown = pl.select(visible_expr(pl.lit(column))).to_series().to_list()
    assert shown == [visible(text) for text in texts]
