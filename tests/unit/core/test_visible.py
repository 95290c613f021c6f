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


@given(st.text())
@settings(max_examples=examples(200), deadline=None)
def test_nothing_a_terminal_acts_on_is_left(text: str) -> None:
    shown = visible(text)
    assert all(c in "\t\n" or not (ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0) for c in shown)
    if all(c in "\t\n" or (0x20 <= ord(c) < 0x7F) or ord(c) >= 0xA0 for c in text):
        assert shown == text
