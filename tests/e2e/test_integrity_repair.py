"""Issue 13, the lake's side: corruption is found and repaired, nothing lost on the way.

Split from test_integrity.py (hostile input lines) so that `make test`'s loadfile
distribution can put the two halves on different workers.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

from pipeline.jobs import commands as jobs
from pipeline.jobs.prepare import INGEST_READS, prepare
from pipeline.rubric import RubricError, parse_rubric
from tests.e2e.test_ingest import quarantine, record, with_grade, write_jsonl
from tests.e2e.test_integrity import REPORT, ingest_lines, invoke, reasons_by_line, replaced
from tests.paths import SAMPLE

# --- corruption is detected -------------------------------------------------------------------

SAMPLE_TASKS = SAMPLE / "tasks"


def _task_runs_count(lake: Path) -> int:
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    try:
        (runs,) = con.execute("select count(*) from task_runs").fetchone() or (0,)
    finally:
        con.close()
    return int(runs)


def _flip(path: Path, position: int, *, keep_mtime: bool) -> None:
    """One byte of ``path`` inverted; with ``keep_mtime`` the file looks untouched to stat."""
    before = path.stat()
    data = bytearray(path.read_bytes())
    data[position] ^= 0xFF
    path.write_bytes(bytes(data))
    if keep_mtime:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.fixture(scope="module")
def sample_runs(sample_lake: Path) -> int:
    """The task runs of the shared sample lake, which tests copy before they change it."""
    return _task_runs_count(sample_lake)


def _landed_file(lake: Path, table: str) -> Path:
    return next(p for p in sorted((lake / table).glob("*.parquet")) if p.stem != "empty")


FLIPS = random.Random(13)


def _flip_a_part_then(lake: Path, *command: str) -> None:
    """A byte in the middle of a landed task_runs part flipped (mtime kept), then
    ``command`` on the lake: it succeeds, naming the part's bad hash and removing it whole."""
    target = _landed_file(lake, "task_runs")
    _flip(target, target.stat().st_size // 2, keep_mtime=True)
    code, output = invoke(*command, "--lake", str(lake))
    assert code == 0, output
    assert "does not match its manifest's SHA-256" in output
    assert "removed whole" in output


@pytest.mark.parametrize("table", ["task_runs", "task_components", "run_metadata"])
@pytest.mark.slow
def test_every_single_byte_flip_of_a_landed_part_is_found_by_check(
    sample_lake: Path, tmp_path: Path, table: str
) -> None:
    original = sample_lake
    size = _landed_file(original, table).stat().st_size
    for position in sorted(FLIPS.sample(range(size), 6)):
        lake = tmp_path / f"lake-{position}"
        shutil.copytree(original, lake)  # copy2: mtimes kept, as a flip on disk keeps them
        target = _landed_file(lake, table)
        _flip(target, position, keep_mtime=True)
        code, output = invoke("check", "--lake", str(lake), "--json")
        assert code == 1, (position, output)
        violations = json.loads(output)["violations"]
        assert any(str(target) in v and "SHA-256" in v for v in violations), violations
        shutil.rmtree(lake)


@pytest.mark.slow
def test_a_corrupt_part_is_removed_before_scoring_reads_it_and_lands_again(
    sample_lake_copy: Path, sample_runs: int
) -> None:
    lake, runs = sample_lake_copy, sample_runs
    target = _landed_file(lake, "task_runs")
    lost = pl.read_parquet(target)
    sources = sorted(set(lost["source"]))
    _flip(target, target.stat().st_size // 2, keep_mtime=True)
    code, output = invoke("score", "--lake", str(lake))
    assert code == 0, output
    # The note says what was lost and what lands it again: its input files, by name (no
    # nightly ledger holds them, so nothing reads them again by itself).
    (note,) = [line for line in output.splitlines() if "removed whole" in line]
    assert f"removed whole ({lost.height} task_runs" in note
    assert "ingest again what it came from" in note
    assert all(source in note for source in sources), (sources, note)
    assert _task_runs_count(lake) == runs - lost.height
    code, output = invoke("run", str(SAMPLE_TASKS), "--lake", str(lake))
    assert code == 0, output
    assert _task_runs_count(lake) == runs
    assert invoke("check", "--lake", str(lake))[0] == 0


@pytest.mark.slow
def test_a_flip_with_the_mtime_kept_is_found_when_run_reads_the_part_to_dedupe(
    sample_lake_copy: Path, sample_runs: int
) -> None:
    lake, runs = sample_lake_copy, sample_runs
    _flip_a_part_then(lake, "run", str(SAMPLE_TASKS))
    # Its sources were read again in the same run: nothing lost, nothing twice.
    assert _task_runs_count(lake) == runs
    assert invoke("check", "--lake", str(lake))[0] == 0


@pytest.mark.slow
@pytest.mark.parametrize("content", [b"", b"{not json", b'{"moves": 3}'])
def test_a_broken_commit_journal_is_named_and_the_lake_kept_as_last_committed(
    sample_lake_copy: Path, sample_runs: int, content: bytes
) -> None:
    lake, runs = sample_lake_copy, sample_runs
    stage = lake / "_staging" / "20990101T000000-dead"
    stage.mkdir(parents=True)
    staged = stage / "000000.parquet"
    pl.DataFrame({"x": [1]}).write_parquet(staged)
    (stage / "COMMIT.json").write_bytes(content)
    code, output = invoke("run", str(SAMPLE_TASKS), "--lake", str(lake))
    assert code == 0, output
    note = next(line for line in output.splitlines() if "COMMIT.json" in line)
    assert "not a valid commit journal" in note and "discarded" in note
    assert not stage.exists()
    assert _task_runs_count(lake) == runs
    assert invoke("check", "--lake", str(lake))[0] == 0


def small_inbox(inbox: Path) -> None:
    """Two nights' files of a few runs each: what the nightly tests below need of an inbox (the
    sample's 430 runs only made each command slower)."""
    inbox.mkdir()
    for night in range(2):
        write_jsonl(
            inbox / f"night-{night}.jsonl", [json.dumps(record(f"n{night}-{i}")) for i in range(4)]
        )


def _after_a_nightly(tmp_path: Path) -> tuple[Path, Path, int]:
    """The inbox and lake after a nightly of small_inbox, and the task runs it landed."""
    inbox, lake = tmp_path / "inbox", tmp_path / "lake"
    make_lake(tmp_path, lake)
    small_inbox(inbox)
    assert invoke("nightly", "--inbox", str(inbox), "--lake", str(lake))[0] == 0
    return inbox, lake, _task_runs_count(lake)


@pytest.mark.slow
def test_nightly_relands_a_part_changed_on_disk(tmp_path: Path) -> None:
    inbox, lake, runs = _after_a_nightly(tmp_path)
    target = _landed_file(lake, "task_components")
    _flip(target, 100, keep_mtime=False)
    code, output = invoke("nightly", "--inbox", str(inbox), "--lake", str(lake))
    assert code == 0, output
    assert "does not match its manifest's SHA-256" in output
    assert _task_runs_count(lake) == runs
    assert invoke("check", "--lake", str(lake))[0] == 0


# --- broken state names itself ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("relative", "content", "named"),
    [
        ("_state/current_rubric.json", b"", "restored as rubric"),
        ("_state/current_rubric.json", b'{"rubric_id": 1}', "restored as rubric"),
        ("_state/rubrics.json", b"\xff\xfe", "rebuilt with the current rubric"),
        # Valid JSON of another shape: each had stopped every command, or made false news.
        ("_state/rubrics.json", b"null", "rebuilt with the current rubric"),
        ("_state/rubrics.json", b"{}", "does not hold the current rubric"),
        ("_state/ledger.json", b"null", "reset to empty"),
        ("_state/schema.json", b"{}", "removed: the next ingest lists the names"),
        ("manifest", b"", "rebuilt from its"),
    ],
)
@pytest.mark.slow
def test_a_broken_state_file_is_named_and_repaired(
    sample_lake_copy: Path, sample_runs: int, relative: str, content: bytes, named: str
) -> None:
    lake, runs = sample_lake_copy, sample_runs
    path = (
        sorted((lake / "_parts").glob("*.json"))[0] if relative == "manifest" else lake / relative
    )
    path.write_bytes(content)
    code, output = invoke("check", "--lake", str(lake))
    assert code == 1
    # check names the file, or (for JSON of the wrong shape) the current rubric it holds.
    assert (
        str(path) in output
        or "current rubric does not parse" in output
        or "lineage holds other content" in output
    ), output
    code, output = invoke("score", "--lake", str(lake))
    assert code == 0, output
    note = next(line for line in output.splitlines() if str(path) in line)
    assert named in note
    assert _task_runs_count(lake) == runs
    assert invoke("check", "--lake", str(lake))[0] == 0, invoke("check", "--lake", str(lake))


@pytest.mark.slow
def test_a_deleted_current_rubric_comes_back_as_the_analysts_not_the_default(
    sample_lake_copy: Path, tmp_path: Path
) -> None:
    """The lake remembers its rubric: a nightly after the file is deleted must not undo an
    analyst's change by starting over with the defaults (it did, rescoring everything)."""
    lake = sample_lake_copy
    rubric = tmp_path / "strict.toml"
    rubric.write_text('rubric_id = "strict"\n[task]\nfailure_threshold = 0.5\n')
    assert invoke("score", "--rubric", str(rubric), "--lake", str(lake))[0] == 0
    (lake / "_state" / "current_rubric.json").unlink()
    code, output = invoke("score", "--lake", str(lake))
    assert code == 0, output
    assert "current_rubric.json is missing; restored as rubric strict" in output
    assert "rubric changed" not in output
    document = json.loads((lake / "_state" / "current_rubric.json").read_text())
    assert document["rubric_id"] == "strict"
    assert invoke("check", "--lake", str(lake))[0] == 0


@pytest.mark.slow
def test_a_current_rubric_nothing_else_names_is_removed_and_everything_rescored(
    sample_lake_copy: Path, sample_runs: int
) -> None:
    lake, runs = sample_lake_copy, sample_runs
    (lake / "_state" / "current_rubric.json").write_bytes(b"")
    (lake / "warehouse.duckdb").unlink()
    code, output = invoke("score", "--lake", str(lake))
    assert code == 0, output
    assert "current_rubric.json is not valid JSON" in output
    assert "rescores every part" in output
    assert _task_runs_count(lake) == runs


@pytest.mark.slow
def test_a_missing_current_rubric_lineage_cannot_restore_is_said_left_missing(
    sample_lake_copy: Path, sample_runs: int
) -> None:
    # Lineage gone too: the warehouse names its rubric, whose content nothing holds now.
    lake, runs = sample_lake_copy, sample_runs
    (lake / "_state" / "current_rubric.json").unlink()
    (lake / "_state" / "rubrics.json").unlink()
    code, output = invoke("score", "--lake", str(lake))
    assert code == 0, output
    note = next(line for line in output.splitlines() if "current_rubric.json" in line)
    # Not "is missing; removed (neither the warehouse nor lineage names it)".
    assert "is missing; left missing (lineage does not hold rubric sha256:" in note
    assert "the warehouse's)" in note and "removed" not in note
    assert _task_runs_count(lake) == runs
    assert invoke("check", "--lake", str(lake))[0] == 0


@pytest.mark.slow
def test_a_broken_ledger_is_named_and_reset_and_nightly_loses_nothing(tmp_path: Path) -> None:
    inbox, lake, runs = _after_a_nightly(tmp_path)
    ledger = lake / "_state" / "ledger.json"
    ledger.write_bytes(b"")
    code, output = invoke("nightly", "--inbox", str(inbox), "--lake", str(lake))
    assert code == 0, output
    assert f"{ledger} is not valid JSON" in output
    assert "reset to empty" in output
    assert _task_runs_count(lake) == runs
    assert set(json.loads(ledger.read_text())) == {
        hashlib.sha256(p.read_bytes()).hexdigest() for p in inbox.iterdir()
    }


# --- a file read while still being written ---------------------------------------------------


@pytest.mark.slow
def test_a_cut_last_line_is_flagged_then_replaced_when_the_file_is_read_whole(
    tmp_path: Path,
) -> None:
    inbox, lake = tmp_path / "inbox", tmp_path / "lake"
    make_lake(tmp_path, lake)
    inbox.mkdir()
    whole = [json.dumps(record(f"r{i}")) for i in range(3)]
    growing = inbox / "day.jsonl"
    growing.write_text(whole[0] + "\n" + whole[1] + "\n" + whole[2][:40])
    code, output = invoke("nightly", "--inbox", str(inbox), "--lake", str(lake))
    assert code == 0, output
    assert f"{growing}: the last line has no newline" in " ".join(output.split())
    assert reasons_by_line(lake) == {3: "not valid JSON (the line does not parse)"}

    growing.write_text("".join(line + "\n" for line in whole))
    code, output = invoke("nightly", "--inbox", str(inbox), "--lake", str(lake))
    assert code == 0, output
    assert "1 earlier quarantine row(s) resolved" in " ".join(output.split())
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    try:
        landed = con.execute("select run_id from task_runs order by run_id").fetchall()
        held = con.execute("select count(*) from quarantine").fetchone()
    finally:
        con.close()
    assert landed == [("r0",), ("r1",), ("r2",)]
    assert held == (0,)
    assert invoke("check", "--lake", str(lake))[0] == 0


@pytest.mark.slow
def test_a_line_read_again_still_bad_keeps_one_quarantine_row(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    source = write_jsonl(tmp_path / "a.jsonl", ['{"run_id": "x", "cut'])
    jobs.ingest([source], lake)
    write_jsonl(source, [json.dumps(record("x", agent=None))])
    report = jobs.ingest([source], lake)
    assert report.quarantined == 1
    from pipeline.jobs.replay import unresolved

    rows = unresolved(lake)  # the older row is superseded by the newer reading of its place
    assert rows.height == 1
    assert "missing required field `agent`" in rows["reason"][0]


# --- reasons that name the actual problem -----------------------------------------------------


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            '{"server": {"name": "s", "version": "1"}, "generated_at": "2026-01-01T00:00:00Z"}',
            "findings is missing: expected a list",
        ),
        (
            '{"findings": [], "generated_at": "2026-01-01T00:00:00Z"}',
            "server is missing: expected an object",
        ),
    ],
)
@pytest.mark.slow
def test_half_a_report_is_judged_as_a_report(tmp_path: Path, line: str, reason: str) -> None:
    _, lake = ingest_lines(tmp_path, [line])
    rows = quarantine(lake)
    assert rows["record_kind"].to_list() == ["surface"]
    assert rows["reason"][0] == reason


