"""The nightly job: idempotent, rescoring only on a rubric change, safe to kill at any point."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from pipeline.jobs import nightly
from pipeline.rubric import parse_rubric
from pipeline.storage import lake as lake_module
from pipeline.storage.lake import CRASH_AT_ENV, LakeBusyError, lake_lock
from pipeline.storage.rubrics import known_rubrics
from tests.clirunner import pipeline
from tests.crash import killed_at
from tests.paths import ROOT

SAMPLE = ROOT / "data" / "sample"
DEFAULT = parse_rubric({})
STRICT = parse_rubric({"rubric_id": "strict", "task": {"failure_threshold": 0.5}})

# What a person reads from the warehouse; batch ids and file provenance of the
# scores differ between two runs that did the same work, so they are left out.
STATE_QUERIES = {
    "task_runs": "select * exclude (batch_id) from task_runs",
    "task_components": "select * from task_components",
    "run_metadata": "select * from run_metadata",
    "quarantine": "select * exclude (batch_id) from quarantine",
    "surface_runs": "select * exclude (batch_id) from surface_runs",
    "surface_findings": "select * exclude (batch_id) from surface_findings",
    "by_agent": "select * from by_agent",
    "by_phase": "select * from by_phase",
}


def warehouse_state(lake: Path) -> dict[str, list[tuple[object, ...]]]:
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    try:
        return {
            name: sorted(con.execute(sql).fetchall(), key=repr)
            for name, sql in STATE_QUERIES.items()
        }
    finally:
        con.close()


def small_inbox(tmp_path: Path) -> Path:
    """Part of the sample: one gzipped file of task grades and two surface reports (the nightly
    job's cost is mostly per run, not per line)."""
    inbox = tmp_path / "inbox"
    (inbox / "tasks").mkdir(parents=True)
    shutil.copy(SAMPLE / "tasks" / "cinder.jsonl.gz", inbox / "tasks")
    for report in ("weather-kit-1.0.0", "weather-kit-1.1.0"):
        shutil.copytree(SAMPLE / "surface" / report, inbox / "surface" / report)
    return inbox


@pytest.mark.slow
def test_second_run_does_nothing_and_says_so(tmp_path: Path) -> None:
    inbox, lake = small_inbox(tmp_path), tmp_path / "lake"
    first = nightly.nightly(inbox, lake, DEFAULT)
    assert first.files_new == first.files_in_inbox > 0
    assert first.landed_task_runs > 0 and first.full_rescore
    before = warehouse_state(lake)
    second = nightly.nightly(inbox, lake, DEFAULT)
    assert second.nothing_to_do
    assert (second.files_new, second.lines_read, second.runs_scored) == (0, 0, 0)
    assert warehouse_state(lake) == before
    summaries = sorted((lake / "_runs").glob("nightly-*.json"))
    assert len(summaries) == 2
    document = json.loads(summaries[0].read_text())
    assert document["rubric_after"] == DEFAULT.rubric_id
    assert document["summary_file"] == str(summaries[0]) == first.summary_file
    stages = {"scan", "ingest", "score", "warehouse", "score: plan", "score: checks"}
    assert set(document["seconds"]) >= stages | {"score: writes"}
    # The score's parts are inside its whole.
    parts = sum(document["seconds"][f"score: {s}"] for s in ("plan", "checks", "writes"))
    assert 0 < parts <= document["seconds"]["score"] + 0.003


@pytest.mark.slow
def test_a_nightly_with_nothing_new_builds_a_warehouse_another_version_built_again(
    tmp_path: Path,
) -> None:
    # After an upgrade the inbox may hold nothing new; the night still leaves a warehouse of
    # this version's views, so its closing check holds.
    inbox, lake = small_inbox(tmp_path), tmp_path / "lake"
    nightly.nightly(inbox, lake, DEFAULT)
    before = warehouse_state(lake)
    with duckdb.connect(str(lake / "warehouse.duckdb")) as con:
        con.execute("update _meta set value = 'an older build' where key = 'fingerprint'")
    again = nightly.nightly(inbox, lake, DEFAULT)
    assert again.nothing_to_do
    assert again.check_ok, again.check_violations
    assert warehouse_state(lake) == before
    # It says it did that much; a night with nothing at all to do says nothing of it.
    assert "the warehouse was behind the lake and is brought up to date (built again from " in (
        " ".join(again.notes)
    )
    assert not nightly.nightly(inbox, lake, DEFAULT).notes


@pytest.mark.slow
def test_the_closing_checks_notes_are_in_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The night's closing check can end with notes as well as violations (a view stopped at
    its time, one past the memory limit): the summary, printed and written, carries them (it
    had kept the verdict and the violations, and dropped the notes)."""
    from pipeline.jobs import check as checker

    inbox, lake = small_inbox(tmp_path), tmp_path / "lake"
    nightly.nightly(inbox, lake, DEFAULT)
    # An analyst's view that runs for ever, kept by the warehouse's refresh.
    with duckdb.connect(str(lake / "warehouse.duckdb")) as con:
        con.execute("create view endless as select sum(range) as total from range(1000000000000)")
    monkeypatch.setattr(checker, "VIEW_SECONDS", 0.5)
    note = (
        "warehouse: view endless was stopped after 0.5 s, not run to its end: a row it fails "
        "on would not be seen (check gives each view that long)"
    )
    again = nightly.nightly(inbox, lake, DEFAULT)
    assert (again.check_ok, again.check_notes) == (True, [note])
    written = json.loads(Path(str(again.summary_file)).read_text("utf-8"))
    assert written["check_notes"] == [note]
    printed = pipeline("nightly", "--inbox", str(inbox), "--lake", str(lake))
    assert printed.returncode == 0, printed.stderr
    assert f"check note: {note}" in " ".join(printed.stdout.split())


@pytest.mark.slow
def test_rubric_change_rescores_everything_and_only_then(tmp_path: Path) -> None:
    inbox, lake = small_inbox(tmp_path), tmp_path / "lake"
    first = nightly.nightly(inbox, lake, DEFAULT)
    extra = inbox / "tasks" / "later.jsonl"
    line = json.loads((SAMPLE / "tasks" / "atlas.jsonl").read_text().splitlines()[0])
    line["run_id"] = "late-arrival"
    extra.write_text(json.dumps(line) + "\n")
    incremental = nightly.nightly(inbox, lake, DEFAULT)
    assert not incremental.full_rescore
    assert incremental.runs_scored == 1  # only the new part
    changed = nightly.nightly(inbox, lake, STRICT)
    assert changed.full_rescore
    assert changed.rubric_before == DEFAULT.rubric_id and changed.rubric_after == "strict"
    assert changed.runs_scored == first.runs_scored + 1
    assert nightly.nightly(inbox, lake, STRICT).nothing_to_do
    # Both rubrics' scores stay in the lake; the warehouse shows the current one.
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    assert con.execute("select distinct rubric_id from task_runs").fetchall() == [("strict",)]
    con.close()
    assert set(known_rubrics(lake)) == {DEFAULT.rubric_id, "strict"}


@pytest.mark.slow
def test_a_file_appended_to_after_ingest_is_picked_up(tmp_path: Path) -> None:
    inbox, lake = tmp_path / "inbox", tmp_path / "lake"
    inbox.mkdir()
    lines = (SAMPLE / "tasks" / "atlas.jsonl").read_text().splitlines()
    grown = inbox / "grows.jsonl"
    grown.write_text("\n".join(lines[:10]) + "\n")
    assert nightly.nightly(inbox, lake, DEFAULT).landed_task_runs == 10
    grown.write_text("\n".join(lines[:15]) + "\n")
    again = nightly.nightly(inbox, lake, DEFAULT)
    assert again.files_new == 1
    assert (again.landed_task_runs, again.skipped_duplicates) == (5, 10)


def test_concurrent_start_is_refused(tmp_path: Path) -> None:
    inbox, lake = small_inbox(tmp_path), tmp_path / "lake"
    with lake_lock(lake):
        # flock(2) locks an open file, not a process: the command's own open of the lock file
        # is refused while this one holds it, as a second process's is (no start-up to pay).
        done = pipeline("nightly", "--inbox", inbox, "--lake", lake)
        with pytest.raises(LakeBusyError):
            nightly.nightly(inbox, lake, DEFAULT)
    assert done.returncode == 1
    assert "in use" in done.stderr


def _killed_nightly(inbox: Path, lake: Path, crash_at: int) -> int:
    """``python -m pipeline nightly`` in a real process that kills itself at write ``crash_at``."""
    # The nightly command works on a lake that exists (run or ingest make one).
    with lake_lock(lake):
        pass
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "nightly", "--inbox", str(inbox), "--lake", str(lake)],
        cwd=ROOT,
        env={**os.environ, CRASH_AT_ENV: str(crash_at)},
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode


def _nightly_in_process(inbox: Path, lake: Path) -> None:
    with lake_lock(lake):
        pass
    done = pipeline("nightly", "--inbox", inbox, "--lake", lake)
    assert done.returncode == 0, done.stdout + done.stderr


def _crash_sites(
    inbox: Path, lake: Path, monkeypatch: pytest.MonkeyPatch
) -> list[tuple[str, list[int]]]:
    """Run the nightly job whole, in-process, and name its crash points in order: one site per
    stretch of staged writes ("write") or journal moves ("move"), with its points."""
    callers: list[str] = []
    monkeypatch.setattr(
        lake_module, "_crash_point", lambda: callers.append(sys._getframe(1).f_code.co_name)
    )
    _nightly_in_process(inbox, lake)
    monkeypatch.undo()
    kinds = ["move" if caller == "_apply" else "write" for caller in callers]
    stretches: list[tuple[str, list[int]]] = []
    for point, kind in enumerate(kinds, start=1):
        if stretches and stretches[-1][0] == kind:
            stretches[-1][1].append(point)
        else:
            stretches.append((kind, [point]))
    return stretches


@pytest.mark.slow
def test_killed_at_seeded_points_then_rerun_gives_the_uninterrupted_warehouse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inbox = small_inbox(tmp_path)
    reference = tmp_path / "reference"
    sites = _crash_sites(inbox, reference, monkeypatch)
    expected = warehouse_state(reference)
    # The ingest and its scoring stage their files in one transaction, write its journal,
    # then move them; the run record comes last.
    assert [kind for kind, _ in sites] == ["write", "move", "write"]
    (_, staging), (_, moves), _run_record = sites
    # Killed mid-staging, the job leaves work to discard: at its first write (the ingest's)
    # and its last (the scores'), so no kill between landing and scoring leaves a run
    # without a score; mid-move, a journal to finish. Killed at the run record, written
    # last, the lake is already the reference. The first kill is a real process's (the
    # earliest point, so the least work before it), the others are in-process
    # (tests/crash.py), a process start-up cheaper.
    for (kind, point), real in (
        (("write", staging[0]), True),
        (("write", staging[-1]), False),
        (("move", moves[len(moves) // 2]), False),
    ):
        lake = tmp_path / f"killed-{point}"
        if real:
            assert _killed_nightly(inbox, lake, point) == -9, f"crash point {point}"
        else:
            with killed_at(lake, point) as kill:
                _nightly_in_process(inbox, lake)
            assert kill.fired, f"crash point {point}"
        journals = list((lake / "_staging").glob("*/COMMIT.json"))
        assert bool(journals) == (kind == "move"), f"crash point {point} is not a {kind}"
        if kind == "write":
            # Nothing landed: no run is left without its score.
            assert not lake_module.parquet_files(lake_module.table_dir(lake, "task_runs"))
        # check says which: nothing committed, or a commit to complete (which its other
        # lines, a half-moved lake's, follow from)
        checked = pipeline("check", "--lake", lake)
        assert checked.returncode == 1
        said = " ".join(checked.stdout.split())
        if kind == "write":
            assert "never committed (the lake is as it was)" in said, said
        else:
            assert "a commit was cut short midway" in said, said
        _nightly_in_process(inbox, lake)
        assert warehouse_state(lake) == expected, f"crash point {point}"
        assert not list(lake.rglob(".*.tmp"))
        assert not (lake / "_staging").exists() or not any((lake / "_staging").iterdir())


@pytest.mark.slow
def test_a_file_gone_between_the_scan_and_its_reading_is_read_by_a_later_night(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file removed (or locked) after the night hashed it is quarantined whole with why,
    the rest lands, and the ledger does not hold it: once it is back, the next night reads
    it and its runs land (the ledger had recorded it as read, and no night read it again)."""
    inbox, lake = small_inbox(tmp_path), tmp_path / "lake"
    late = inbox / "late.jsonl"
    shutil.copy(SAMPLE / "tasks" / "atlas.jsonl", late)
    kept = tmp_path / "kept.jsonl"
    hashed = nightly.file_digest

    def hash_then_lose(path: Path) -> str:
        digest = hashed(path)
        if path.name == late.name:
            late.rename(kept)  # gone before the ingest opens it
        return digest

    monkeypatch.setattr(nightly, "file_digest", hash_then_lose)
    first = nightly.nightly(inbox, lake, DEFAULT)
    monkeypatch.setattr(nightly, "file_digest", hashed)
    assert first.landed_task_runs > 0
    assert any(f"{late.resolve()}: could not read the file" in note for note in first.notes)
    assert str(late) not in {entry["path"] for entry in nightly.read_ledger(lake).values()}
    kept.rename(late)
    second = nightly.nightly(inbox, lake, DEFAULT)
    assert (second.files_new, second.landed_task_runs) == (1, 160)
    assert second.check_ok, second.check_violations
    # Read since, the file's "could not read" row is resolved: the quarantine view no longer
    # says so beside its 160 landed runs.
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    try:
        unread = "select count(*) from quarantine where source = $1 and line = 0"
        assert con.execute(unread, [str(late.resolve())]).fetchall() == [(0,)]
        resolved = "select outcome from quarantine_resolved where source = $1 and line = 0"
        assert con.execute(resolved, [str(late.resolve())]).fetchall() == [("superseded",)]
    finally:
        con.close()


