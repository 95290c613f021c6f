"""Numbers as a person reads them, in the terminal tables, the headline and the page."""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable
from typing import Any, Final

MISSING = "–"
# The zone of every time shown (fetch.py reads them in it), whatever the reader's own.
UTC = "UTC"


def holm_family(k: Any) -> str:
    """The family the gate's Holm correction runs over, as the headline, table and page say it."""
    return f"Holm over {k} env type{'' if k == 1 else 's'}"


def number(value: Any, digits: int = 3, *, signed: bool = False, missing: str = MISSING) -> str:
    """A float to ``digits`` places (with its sign when ``signed``); None or NaN as ``missing``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return missing
    if isinstance(value, float):
        return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"
    return str(value)


def p_value(value: Any) -> str:
    """A p-value to four places, or in two significant digits below 0.001, so that a
    strong result (7.5e-06) does not read as 0.0000."""
    if isinstance(value, float) and 0 < value < 0.001:
        return f"{value:.1e}"
    return number(value, 4)


def delta(value: float | None, digits: int = 4) -> str:
    """A difference, always signed; ``n/a`` when there is none."""
    return "n/a" if value is None else f"{value:+.{digits}f}"


def interval(low: Any, high: Any, *, signed: bool = True) -> str:
    """``[low, high]`` to three places, or ``–`` when either end is missing."""
    if low is None or high is None:
        return MISSING
    return f"[{low:+.3f}, {high:+.3f}]" if signed else f"[{low:.3f}, {high:.3f}]"


# What two names may differ in that a screen does not show (normalization, whitespace at an end)
# or a reader easily passes over (case): a name typed against one a grader wrote, or two
# graders' spellings of one build. Each with the form in which that difference is gone.
_INVISIBLE: Final[tuple[tuple[str, Callable[[str], str]], ...]] = (
    ("Unicode normalization", lambda text: unicodedata.normalize("NFC", text)),
    ("letter case", str.casefold),
    ("surrounding whitespace", str.strip),
)


def without_invisible(text: str, kept: str | None = None) -> str:
    """``text`` with every such difference (but the one named ``kept``) gone: two names a
    reader may take for one have the same form."""
    for name, form in _INVISIBLE:
        text = text if name == kept else form(text)
    return text


def invisible_differences(one: str, other: str) -> str:
    """What alone tells two different names apart when it is only such differences
    (``'letter case and surrounding whitespace'``); '' when they are equal or differ in more."""
    if one == other or without_invisible(one) != without_invisible(other):
        return ""
    return " and ".join(
        name
        for name, _ in _INVISIBLE
        if without_invisible(one, name) != without_invisible(other, name)
    )
