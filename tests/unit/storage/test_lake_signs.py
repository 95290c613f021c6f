"""What makes a folder a lake: the marker, or an older lake's signs; a copied warehouse.duckdb
alone is no lake, read by the commands that read the warehouse only and refused by the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.storage import lake as lk


def _folder(root: Path, *entries: str) -> Path:
    """A folder holding ``entries``: a name ending in / is a folder, any other a file."""
    root.mkdir(parents=True)
    for entry in entries:
        path = root / entry.rstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        if entry.endswith("/"):
            path.mkdir()
        else:
            path.write_bytes(b"")
    return root


@pytest.mark.parametrize(
    ("entries", "sign"),
    [
        (["_state/lake.json"], "_state/lake.json"),
        # Lakes made before the marker: every command that landed or scored wrote one.
        (["_parts/p.json"], "_parts/"),
        # An older lake whose every part was removed: an empty _parts/ beside its tables.
        (["_parts/", "task_runs/", "_staging/"], "_parts/"),
        (["_parts/", ".lock"], "_parts/"),
        (["_state/current_rubric.json"], "_state/"),
        # The earliest, from before _parts/: the warehouse beside what it was built from.
        (["warehouse.duckdb", "task_runs/"], "warehouse.duckdb and task_runs/"),
        (["warehouse.duckdb", "quarantine/"], "warehouse.duckdb and quarantine/"),
    ],
)
def test_a_lake_is_known_by_its_marker_or_an_older_lakes_signs(
    tmp_path: Path, entries: list[str], sign: str
) -> None:
    lake = _folder(tmp_path / "lake", *entries)
    assert lk.lake_sign(lake) == sign
    assert lk.is_lake(lake) and not lk.is_copied_warehouse(lake)
    assert lk.not_a_lake(lake, may_create=False) is None


@pytest.mark.parametrize(
    "entries",
    [
        ["_state/"],
        ["_parts/"],
        ["_parts"],
        ["_state/notes.txt"],
        ["_parts/p.json/"],
        ["task_runs/"],
    ],
)
def test_a_folder_merely_named_like_a_sign_is_no_lake(tmp_path: Path, entries: list[str]) -> None:
    # An input folder may hold an empty _state/ or a file named _parts of its own: taken for
    # a lake, its inputs would be left unread, every night in an inbox.
    folder = _folder(tmp_path / "inputs", *entries)
    assert lk.lake_sign(folder) is None


def test_a_folder_holding_only_a_warehouse_is_a_copied_warehouse_not_a_lake(
    tmp_path: Path,
) -> None:
    copy = _folder(tmp_path / "copy", "warehouse.duckdb", "notes.txt")
    assert lk.lake_sign(copy) is None and not lk.is_lake(copy)
    assert lk.is_copied_warehouse(copy)
    # The commands that read the warehouse alone take it; no other does, and each says what
    # the folder is and what to give instead.
    assert lk.not_a_lake(copy, may_create=False, warehouse_will_do=True) is None
    reading = lk.not_a_lake(copy, may_create=False)
    assert reading is not None
    assert reading.startswith(f"--lake {copy} holds a warehouse.duckdb but no lake (no ")
    assert "a copied warehouse, read as it is by query, compare, history and surface-diff" in (
        reading
    )
    assert f'`python -m pipeline query "SQL" --lake {copy}`' in reading
    assert "give the lake's folder or a copy of all of it (a command that writes" in reading
    landing = lk.not_a_lake(copy, may_create=True)
    assert landing is not None
    assert "a copy of all of it, or a new or empty folder for a new lake" in landing


def test_a_writer_never_takes_a_copied_warehouse_for_a_new_lake(tmp_path: Path) -> None:
    # The CLI refuses it first; a job called directly must not mark the folder a lake either
    # (its next build would replace the copy).
    copy = _folder(tmp_path / "copy", "warehouse.duckdb")
    with (
        pytest.raises(lk.InputError, match=r"holds a warehouse\.duckdb but no lake"),
        lk.lake_lock(copy),
    ):
        pass
    assert [p.name for p in copy.iterdir()] == ["warehouse.duckdb"]
