"""Inputs that name nothing to read are refused before any work (exit 2), on one line that
says why: missing, not a folder (an inbox), a symbolic link or not a regular file, or
a comparison of a version with itself."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.storage.lake import LAKE_MARKER

runner = CliRunner()


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    lake = tmp_path / "lake"
    (lake / LAKE_MARKER).parent.mkdir(parents=True)
    (lake / LAKE_MARKER).write_text("{}")
    return lake


def refused(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("usage: "), line
    return line


def test_a_missing_input(tmp_path: Path, lake: Path) -> None:
    gone = tmp_path / "gone.jsonl"
    assert refused("run", str(gone), "--lake", str(lake)) == f"usage: no such input: {gone}"


def test_an_inbox_that_is_a_file(tmp_path: Path, lake: Path) -> None:
    file = tmp_path / "inbox.jsonl"
    file.write_text("{}\n")
    line = refused("nightly", "--inbox", str(file), "--lake", str(lake))
    assert line == f"usage: --inbox is not a folder: {file}"


def test_an_inbox_that_is_a_symbolic_link_says_so(tmp_path: Path, lake: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.jsonl").write_text("{}\n")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    line = refused("nightly", "--inbox", str(tmp_path / "link"), "--lake", str(lake))
    assert line.endswith(
        f"{tmp_path / 'link'}: a symbolic link, skipped unread "
        + ("(only regular files inside the input folder are read)")
    )


def test_a_fifo_given_is_not_a_regular_file(tmp_path: Path, lake: Path) -> None:
    fifo = tmp_path / "y.jsonl"
    os.mkfifo(fifo)
    line = refused("run", str(fifo), "--lake", str(lake))
    assert f"{fifo}: not a regular file, skipped unread" in line


def test_a_version_compared_with_itself(lake: Path) -> None:
    line = refused(
        "compare", "--agent", "a", "--baseline", "1.0", "--candidate", "1.0", "--lake", str(lake)
    )
    assert line == "usage: --baseline and --candidate are both 1.0: nothing to compare"


def test_a_log_no_installed_reader_opens_is_refused_before_a_lake_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "inspect_ai" else found(name)
    )
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "run.eval").write_bytes(b"PK")
    new_lake = tmp_path / "new-lake"
    line = refused("run", str(tmp_path / "logs"), "--lake", str(new_lake))
    assert line.startswith("usage: reading Inspect AI logs needs the inspect extra: ")
    assert ".venv/bin/pip install -e '.[inspect]'" in line
    assert not new_lake.exists()


def test_an_html_page_named_as_a_folder(tmp_path: Path, lake: Path) -> None:
    args = ["compare", "--agent", "a", "--baseline", "1", "--candidate", "2"]
    line = refused(*args, "--html", str(tmp_path), "--lake", str(lake))
    assert line == f"usage: --html names a folder, not a file to write: {tmp_path}"


@pytest.mark.parametrize("command", ["run", "ingest"])
def test_a_lake_path_with_glob_characters_is_refused_before_anything_lands(
    tmp_path: Path, command: str
) -> None:
    # It was refused only when the warehouse was built, after the runs had landed.
    (tmp_path / "in.jsonl").write_text("{}\n")
    lake = tmp_path / "a[1]" / "lake"
    line = refused(command, str(tmp_path / "in.jsonl"), "--lake", str(lake))
    assert line.startswith(f"usage: the lake path '{lake}' holds glob characters")
    assert not (tmp_path / "a[1]").exists()


def test_a_sarif_file_named_as_a_folder(tmp_path: Path, lake: Path) -> None:
    # Refused before any work: after the diff, exit 1 would read as the gate failing, and a
    # temporary file was left beside the folder.
    line = refused("surface-diff", "--server", "s", "--sarif", str(tmp_path), "--lake", str(lake))
    assert line == f"usage: --sarif names a folder, not a file to write: {tmp_path}"
    assert not list(tmp_path.parent.glob(f".{tmp_path.name}*"))


@pytest.mark.parametrize(
    ("option", "args"),
    [
        ("--sarif", ["surface-diff", "--server", "s"]),
        ("--html", ["compare", "--agent", "a", "--baseline", "1", "--candidate", "2"]),
    ],
)
def test_a_file_to_write_under_a_file_is_refused_before_any_work(
    tmp_path: Path, lake: Path, option: str, args: list[str]
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    out = afile / "sub" / "out"
    line = refused(*args, option, str(out), "--lake", str(lake))
    assert line == f"usage: {option} {out} lies under {afile}, which is a file, not a folder"


@pytest.mark.parametrize(
    "args",
    [
        ["compare", "--agent", "a", "--baseline", "1", "--candidate", "2"],
        ["history", "--agent", "a"],
        ["surface-diff", "--server", "s"],
    ],
)
def test_a_lake_without_its_warehouse_is_refused_as_query_refuses_it(
    lake: Path, args: list[str]
) -> None:
    line = refused(*args, "--lake", str(lake))
    assert line.startswith(f"usage: no warehouse at {lake / 'warehouse.duckdb'}: "), line
    assert line.endswith(f"score --lake {lake}` builds it"), line
    assert refused("query", "select 1", "--lake", str(lake)) == line


@pytest.mark.parametrize("command", ["compare", "history", "surface-diff", "query"])
def test_a_mistyped_lake_is_said_alike_by_every_reading_command(
    tmp_path: Path, command: str
) -> None:
    # surface-diff had advised `score --lake TYPO`, which then failed: the lake does not exist.
    args = {
        "compare": ["--agent", "a", "--baseline", "1", "--candidate", "2"],
        "history": ["--agent", "a"],
        "surface-diff": ["--server", "s"],
        "query": ["select 1"],
    }[command]
    typo = tmp_path / "typo_lake"
    line = refused(command, *args, "--lake", str(typo))
    assert line.startswith(f"usage: --lake {typo} does not exist"), line


def test_a_folder_holding_only_the_lake_says_why_it_names_no_input(tmp_path: Path) -> None:
    # The lake written to is left out of a folder without a note; when nothing else is
    # there, the usage line says it was.
    lake = tmp_path / "data" / "lake"
    (lake / LAKE_MARKER).parent.mkdir(parents=True)
    (lake / LAKE_MARKER).write_text("{}")
    (lake / "_parts").mkdir()
    (lake / "_parts" / "p.json").write_text("{}")
    line = refused("ingest", str(tmp_path / "data"), "--lake", str(lake))
    assert line == (
        f"usage: no input files (*.jsonl, *.jsonl.gz, *.json, *.eval) in {tmp_path / 'data'}; "
        f"{lake}: the lake --lake names, skipped unread (no INPUT yields the files of a lake)"
    )


def test_an_empty_folder_around_a_lake_to_be_made_blames_no_lake(tmp_path: Path) -> None:
    # The lake does not exist yet: nothing was left out, the folder is only empty.
    (tmp_path / "data").mkdir()
    line = refused("ingest", str(tmp_path / "data"), "--lake", str(tmp_path / "data" / "new"))
    assert line == (
        f"usage: no input files (*.jsonl, *.jsonl.gz, *.json, *.eval) in {tmp_path / 'data'}"
    )