@pytest.mark.slow
def test_a_part_key_named_twice_is_named_once_spelled_right(tmp_path: Path) -> None:
    line = replaced("r1", '"pov_quality": 0.5', '"pov_quality": 0.5, "pov_quality": 0.4')
    _, lake = ingest_lines(tmp_path, [line])
    assert "grade.subscores has the key pov_quality more than once" in reasons_by_line(lake)[1]


@pytest.mark.slow
def test_a_copied_lake_is_hashed_once_then_trusted_by_its_new_mtimes(
    sample_lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = sample_lake
    lake = tmp_path / "lake"
    shutil.copytree(original, lake, copy_function=shutil.copy)  # new mtimes
    from pipeline.storage import lake as lk
    from pipeline.storage import parts

    hashed: list[Path] = []
    real = parts.file_facts

    def counting(path: Path) -> dict[str, Any]:
        hashed.append(path)
        return real(path)

    monkeypatch.setattr(parts, "file_facts", counting)
    with lk.lake_lock(lake):
        assert prepare(lake) == []
    landed = [p for p in lake.glob("*/*.parquet") if p.stem != "empty"]
    assert sorted(hashed) == sorted(landed)
    hashed.clear()
    with lk.lake_lock(lake):
        assert prepare(lake) == []
    # Then only what ingest reads to dedupe is hashed again (a flip keeps the mtime).
    assert sorted(hashed) == sorted(p for p in landed if p.parent.name in INGEST_READS)
    assert any(p.parent.name not in INGEST_READS for p in landed)


def test_an_ungated_env_may_be_given_a_gate() -> None:
    rubric = parse_rubric({"task": {"audit": {"gate": "audit"}}})
    assert rubric.task.envs["audit"].gate == "audit"
    with pytest.raises(RubricError, match=r"task\.audit\.gate"):
        parse_rubric({"task": {"audit": {"gate": "recall"}}})


@pytest.mark.parametrize(
    ("finding", "reason"),
    [
        (
            '{"probe": "p", "kind": "duplicate", "kind": "distraction", "target": ["a"]}',
            "findings[0] names the key kind more than once",
        ),
        (
            '{"probe": "p", "kind": "distraction", "target": ["a"], '
            '"measurement": {"fire_rate": 0.1, "fire_rate": 0.9}}',
            "findings[0].measurement names the key fire_rate more than once",
        ),
    ],
)
@pytest.mark.slow
def test_a_finding_naming_a_key_twice_is_quarantined(
    tmp_path: Path, finding: str, reason: str
) -> None:
    line = REPORT.replace('"findings": []', f'"findings": [{finding}]')
    report, lake = ingest_lines(tmp_path, [line])
    assert report.quarantined == 1
    assert reason in reasons_by_line(lake)[1]


def make_lake(tmp_path: Path, lake: Path) -> None:
    """nightly works on a lake that run or ingest made (CONTRACT section 7): an empty one."""
    blank = tmp_path / "blank" / "blank.jsonl"
    blank.parent.mkdir(parents=True, exist_ok=True)
    blank.write_text("\n")
    assert invoke("run", str(blank), "--lake", str(lake))[0] == 0


# --- issue 13's acceptance walk, end to end --------------------------------------------------


def _warehouse_rows(lake: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.mark.slow
def test_issue_13_acceptance_walk_in_one_lake(tmp_path: Path) -> None:
    import gzip

    inbox, lake, outside = tmp_path / "inbox", tmp_path / "lake", tmp_path / "outside"
    inbox.mkdir()
    outside.mkdir()
    make_lake(tmp_path, lake)
    # A concatenated gzip (3 + 4 records), as `cat a.gz b.gz` makes.
    first = "".join(json.dumps(record(f"g{i}")) + "\n" for i in range(3)).encode()
    second = "".join(json.dumps(record(f"g{i}")) + "\n" for i in range(3, 7)).encode()
    (inbox / "day.jsonl.gz").write_bytes(gzip.compress(first) + gzip.compress(second))
    # A link to a file outside the inbox.
    secret = outside / "secret.jsonl"
    secret.write_text("root:SECRET-TEXT\n")
    (inbox / "link.jsonl").symlink_to(secret)
    # Penalties that overflow to infinity, lowercase nan in metadata, `findings` twice.
    overflow = with_grade("inf", penalties={"a": 1e308, "b": 1e308}, allow_unbounded=True)
    nan = replaced("nan", '"reason": "stack matched"', '"reason": nan')
    findings = REPORT.replace('"findings": []', '"findings": [], "findings": [{"kind": "x"}]')
    write_jsonl(inbox / "hostile.jsonl", [json.dumps(overflow), nan, findings])

    code, output = invoke("nightly", "--inbox", str(inbox), "--lake", str(lake))
    assert code == 0, output
    assert f"{inbox / 'link.jsonl'}: a symbolic link" in output
    assert _task_runs_count(lake) == 7  # every record of both gzip members
    reasons = dict(
        _warehouse_rows(lake, "select line, reason from quarantine where source like '%hostile%'")
    )
    assert reasons[1].startswith("grade.penalties add up to inf")
    assert reasons[2] == "non-finite number nan at $.grade.metadata.defect_matching.reason"
    assert "the report names the key findings more than once" in reasons[3]
    # Nothing of the file outside was read, anywhere in the lake.
    assert not any(b"SECRET-TEXT" in p.read_bytes() for p in lake.rglob("*") if p.is_file())
    # No non-finite value in any view's numbers.
    finite = (
        "select (select count(*) from task_runs where not isfinite(score))"
        " + (select count(*) from by_agent where not isfinite(mean_score_runs))"
    )
    assert _warehouse_rows(lake, finite) == [(0,)]
    assert invoke("check", "--lake", str(lake))[0] == 0

    # A deleted manifest, then a flipped byte (mtime kept): check names each, nightly mends
    # each from the sources, and nothing is lost.
    manifest = next(
        p
        for p in sorted((lake / "_parts").glob("*.json"))
        if "task_runs" in json.loads(p.read_text())["tables"]
    )
    manifest.unlink()
    code, output = invoke("check", "--lake", str(lake))
    assert code == 1 and f"part {manifest.stem} has no manifest" in output
    code, output = invoke("nightly", "--inbox", str(inbox), "--lake", str(lake))
    assert code == 0 and f"part {manifest.stem} had no manifest; rebuilt" in output
    assert _task_runs_count(lake) == 7
    target = _landed_file(lake, "task_runs")
    _flip(target, target.stat().st_size // 2, keep_mtime=True)
    code, output = invoke("check", "--lake", str(lake))
    assert code == 1 and str(target) in output
    code, output = invoke("nightly", "--inbox", str(inbox), "--lake", str(lake))
    assert code == 0 and "does not match its manifest's SHA-256" in output, output
    assert _task_runs_count(lake) == 7
    assert invoke("check", "--lake", str(lake))[0] == 0


@pytest.mark.slow
def test_a_folder_in_place_of_a_state_file_is_named_with_what_to_do(
    sample_lake_copy: Path,
) -> None:
    lake = sample_lake_copy
    ledger = lake / "_state" / "ledger.json"
    ledger.unlink(missing_ok=True)
    ledger.mkdir()
    code, output = invoke("score", "--lake", str(lake))
    assert code == 1
    assert f"failed: {ledger} cannot be read (Is a directory): make it a file" in " ".join(
        output.split()
    )
    assert not any((lake / "_staging").glob("*"))  # nothing half-written
    code, output = invoke("check", "--lake", str(lake))
    assert code == 1 and "cannot be read (Is a directory)" in " ".join(output.split())
    ledger.rmdir()
    assert invoke("score", "--lake", str(lake))[0] == 0
