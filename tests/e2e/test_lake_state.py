"""The lake's state across commands, from the user's side (issue 10): the lake remembers its
rubric; every line has one state; a file is one file however it is spelled; nothing found
is said, not passed over; every flag works or is refused."""

from __future__ import annotations

import json
import random
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.rubric import parse_rubric
from pipeline.warehouse import connect_read_only
from tests.strategies import task_record

runner = CliRunner()
STRICT_TOML = 'rubric_id = "strict"\n[task]\nfailure_threshold = 0.9\n'
DEFAULT_ID = parse_rubric({}).rubric_id


def cli(*args: str) -> tuple[int, str]:
    done = runner.invoke(app, list(args))
    return done.exit_code, done.output


def write(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))
    return path


def tasks(path: Path, *run_ids: str) -> Path:
    return write(path, [json.dumps(task_record(random.Random(r), r)) for r in run_ids])


def rubric_ids(lake: Path) -> set[str]:
    con = connect_read_only(lake)
    try:
        found = con.execute("select distinct rubric_id from task_runs").fetchall()
        return {row[0] for row in found}
    finally:
        con.close()


def count(lake: Path, sql: str) -> int:
    con = connect_read_only(lake)
    try:
        row = con.execute(sql).fetchone()
    finally:
        con.close()
    assert row is not None
    return int(row[0])


# --- The lake remembers its rubric -------------------------------------------------------