@pytest.mark.slow
def test_a_file_that_cannot_be_hashed_does_not_stop_the_night(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One inbox file the night cannot hash (no permission, say) goes to the ingest like any
    new file, without a ledger entry, and every other file lands (the night had stopped)."""
    inbox, lake = small_inbox(tmp_path), tmp_path / "lake"
    shutil.copy(SAMPLE / "tasks" / "atlas.jsonl", inbox / "locked.jsonl")
    hashed = nightly.file_digest

    def refuse(path: Path) -> str:
        if path.name == "locked.jsonl":
            raise PermissionError(13, "Permission denied", str(path))
        return hashed(path)

    monkeypatch.setattr(nightly, "file_digest", refuse)
    summary = nightly.nightly(inbox, lake, DEFAULT)
    assert summary.files_new == summary.files_in_inbox
    assert summary.landed_task_runs > 160  # the locked file's 160 runs and cinder's
    paths = {entry["path"] for entry in nightly.read_ledger(lake).values()}
    assert str(inbox / "locked.jsonl") not in paths and paths


@pytest.mark.slow
def test_a_part_removed_as_corrupt_is_read_again_the_same_night(tmp_path: Path) -> None:
    """A rubric change hashes every part before the night lands and scores in one
    transaction: a corrupt part is removed with its inbox files taken out of the ledger,
    and the files count as new that same night (the ledger the ingest writes back is read
    after the repair, so it does not put them back)."""
    inbox, lake = tmp_path / "inbox", tmp_path / "lake"
    (inbox / "tasks").mkdir(parents=True)
    shutil.copy(SAMPLE / "tasks" / "cinder.jsonl.gz", inbox / "tasks")
    first = nightly.nightly(inbox, lake, DEFAULT)
    # bit rot in a child table: same size, same mtime
    (part,) = lake_module.parquet_files(lake_module.table_dir(lake, "task_components"))
    stat = part.stat()
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0xFF
    part.write_bytes(bytes(data))
    os.utime(part, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    line = json.loads((SAMPLE / "tasks" / "atlas.jsonl").read_text().splitlines()[0])
    (inbox / "tasks" / "later.jsonl").write_text(json.dumps({**line, "run_id": "late"}) + "\n")
    strict = parse_rubric({"rubric_id": "strict", "task": {"failure_threshold": 0.5}})
    second = nightly.nightly(inbox, lake, strict)
    assert any("removed whole" in note for note in second.notes), second.notes
    assert second.files_new == 2  # the later file, and the removed part's file again
    assert second.check_ok, second.check_violations
    with duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True) as con:
        assert con.execute("select count(*) from task_runs").fetchone() == (
            first.landed_task_runs + 1,
        )
