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


LAKE_NOTE = "skipped unread (a folder given as INPUT never yields the files of a lake)"


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


def test_a_folder_that_is_a_lake_or_inside_the_lake_yields_nothing_but_its_files_by_path_do(
    tmp_path: Path,
) -> None:
    state = _touch(tmp_path / "old" / "_state" / "lake.json")
    _touch(tmp_path / "own" / "_state" / "lake.json")
    own_inbox = _touch(tmp_path / "own" / "inbox" / "a.jsonl").parent
    scanned = scan_inputs([tmp_path / "old", own_inbox], lake=tmp_path / "own")
    assert scanned.files == []
    assert scanned.skipped == [
        f"{tmp_path / 'old'}: a lake (it holds _state/lake.json), {LAKE_NOTE}",
        f"{own_inbox}: inside the lake --lake names, {LAKE_NOTE}",
    ]
    # A file named by its path is read whatever its name and wherever it is (the README's
    # "a file named explicitly is read whatever its name").
    assert scan_inputs([state]).files == [state.resolve()]


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
