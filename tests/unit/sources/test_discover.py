"""Input discovery on a tiny folder: which files are read, which are skipped and why."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pipeline.sources.discover import expand_inputs, scan_inputs, source_name
from pipeline.storage.lake import InputError


def _touch(path: Path, text: str = "{}\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_folder_gives_its_input_files_sorted_and_nothing_else(tmp_path: Path) -> None:
    b = _touch(tmp_path / "in" / "sub" / "b.jsonl.gz")
    a = _touch(tmp_path / "in" / "a.jsonl")
    report = _touch(tmp_path / "in" / "r.json")
    _touch(tmp_path / "in" / "notes.txt")
    scanned = scan_inputs([tmp_path / "in"])
    assert scanned.files == sorted([a.resolve(), b.resolve(), report.resolve()])
    assert scanned.skipped == []


def test_links_are_skipped_with_a_note_never_read(tmp_path: Path) -> None:
    outside = _touch(tmp_path / "secret.jsonl")
    inbox = tmp_path / "in"
    kept = _touch(inbox / "a.jsonl")
    os.symlink(outside, inbox / "link.jsonl")
    given = tmp_path / "given.jsonl"
    os.symlink(outside, given)
    scanned = scan_inputs([inbox, given])
    assert scanned.files == [kept.resolve()]
    assert [note.split(": ")[1] for note in scanned.skipped] == [
        "a symbolic link, skipped unread (only regular files inside the input folder are read)"
    ] * 2


def test_a_file_named_twice_is_read_once_and_the_lake_is_not_an_input(tmp_path: Path) -> None:
    a = _touch(tmp_path / "a.jsonl")
    _touch(tmp_path / "lake" / "_state" / "x.json")
    files = expand_inputs([tmp_path, a, tmp_path / "." / "a.jsonl"], lake=tmp_path / "lake")
    assert files == [a.resolve()]


LAKE_NOTE = "skipped unread (no INPUT yields the files of a lake)"


def test_every_lake_in_a_folder_is_skipped_with_a_note_the_one_written_without(
    tmp_path: Path,
) -> None:
    inbox = tmp_path / "inbox"
    kept = _touch(inbox / "a.jsonl")
    deeper = _touch(inbox / "sub" / "b.jsonl")
    # A copied lake (its state, manifests and score inputs are JSON), and lakes made before
    # the marker existed, known by their _parts/ or _state/ folder, one of them deeper down.
    _touch(inbox / "oldlake" / "_state" / "lake.json")
    _touch(inbox / "oldlake" / "_state" / "ledger.json")
    _touch(inbox / "oldlake" / "_parts" / "p.json")
    _touch(inbox / "oldlake" / "scores" / "k" / "version_regressions" / "all.inputs.json")
    _touch(inbox / "oldlake" / "inbox" / "c.jsonl")  # below a lake is the lake's
    _touch(inbox / "sub" / "legacy" / "_parts" / "p.json")
    _touch(inbox / "state_only" / "_state" / "current_rubric.json")
    _touch(inbox / "own" / "_state" / "lake.json")
    # The lake written to is left out without a note (an inbox holding its lake would get
    # one every night).
    scanned = scan_inputs([inbox], lake=inbox / "own")
    assert scanned.files == [kept.resolve(), deeper.resolve()]
    assert scanned.skipped == [
        f"{inbox / 'oldlake'}: a lake (it holds _state/lake.json), {LAKE_NOTE}",
        f"{inbox / 'state_only'}: a lake (it holds _state/), {LAKE_NOTE}",
        f"{inbox / 'sub' / 'legacy'}: a lake (it holds _parts/), {LAKE_NOTE}",
    ]


def test_a_folder_that_is_a_lake_or_inside_the_lake_yields_nothing(tmp_path: Path) -> None:
    _touch(tmp_path / "old" / "_state" / "lake.json")
    _touch(tmp_path / "own" / "_state" / "lake.json")
    own_inbox = _touch(tmp_path / "own" / "inbox" / "a.jsonl").parent
    own_file = _touch(tmp_path / "own" / "_state" / "ledger.json")
    scanned = scan_inputs([tmp_path / "old", own_inbox, own_file], lake=tmp_path / "own")
    assert scanned.files == []
    assert scanned.skipped == [
        f"{tmp_path / 'old'}: a lake (it holds _state/lake.json), {LAKE_NOTE}",
        f"{own_inbox}: inside the lake --lake names, {LAKE_NOTE}",
        f"{own_file}: inside the lake --lake names, {LAKE_NOTE}",
    ]


def test_an_input_inside_another_lake_is_skipped_naming_it_one_beside_it_is_read(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    lake = data / "otherlake"
    state = _touch(lake / "_state" / "lake.json")
    runs = _touch(lake / "task_runs" / "p.json").parent
    deep = _touch(lake / "inbox" / "deeper" / "a.jsonl")
    beside = _touch(data / "inbox" / "x.jsonl")
    # Spelled through the lake's parent (..): the place is what counts.
    spelled = lake / "task_runs" / ".." / "_state"
    scanned = scan_inputs(
        [lake / "_state", runs, state, deep, deep.parent, spelled, beside, data / "inbox"],
        lake=tmp_path / "mylake",
    )
    assert scanned.files == [beside.resolve()]
    inside = f"inside the lake {lake} (it holds _state/lake.json), {LAKE_NOTE}"
    assert scanned.skipped == [
        f"{path}: {inside}" for path in (lake / "_state", runs, state, deep, deep.parent, spelled)
    ]


def test_a_lake_above_is_found_by_any_of_its_signs_and_the_nearest_is_named(
    tmp_path: Path,
) -> None:
    # An older lake without the marker (its _parts/ beside a landed table), holding a lake.
    _touch(tmp_path / "old" / "_parts" / "p.json")
    (tmp_path / "old" / "task_runs").mkdir()
    nested = _touch(tmp_path / "old" / "copy" / "_state" / "lake.json").parent.parent
    first = _touch(tmp_path / "old" / "task_runs" / "a.jsonl")
    second = _touch(nested / "quarantine" / "q.json")
    scanned = scan_inputs([first, second])
    assert scanned.files == []
    assert scanned.skipped == [
        f"{first}: inside the lake {tmp_path / 'old'} (it holds _parts/), {LAKE_NOTE}",
        f"{second}: inside the lake {nested} (it holds _state/lake.json), {LAKE_NOTE}",
    ]


def test_a_folder_above_that_cannot_be_looked_into_is_no_lake(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    given = _touch(tmp_path / "locked" / "in" / "a.jsonl")
    locked, stat = (tmp_path / "locked").resolve(), os.stat
    refused: list[Path] = []

    def stat_of(path: Any, *args: Any, **kwargs: Any) -> Any:
        # Only the way to the input may be looked at: a lake's signs beside it may not.
        if Path(path).parent == locked and Path(path).name != "in":
            refused.append(Path(path))
            raise PermissionError(13, "Permission denied", str(path))
        return stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat_of)
    assert scan_inputs([given]).files == [given.resolve()]
    assert refused  # the signs were looked for, and not finding them was no error


def test_each_folder_above_the_inputs_is_looked_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipeline.sources import discover

    files = [_touch(tmp_path / "in" / f"{i}.jsonl") for i in range(5)]
    seen: list[Path] = []
    real = discover.lake_sign

    def counted(path: Path) -> str | None:
        seen.append(path)
        return real(path)

    monkeypatch.setattr(discover, "lake_sign", counted)
    assert scan_inputs(files).files == [f.resolve() for f in files]
    assert len(seen) == len(set(seen)) == len((tmp_path / "in").resolve().parents) + 1


def test_a_folder_with_a_copied_warehouse_is_no_lake_its_inputs_are_read(tmp_path: Path) -> None:
    # warehouse.duckdb is copied anywhere to be read: beside it, inputs are inputs. Beside a
    # landed table's folder it is a lake the pipeline made before the other signs existed.
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "warehouse.duckdb").write_bytes(b"")
    kept = _touch(tmp_path / "in" / "a.jsonl")
    (tmp_path / "in" / "early").mkdir()
    (tmp_path / "in" / "early" / "warehouse.duckdb").write_bytes(b"")
    _touch(tmp_path / "in" / "early" / "task_runs" / "x.json")
    scanned = scan_inputs([tmp_path / "in"])
    assert scanned.files == [kept.resolve()]
    assert scanned.skipped == [
        f"{tmp_path / 'in' / 'early'}: a lake (it holds warehouse.duckdb and task_runs/), "
        + LAKE_NOTE
    ]


def test_a_missing_input_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no such input: .*nope\.jsonl"):
        scan_inputs([tmp_path / "nope.jsonl"])


def test_a_file_is_named_by_where_it_is_not_how_it_was_spelled(tmp_path: Path) -> None:
    a = _touch(tmp_path / "a.jsonl")
    spelled = tmp_path / "d" / ".." / "a.jsonl"
    (tmp_path / "d").mkdir()
    assert source_name(spelled) == source_name(a) == str(a.resolve())


def test_a_folder_that_cannot_be_listed_is_named_in_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "h.jsonl").write_text("{}\n")
    (tmp_path / "ok.jsonl").write_text("{}\n")
    listed, stat = os.scandir, os.stat

    def scandir(path: Any) -> Any:
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return listed(path)

    def stat_of(path: Any, *args: Any, **kwargs: Any) -> Any:
        # As in a folder of mode 000: nothing in it can be looked at either (a lake's signs
        # are looked for in every folder; pathlib's is_file raises on EACCES, and the walk
        # had failed the whole ingest, and every nightly, with a PermissionError).
        if Path(path).parent.name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "stat", stat_of)
    found = scan_inputs([tmp_path])
    assert found.files == [(tmp_path / "ok.jsonl").resolve()]
    assert found.skipped == [
        f"{tmp_path / 'locked'}: could not be listed (Permission denied), skipped unread "
        "(only regular files inside the input folder are read)"
    ]
