"""The current rubric's repair says what it does: a broken file that cannot be restored is
removed, a missing one is left missing (the note had said "is missing; removed")."""

from __future__ import annotations

from pathlib import Path

import pytest

import pipeline.warehouse
from pipeline.storage import lake as lk
from pipeline.storage.state import CURRENT_RUBRIC, needed_repairs, repair_state

THEN = "the next scoring rescores every part under the rubric it is given"


def _lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, built: str | None) -> Path:
    """A lake whose warehouse shows rubric ``built`` and whose lineage holds none."""
    lake = tmp_path / "lake"
    (lake / lk.LAKE_MARKER).parent.mkdir(parents=True)
    (lake / lk.LAKE_MARKER).write_text("{}")
    monkeypatch.setattr(pipeline.warehouse, "built_rubric_id", lambda _lake: built)
    return lake


def test_a_missing_current_rubric_lineage_lacks_is_left_missing_and_said_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = _lake(tmp_path, monkeypatch, built="strict")
    repairs = needed_repairs(lake)
    path = lk.state_path(lake, CURRENT_RUBRIC)
    assert repairs.notes == [
        f"{path} is missing; left missing (lineage does not hold rubric strict, the "
        f"warehouse's): {THEN}"
    ]
    assert (repairs.writes, repairs.deletes) == ({}, [])
    assert repair_state(lake) == repairs.notes
    assert not path.exists()


@pytest.mark.parametrize(
    ("built", "why_not"),
    [
        ("strict", "lineage does not hold rubric strict, the warehouse's"),
        (None, "the warehouse names no rubric"),
    ],
)
def test_a_broken_current_rubric_that_cannot_be_restored_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, built: str | None, why_not: str
) -> None:
    lake = _lake(tmp_path, monkeypatch, built=built)
    path = lk.state_path(lake, CURRENT_RUBRIC)
    path.write_bytes(b"")
    (note,) = repair_state(lake)
    assert note.startswith(f"{path} is not valid JSON")
    assert note.endswith(f"; removed ({why_not}): {THEN}")
    assert not path.exists()
