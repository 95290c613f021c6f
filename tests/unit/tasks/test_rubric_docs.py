"""docs/rubric.md shows the built-in rubric's values: every default its key tables and its
weights sentence write equals DEFAULT_RUBRIC's, and every key of [task] and [surface] is in a
table (a key added, renamed or changed in pipeline/rubric.py or pipeline/surface/rubric.py
fails here until the page follows)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from pipeline.rubric import DEFAULT_RUBRIC
from tests.paths import ROOT

PAGE = (ROOT / "docs" / "rubric.md").read_text("utf-8")
_NAME = re.compile(r"`([a-z_]+)`")
# `name 0.6` or `A+ 97`: one entry of a table value written inline.
_ENTRY = re.compile(r"([A-Za-z_+-]+) (-?[0-9.]+)")


def section(title: str) -> str:
    start = PAGE.index(f"### `[{title}]`")
    end = PAGE.find("\n### ", start + 1)
    return PAGE[start : end if end > 0 else None]


def rows(title: str) -> list[tuple[list[str], str]]:
    """Each table row of a section: the key names of its first cell, its default cell."""
    found = []
    for line in section(title).splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            found.append((_NAME.findall(cells[0]), cells[1]))
    return found


def written(default: str, names: list[str]) -> dict[str, Any]:
    """What a default cell says each of ``names`` is: numbers (one a name, in order), or
    ``name number`` entries for a key whose value is a table; prose says nothing."""
    numbers = default.split(", ")
    if len(names) == len(numbers) and all(re.fullmatch(r"-?[0-9.]+", n) for n in numbers):
        return {name: float(number) for name, number in zip(names, numbers, strict=True)}
    entries = dict(_ENTRY.findall(default))
    if len(names) == 1 and entries and len(entries) == len(numbers):
        return {names[0]: {key: float(value) for key, value in entries.items()}}
    return {}


@pytest.mark.parametrize("title", ["task", "surface"])
def test_every_default_in_a_key_table_is_the_built_in_one(title: str) -> None:
    defaults = DEFAULT_RUBRIC[title]
    shown = {}
    for names, default in rows(title):
        shown |= written(default, names)
    # Every key but one whose default is prose (which smells count toward a dimension).
    prose = {"description_smells"} if title == "surface" else set()
    numbers = {name for name, value in defaults.items() if not isinstance(value, (str, list))}
    if title == "task":
        numbers = {name for name in numbers if not isinstance(defaults[name], dict)}
    assert set(shown) == numbers - prose
    assert shown == {name: defaults[name] for name in shown}


@pytest.mark.parametrize("title", ["task", "surface"])
def test_every_key_has_a_row(title: str) -> None:
    documented = {name for names, _ in rows(title) for name in names}
    keys = set(DEFAULT_RUBRIC[title])
    if title == "task":
        # The [task.<env>] tables: their rows are `[task.<env>] gate` and `weights`.
        keys = {name for name in keys if not isinstance(DEFAULT_RUBRIC[title][name], dict)}
    assert keys <= documented, sorted(keys - documented)


def test_the_default_weights_sentence_is_the_built_in_weights() -> None:
    sentence = PAGE[PAGE.index("Default weights:") : PAGE.index("### `[surface]`")]
    task = DEFAULT_RUBRIC["task"]
    exploit = dict(re.findall(r"`([a-z_]+)` ([0-9.]+)", sentence.split("; patch")[0]))
    assert {k: float(v) for k, v in exploit.items()} == task["exploit"]["weights"]
    assert task["detect"]["weights"] == task["exploit"]["weights"]
    patch = re.search(r"patch ((?:`[a-z_]+`,? )+)([0-9.]+) each", " ".join(sentence.split()))
    assert patch is not None
    names = _NAME.findall(patch.group(1))
    assert task["patch"]["weights"] == dict.fromkeys(names, float(patch.group(2)))
    assert re.search(r"audit `audit` 1\.0", sentence)
    assert task["audit"]["weights"] == {"audit": 1.0}


def test_a_changed_default_would_be_caught() -> None:
    # The parser reads what the page writes: a row with another number differs.
    (names, default), *_ = [
        row for row in rows("surface") if row[0] == ["per_tool_share", "surface_share"]
    ]
    assert written(default, names) == {"per_tool_share": 0.6, "surface_share": 0.4}
    assert written("0.7, 0.4", names) != {n: DEFAULT_RUBRIC["surface"][n] for n in names}