@pytest.mark.slow
def test_commands_without_rubric_keep_the_lakes_rubric(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    strict = tmp_path / "strict.toml"
    strict.write_text(STRICT_TOML)
    first = tasks(tmp_path / "in" / "a.jsonl", "a1", "a2")
    code, out = cli("run", str(first), "--lake", str(lake), "--rubric", str(strict))
    assert code == 0, out
    assert rubric_ids(lake) == {"strict"}

    second = tasks(tmp_path / "in2" / "b.jsonl", "b1")
    code, out = cli("run", str(second), "--lake", str(lake))
    assert code == 0, out
    assert "rubric changed" not in out
    assert rubric_ids(lake) == {"strict"}
    assert count(lake, "select count(*) from task_runs") == 3

    code, out = cli("score", "--lake", str(lake))
    assert code == 0, out
    assert rubric_ids(lake) == {"strict"}

    inbox = tmp_path / "inbox"
    tasks(inbox / "c.jsonl", "c1")
    code, out = cli("nightly", "--inbox", str(inbox), "--lake", str(lake))
    assert code == 0, out
    assert rubric_ids(lake) == {"strict"}
    summary = json.loads(next((lake / "_runs").glob("nightly-*.json")).read_text())
    assert (summary["rubric_before"], summary["rubric_after"]) == ("strict", "strict")

    code, out = cli("replay-quarantine", "--lake", str(lake))
    assert code == 0, out
    assert rubric_ids(lake) == {"strict"}

    # Only an explicit --rubric changes it, and the output says what changed.
    code, out = cli("run", str(second), "--lake", str(lake), "--rubric", "default")
    assert code == 0, out
    assert f"rubric changed: strict -> {DEFAULT_ID}; 4 task run(s) and 0 surface grade(s)" in out
    assert rubric_ids(lake) == {DEFAULT_ID}
    current = json.loads((lake / "_state" / "current_rubric.json").read_text())
    assert current["rubric_id"] == DEFAULT_ID


@pytest.mark.slow
def test_score_with_a_new_rubric_says_what_changed(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    code, out = cli("run", str(tasks(tmp_path / "a.jsonl", "a1", "a2")), "--lake", str(lake))
    assert code == 0, out
    assert f"rubric: the lake starts with {DEFAULT_ID}" in out
    strict = tmp_path / "strict.toml"
    strict.write_text(STRICT_TOML)
    code, out = cli("score", "--lake", str(lake), "--rubric", str(strict))
    assert code == 0, out
    assert f"rubric changed: {DEFAULT_ID} -> strict; 2 task run(s) and 0 surface grade(s)" in out
    # The same rubric again changes nothing and says nothing about a change.
    code, out = cli("score", "--lake", str(lake), "--rubric", str(strict))
    assert code == 0 and "rubric changed" not in out
    # A changed file under the same rubric_id would file two rubrics' scores under one id.
    strict.write_text(STRICT_TOML.replace("0.9", "0.8"))
    code, out = cli("score", "--lake", str(lake), "--rubric", str(strict))
    assert code == 2
    assert "rubric_id 'strict' already names a different rubric" in out
    assert rubric_ids(lake) == {"strict"}


# --- Say when there is nothing -----------------------------------------------------------


@pytest.mark.parametrize("layout", ["empty", "no_input_files", "nested_empty"])
def test_an_input_that_names_no_files_is_exit_2_and_creates_nothing(
    tmp_path: Path, layout: str
) -> None:
    folder = tmp_path / "inbox"
    folder.mkdir()
    if layout == "no_input_files":
        (folder / "notes.txt").write_text("not an input\n")
        (folder / "grades.csv").write_text("a,b\n")
    if layout == "nested_empty":
        (folder / "deeper" / "still").mkdir(parents=True)
    lake = tmp_path / "lake"
    for command in ("run", "ingest"):
        code, out = cli(command, str(folder), "--lake", str(lake))
        assert code == 2, out
        assert f"no input files (*.jsonl, *.jsonl.gz, *.json, *.eval) in {folder}" in out
        assert not lake.exists()


def test_one_empty_input_among_good_ones_is_named(tmp_path: Path) -> None:
    good = tasks(tmp_path / "a.jsonl", "a1")
    empty = tmp_path / "empty"
    empty.mkdir()
    lake = tmp_path / "lake"
    code, out = cli("run", str(good), str(empty), "--lake", str(lake))
    assert code == 2 and str(empty) in out and not lake.exists()


@pytest.mark.slow
def test_nightly_with_an_inbox_holding_no_input_files_is_exit_2(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    assert cli("run", str(tasks(tmp_path / "a.jsonl", "a1")), "--lake", str(lake))[0] == 0
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    before = sorted(p.relative_to(lake) for p in lake.rglob("*"))
    code, out = cli("nightly", "--inbox", str(inbox), "--lake", str(lake))
    assert code == 2 and f"in {inbox}" in out
    assert sorted(p.relative_to(lake) for p in lake.rglob("*")) == before


READING_COMMANDS = [
    ["score"],
    ["score", "--dry-run"],
    ["nightly", "--inbox", "{inbox}"],
    ["replay-quarantine"],
    ["rescore-diff", "--from", "a", "--to", "b"],
    ["compare", "--agent", "x", "--baseline", "1", "--candidate", "2"],
    ["history", "--agent", "x"],
    ["query", "select 1"],
]


@pytest.mark.parametrize("command", READING_COMMANDS, ids=lambda c: " ".join(c[:2]))
@pytest.mark.parametrize("kind", ["missing", "plain_folder", "file"])
def test_a_lake_that_is_not_a_lake_is_exit_2_and_creates_nothing(
    tmp_path: Path, command: list[str], kind: str
) -> None:
    inbox = tmp_path / "inbox"
    tasks(inbox / "a.jsonl", "a1")
    lake = tmp_path / "typo"
    if kind == "plain_folder":
        lake.mkdir()
        (lake / "holiday.jpg").write_text("x")
    if kind == "file":
        lake.write_text("x")
    before = sorted(tmp_path.rglob("*"))
    args = [a.replace("{inbox}", str(inbox)) for a in command]
    code, out = cli(*args, "--lake", str(lake))
    assert code == 2, out
    assert f"--lake {lake}" in out
    assert len(out.strip().splitlines()) == 1
    assert sorted(tmp_path.rglob("*")) == before
    if kind == "missing":
        # The advice acts on this lake, and lands files: `run` without an INPUT had been
        # suggested, which would put the sample data into a lake of real runs.
        assert f"`python -m pipeline ingest FILE ... --lake {lake}`" in out
        assert "pipeline run" not in out
    if kind == "plain_folder":
        # Not advice to ingest there: ingest refuses a folder holding other things.
        assert "holds no lake (_state/lake.json) and other files: give a lake" in out


@pytest.mark.slow
@pytest.mark.parametrize("command", ["run", "ingest"])
def test_run_and_ingest_refuse_a_lake_that_is_a_file_or_a_foreign_folder(
    tmp_path: Path, command: str
) -> None:
    source = tasks(tmp_path / "in" / "a.jsonl", "a1")
    as_file = tmp_path / "lake.txt"
    as_file.write_text("x")
    code, out = cli(command, str(source), "--lake", str(as_file))
    assert code == 2 and f"--lake {as_file} is a file" in out
    assert len(out.strip().splitlines()) == 1
    # A folder holding other things is not taken over either; a new or empty one is.
    code, out = cli(command, str(source), "--lake", str(tmp_path / "in"))
    assert code == 2 and "not empty" in out
    empty = tmp_path / "new"
    empty.mkdir()
    assert cli(command, str(source), "--lake", str(empty))[0] == 0
    assert (empty / "_state" / "lake.json").is_file()


NOT_COPY_READERS = [
    ["check"],
    ["run", "{source}"],
    ["ingest", "{source}"],
    ["score"],
    ["score", "--dry-run"],
    ["nightly", "--inbox", "{inbox}"],
    ["replay-quarantine"],
    ["rescore-diff", "--from", "default", "--to", "default"],
]


@pytest.mark.slow
def test_a_copied_warehouse_is_read_by_the_readers_and_refused_by_every_other_command(
    sample_lake: Path, tmp_path: Path
) -> None:
    import hashlib

    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "warehouse.duckdb").write_bytes((sample_lake / "warehouse.duckdb").read_bytes())
    runs = count(sample_lake, "select count(*) from task_runs")

    def held() -> list[tuple[str, str]]:
        return [(p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for p in copy.iterdir()]

    before = held()
    code, out = cli("query", "select count(*) from task_runs", "--csv", "--lake", str(copy))
    assert (code, out.split()) == (0, ["count_star()", str(runs)])
    for reader in (
        ["history", "--agent", "atlas"],
        ["compare", "--agent", "atlas", "--baseline", "1.3.0", "--candidate", "1.4.0"],
        ["surface-diff", "--server", "weather-kit"],
    ):
        code, out = cli(*reader, "--lake", str(copy))
        assert code == 0, out
    source = tasks(tmp_path / "in" / "a.jsonl", "a1")
    for command in NOT_COPY_READERS:
        args = [a.format(source=source, inbox=source.parent) for a in command]
        code, out = cli(*args, "--lake", str(copy))
        # One line saying what the folder is and what to give instead; check no longer says
        # "all invariants hold", and an ingest had replaced the copy's runs with its own.
        assert code == 2, (command, out)
        (line,) = out.strip().splitlines()
        assert line.startswith(f"usage: --lake {copy} holds a warehouse.duckdb but no lake"), line
        assert "give the lake's folder or a copy of all of it" in line
        assert "all invariants hold" not in out
        assert held() == before, command


@pytest.mark.slow
def test_a_lake_made_before_the_marker_is_still_a_lake_and_gets_the_marker(
    sample_lake_copy: Path, tmp_path: Path
) -> None:
    lake = sample_lake_copy
    (lake / "_state" / "lake.json").unlink()
    runs = count(lake, "select count(*) from task_runs")
    for reading in (["check"], ["query", "select 1"]):
        code, out = cli(*reading, "--lake", str(lake))
        assert code == 0, (reading, out)
    assert not (lake / "_state" / "lake.json").exists()  # these read, and write nothing
    code, out = cli("ingest", str(tasks(tmp_path / "b.jsonl", "b1")), "--lake", str(lake))
    assert code == 0, out
    assert (lake / "_state" / "lake.json").is_file()
    assert count(lake, "select count(*) from task_runs") == runs + 1
    assert cli("check", "--lake", str(lake))[0] == 0


# --- Every flag works or is refused ------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["score", "--json"], "--json needs --dry-run"),
        (["score", "--dry-run", "--engine", "spark"], "does not take --engine spark"),
        (["score", "--spark-master", "spark://h:7077"], "--spark-master needs --engine spark"),
        (
            ["nightly", "--inbox", "{inbox}", "--spark-master", "local[1]"],
            "--spark-master needs --engine spark",
        ),
    ],
)
@pytest.mark.slow
def test_a_flag_that_would_do_nothing_is_refused(
    tmp_path: Path, args: list[str], message: str
) -> None:
    lake = tmp_path / "lake"
    inbox = tmp_path / "inbox"
    tasks(inbox / "a.jsonl", "a1")
    assert cli("run", str(inbox), "--lake", str(lake))[0] == 0
    # A rescore keeps score files that get their own bytes again, but writes the rubric state.
    scored = [*sorted((lake / "scores").rglob("*.parquet")), lake / "_state" / "rubrics.json"]
    mtimes = [p.stat().st_mtime_ns for p in scored]
    code, out = cli(*[a.replace("{inbox}", str(inbox)) for a in args], "--lake", str(lake))
    assert code == 2 and message in out
    # Nothing was rescored.
    assert [p.stat().st_mtime_ns for p in scored] == mtimes
    assert sorted((lake / "scores").rglob("*.parquet")) == scored[:-1]


@pytest.mark.slow
def test_score_dry_run_json_still_works(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    assert cli("run", str(tasks(tmp_path / "a.jsonl", "a1")), "--lake", str(lake))[0] == 0
    strict = tmp_path / "strict.toml"
    strict.write_text(STRICT_TOML)
    code, out = cli("score", "--dry-run", "--json", "--rubric", str(strict), "--lake", str(lake))
    assert code == 0, out
    json.loads(out)
    assert rubric_ids(lake) == {DEFAULT_ID}  # a dry run replaces nothing
    # As a table it says so, and under which rubric the lake stays.
    code, out = cli("score", "--dry-run", "--rubric", str(strict), "--lake", str(lake))
    assert code == 0, out
    assert f"dry run: nothing was written; the lake stays under rubric {DEFAULT_ID}" in out


@pytest.mark.slow
def test_a_dry_run_reads_a_lake_on_a_read_only_mount(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It writes nothing there, not even the lock (it had failed with EROFS on .lock)."""
    import errno
    import os

    from pipeline.storage import lake as lk

    lake = tmp_path / "lake"
    assert cli("run", str(tasks(tmp_path / "a.jsonl", "a1")), "--lake", str(lake))[0] == 0
    strict = tmp_path / "strict.toml"
    strict.write_text(STRICT_TOML)
    (lake / ".lock").unlink()
    before = {p: p.stat().st_mtime_ns for p in lake.rglob("*")}
    real_open, real_access = open, os.access

    def read_only(path: object, mode: str = "r", *args: object, **kwargs: object) -> object:
        if any(flag in mode for flag in "wax+"):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open(path, mode, *args, **kwargs)  # type: ignore[call-overload]

    def no_writing(path: object, mode: int, **kwargs: object) -> bool:
        return False if mode & os.W_OK else real_access(path, mode, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(lk, "open", read_only, raising=False)
    monkeypatch.setattr(os, "access", no_writing)
    code, out = cli("score", "--dry-run", "--json", "--rubric", str(strict), "--lake", str(lake))
    assert code == 0, out
    assert json.loads(out)["to"] == "strict"
    assert {p: p.stat().st_mtime_ns for p in lake.rglob("*")} == before


# --- One state per line ------------------------------------------------------------------

FUZZ_TOML = (
    'rubric_id = "fuzz"\n[task.fuzz]\ngate = "crash"\nweights = { crash = 0.5, triage = 0.5 }\n'
)


def fuzz_line(run_id: str) -> str:
    record = task_record(random.Random(run_id), run_id)
    record["env_type"] = "fuzz"
    record["grade"] = {
        "subscores": {"crash": 1.0, "triage": 0.5},
        "weights": {"crash": 0.5, "triage": 0.5},
    }
    return json.dumps(record)


def line_states(lake: Path) -> dict[tuple[str, int], list[str]]:
    """Every (source, line) the warehouse holds, with the states it is in."""
    con = connect_read_only(lake)
    try:
        rows = con.execute(
            "select source, line, 'landed' from task_runs "
            "union all select source, line, 'landed' from surface_runs "
            "union all select source, line, 'quarantined' from quarantine"
        ).fetchall()
    finally:
        con.close()
    states: dict[tuple[str, int], list[str]] = {}
    for source, line, state in rows:
        states.setdefault((source, line), []).append(state)
    return states


def assert_one_state_each(lake: Path) -> dict[tuple[str, int], list[str]]:
    states = line_states(lake)
    assert {k: v for k, v in states.items() if len(v) != 1} == {}
    return states


@pytest.mark.slow
def test_a_replayed_line_stays_landed_when_its_file_is_read_again(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    source = write(tmp_path / "night.jsonl", [fuzz_line("f1"), "garbage", fuzz_line("f2")])
    fuzz = tmp_path / "fuzz.toml"
    fuzz.write_text(FUZZ_TOML)
    assert cli("run", str(source), "--lake", str(lake))[0] == 0
    assert count(lake, "select count(*) from quarantine") == 3

    code, out = cli("replay-quarantine", "--lake", str(lake), "--rubric", str(fuzz))
    assert code == 0, out
    assert "rubric changed:" in out and "-> fuzz" in out
    assert assert_one_state_each(lake) == {
        (str(source), 1): ["landed"],
        (str(source), 2): ["quarantined"],
        (str(source), 3): ["landed"],
    }
    con = connect_read_only(lake)
    try:
        resolved = con.execute(
            "select line, run_id, outcome from quarantine_resolved order by line"
        ).fetchall()
    finally:
        con.close()
    assert resolved == [(1, "f1", "landed"), (3, "f2", "landed")]

    # A plain run of the same file (the lake's rubric is fuzz now): duplicates, one state each.
    code, out = cli("run", str(source), "--lake", str(lake))
    assert code == 0, out
    # Back to the defaults, where fuzz is unknown: the lines are seen, not quarantined again.
    code, out = cli("run", str(source), "--lake", str(lake), "--rubric", "default")
    assert code == 0, out
    assert "rubric changed: fuzz ->" in out
    states = assert_one_state_each(lake)
    assert states[(str(source), 1)] == ["landed"]
    assert count(lake, "select count(*) from quarantine") == 1
    # And a second replay has nothing new to try.
    code, out = cli("replay-quarantine", "--lake", str(lake))
    assert code == 0 and "replayed 1 of 1 quarantined line(s)" in out
    assert count(lake, "select count(*) from quarantine_resolved") == 2


@pytest.mark.slow
def test_a_landed_line_that_fails_under_a_later_rubric_is_not_quarantined(
    tmp_path: Path,
) -> None:
    lake = tmp_path / "lake"
    source = write(tmp_path / "a.jsonl", [fuzz_line("f1"), fuzz_line("f2")])
    fuzz = tmp_path / "fuzz.toml"
    fuzz.write_text(FUZZ_TOML)
    assert cli("run", str(source), "--lake", str(lake), "--rubric", str(fuzz))[0] == 0
    assert cli("ingest", str(source), "--lake", str(lake))[0] == 0
    assert cli("run", str(source), "--lake", str(lake), "--rubric", "default")[0] == 0
    assert count(lake, "select count(*) from quarantine") == 0
    assert count(lake, "select count(*) from task_runs") == 2
    assert_one_state_each(lake)


@pytest.mark.slow
def test_a_twin_line_resolved_as_a_duplicate_names_the_run(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    line = fuzz_line("twin")
    a, b = write(tmp_path / "a.jsonl", [line]), write(tmp_path / "b.jsonl", [line])
    assert cli("ingest", str(a), str(b), "--lake", str(lake))[0] == 0
    fuzz = tmp_path / "fuzz.toml"
    fuzz.write_text(FUZZ_TOML)
    assert cli("replay-quarantine", "--lake", str(lake), "--rubric", str(fuzz))[0] == 0
    con = connect_read_only(lake)
    try:
        got = con.execute(
            "select source, run_id, outcome from quarantine_resolved order by source"
        ).fetchall()
        left = con.execute("select count(*) from quarantine").fetchone()
    finally:
        con.close()
    assert got == [(str(a), "twin", "landed"), (str(b), "twin", "duplicate")]
    assert left == (0,)
    assert_one_state_each(lake)


# --- A file is what it is, not how it was spelled ----------------------------------------


@pytest.mark.slow
def test_the_same_bad_file_spelled_three_ways_is_quarantined_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "in" / "bad.jsonl", ["garbage", "{not json", fuzz_line("f1")])
    absolute = str(tmp_path / "in" / "bad.jsonl")
    for spelling in ("in/bad.jsonl", absolute, "./in/../in/bad.jsonl"):
        code, out = cli("run", spelling, "--lake", "lake")
        assert code == 0, out
    # And twice in one command.
    code, out = cli("ingest", "in/bad.jsonl", absolute, "in", "--lake", "lake")
    assert code == 0, out
    lake = tmp_path / "lake"
    con = connect_read_only(lake)
    try:
        got = con.execute("select source, line from quarantine order by line").fetchall()
    finally:
        con.close()
    assert got == [(absolute, 1), (absolute, 2), (absolute, 3)]
    assert_one_state_each(lake)


@pytest.mark.slow
def test_ingest_counts_a_file_named_twice_once(tmp_path: Path) -> None:
    from pipeline.jobs import commands as jobs

    lake = tmp_path / "lake"
    source = write(tmp_path / "in" / "a.jsonl", ["garbage", fuzz_line("f1")])
    report = jobs.ingest([source, tmp_path / "in" / "." / "a.jsonl", tmp_path / "in"], lake)
    assert (report.files, report.lines_read, report.quarantined) == (1, 2, 2)


LAKE_SKIPPED = "skipped unread (no INPUT yields the files of a lake)"


def quarantined_sources(lake: Path) -> list[str]:
    con = connect_read_only(lake)
    try:
        return [row[0] for row in con.execute("select source from quarantine").fetchall()]
    finally:
        con.close()


@pytest.mark.slow
def test_a_folder_given_as_input_yields_no_file_of_any_lake_inside_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    inside = data / "lake"
    # A lake with state, manifests and a rubric's score inputs: JSON files all.
    assert (
        cli("run", str(tasks(data / "in" / "a.jsonl", "a1", "a2")), "--lake", str(inside))[0] == 0
    )
    assert list(inside.rglob("*.json"))
    other = tmp_path / "other"
    code, out = cli("ingest", str(data), "--lake", str(other))
    assert code == 0, out
    assert f"note: {inside}: a lake (it holds _state/lake.json), {LAKE_SKIPPED}" in out
    assert out.splitlines()[3].split()[:3] == ["1", "2", "2"]  # files, lines, task runs
    assert quarantined_sources(other) == []
    # The lake written to is skipped too, without a note (a nightly would repeat it).
    code, out = cli("ingest", str(data), "--lake", str(inside))
    assert code == 0, out
    assert str(inside) not in out
    assert quarantined_sources(inside) == []
    # A folder that is a lake names no input: exit 2, saying why.
    code, out = cli("ingest", str(inside), "--lake", str(other))
    assert code == 2
    assert f"no input files (*.jsonl, *.jsonl.gz, *.json, *.eval) in {inside}; " in out
    assert f"{inside}: a lake (it holds _state/lake.json), {LAKE_SKIPPED}" in out
    # Nor does a folder or a file inside a lake: exit 2, naming the lake (each had been read,
    # its JSON quarantined as bad records into the lake written to).
    for given in (inside / "_state", inside / "task_runs", inside / "_state" / "lake.json"):
        code, out = cli("ingest", str(given), "--lake", str(other))
        assert code == 2, out
        said = f"{given}: inside the lake {inside} (it holds _state/lake.json), {LAKE_SKIPPED}"
        assert said in out, out
    assert quarantined_sources(other) == []
    # Beside a good INPUT too: exit 2 before any work, nothing landed (README said "as the
    # only input", as if a good input beside it would land).
    fresh = tmp_path / "fresh"
    code, out = cli(
        "ingest", str(data / "in" / "a.jsonl"), str(inside / "_state"), "--lake", str(fresh)
    )
    assert code == 2 and f"inside the lake {inside}" in out, out
    assert not fresh.exists()
    # A file kept beside a lake is read.
    code, out = cli("ingest", str(data / "in" / "a.jsonl"), "--lake", str(inside))
    assert code == 0 and out.splitlines()[3].split()[:3] == ["1", "2", "0"], out


@pytest.mark.slow
def test_a_nightly_inbox_holding_a_copied_lake_reads_the_inbox_files_only(
    tmp_path: Path,
) -> None:
    import shutil

    first = tmp_path / "first"
    assert cli("run", str(tasks(tmp_path / "a.jsonl", "a1")), "--lake", str(first))[0] == 0
    inbox = tmp_path / "inbox"
    tasks(inbox / "b.jsonl", "b1")
    shutil.copytree(first, inbox / "oldlake")
    lake = tmp_path / "lake"
    assert cli("ingest", str(tasks(tmp_path / "c.jsonl", "c1")), "--lake", str(lake))[0] == 0
    note = f"note: {inbox / 'oldlake'}: a lake (it holds _state/lake.json), {LAKE_SKIPPED}"
    for night in (1, 2):
        # The copied lake's state changes with it, so it had been new, and quarantined, nightly.
        (inbox / "oldlake" / "_state" / "ledger.json").write_text(json.dumps({str(night): {}}))
        code, out = cli("nightly", "--inbox", str(inbox), "--lake", str(lake))
        assert code == 0, out
        assert note in out
        assert quarantined_sources(lake) == []
    assert count(lake, "select count(*) from task_runs") == 2


# --- schema news in the run and nightly summaries ----------------------------------------


@pytest.mark.slow
def test_run_and_nightly_summaries_name_what_is_new(tmp_path: Path) -> None:
    from tests.strategies import surface_report

    lake = tmp_path / "lake"
    rng = random.Random(3)
    old_task = task_record(rng, "old")
    old_task["env_type"] = "exploit"
    # The baseline holds every top-level field the later records carry but the new ones.
    old_task.update({k: v for k, v in json.loads(fuzz_line("x")).items() if k not in old_task})
    old_report = surface_report(rng, "old-report")
    first = write(tmp_path / "a" / "a.jsonl", [json.dumps(old_task), json.dumps(old_report)])
    code, out = cli("run", str(first), "--lake", str(lake))
    assert code == 0, out
    # A lake's first batch is the baseline, news to nobody.
    assert not any(line.startswith("new ") for line in out.splitlines())

    new_task = json.loads(fuzz_line("f1"))
    new_task["grader_build"] = "2026.12"
    new_report = surface_report(rng, "new-report")
    new_report["carbon"] = {"grams": 3}
    new_report["findings"].append(
        {"probe": "future", "kind": "quantum_smell", "target": "tool_0", "measurement": {}}
    )
    second = write(tmp_path / "b" / "b.jsonl", [json.dumps(new_task), json.dumps(new_report)])
    fuzz = tmp_path / "fuzz.toml"
    fuzz.write_text(FUZZ_TOML)
    code, out = cli("run", str(second), "--lake", str(lake), "--rubric", str(fuzz))
    assert code == 0, out
    assert "new task record fields: grader_build" in out
    assert "new report fields: carbon" in out
    assert "new finding kinds: quantum_smell" in out
    assert "new components: crash, triage" in out
    assert "new env types: fuzz" in out
    # Read again, nothing is new.
    code, out = cli("run", str(second), "--lake", str(lake))
    assert code == 0 and not any(line.startswith("new ") for line in out.splitlines())

    inbox = tmp_path / "inbox"
    later = json.loads(fuzz_line("f2"))
    later["grade"]["subscores"]["style"] = 1.0
    later["grade"]["weights"]["style"] = 0.0
    later["queue"] = "night"
    write(inbox / "c.jsonl", [json.dumps(later)])
    code, out = cli("nightly", "--inbox", str(inbox), "--lake", str(lake))
    assert code == 0, out
    assert "new task record fields: queue" in out and "new components: style" in out, out
    summary = json.loads(next((lake / "_runs").glob("nightly-*.json")).read_text())
    assert summary["schema_news"] == {
        "task_fields": ["queue"],
        "surface_fields": [],
        "finding_kinds": [],
        "components": ["style"],
        "env_types": [],
    }


@pytest.mark.slow
def test_a_lake_without_a_list_of_names_gets_one_from_its_history(tmp_path: Path) -> None:
    from pipeline.jobs import commands as jobs

    lake = tmp_path / "lake"
    first = task_record(random.Random(1), "p1")
    jobs.ingest([write(tmp_path / "a" / "a.jsonl", [json.dumps(first)])], lake)
    (lake / "_state" / "schema.json").unlink()  # as a lake made before the list existed
    # The same fields as the history's record (a drawn one may name an optional field it did
    # not), and one more.
    later = {**first, "run_id": "p2", "queue": "night"}
    late = json.loads(fuzz_line("f1"))
    late["other"] = 1
    source = write(tmp_path / "b" / "b.jsonl", [json.dumps(later), json.dumps(late)])
    report = jobs.ingest([source], lake)
    assert (report.landed_task_runs, report.quarantined) == (1, 1)
    # Against the history: only the landed record's new field, not the quarantined one's.
    assert report.schema_news["task_fields"] == ["queue"]
    fields = set(json.loads((lake / "_state" / "schema.json").read_text())["task_fields"])
    assert {"grade", "queue"} <= fields and "other" not in fields


def test_task_fields_from_ingests_parse_equal_a_fresh_parse_of_the_records() -> None:
    from pipeline.ingest.batch import build_batch, landed_frames
    from pipeline.ingest.evolution import names_of
    from pipeline.sources.lines import LINE_SCHEMA
    from pipeline.sources.problems import lines_of_text

    records = [task_record(random.Random(i), f"r{i}") for i in range(30)]
    records[3]["extra"] = {"deep": {"er": 1}}
    records[7]["grade"]["new_grade_key"] = 1
    raw = [json.dumps(r) for r in records] + ["garbage", "[1, 2]"]
    lines = pl.DataFrame(
        {
            "source": ["s"] * len(raw),
            "line": list(range(1, len(raw) + 1)),
            "raw": raw,
            "not_utf8": [False] * len(raw),
            "file_problem": [None] * len(raw),
        },
        schema=LINE_SCHEMA,
    )
    batch = build_batch(lines_of_text(lines, ["s"]), ["exploit", "detect", "patch", "audit"], "b")
    frames = landed_frames(batch)
    assert frames["task_runs"].height > 0
    from_parse = names_of(frames, batch.task_keys)
    assert from_parse == names_of(frames)
    landed = {r["run_id"]: r for r in records if r["run_id"] in set(frames["task_runs"]["run_id"])}
    assert from_parse["task_fields"] == {k for r in landed.values() for k in r}
