"""`pipeline check`: the lake's invariants, from the user's side (commands, then the lake)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.storage.lake import command_on
from tests.paths import SAMPLE

runner = CliRunner()


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


@pytest.fixture
def lake(sample_lake_copy: Path) -> Path:
    """A lake the commands left (the sample's run), this test's own to break."""
    return sample_lake_copy


def edit_warehouse(lake: Path, *statements: str) -> None:
    """Change the lake's warehouse file by hand, as someone with write access could."""
    import duckdb

    with duckdb.connect(str(lake / "warehouse.duckdb")) as con:
        for statement in statements:
            con.execute(statement)


def violations(lake: Path) -> tuple[int, list[str]]:
    code, output = invoke("check", "--lake", str(lake), "--json")
    return code, json.loads(output)["violations"]


@pytest.mark.slow
def test_a_lake_the_commands_left_passes(lake: Path) -> None:
    code, output = invoke("check", "--lake", str(lake))
    assert code == 0, output
    assert "all invariants hold" in output


def test_not_a_lake_is_a_usage_error_and_creates_nothing(tmp_path: Path) -> None:
    typo = tmp_path / "laek"
    code, output = invoke("check", "--lake", str(typo))
    assert code == 2
    assert "does not exist" in output
    assert not typo.exists()


@pytest.mark.slow
def test_a_deleted_manifest_is_reported_then_rebuilt_with_a_note(lake: Path) -> None:
    manifests = sorted((lake / "_parts").glob("*.json"))
    doomed = manifests[0]
    document = json.loads(doomed.read_text())
    doomed.unlink()
    code, found = violations(lake)
    assert code == 1
    assert any(f"part {doomed.stem} has no manifest" in v for v in found), found

    code, output = invoke("score", "--lake", str(lake))
    assert code == 0, output
    assert f"part {doomed.stem} had no manifest; rebuilt" in output
    # Nothing was deleted: the rebuilt manifest names the same files, rows and sources.
    assert json.loads(doomed.read_text()) == document
    assert violations(lake) == (0, [])


@pytest.mark.slow
def test_a_missing_score_file_is_reported_until_scoring_mends_it(lake: Path) -> None:
    score_file = next(
        p for p in (lake / "scores").glob("*/task_scores/*.parquet") if p.stem != "empty"
    )
    score_file.unlink()
    code, found = violations(lake)
    assert code == 1
    (unscored,) = [v for v in found if "task_runs without a score under the current rubric" in v]
    # the line names what mends it, and that mends it
    assert unscored.endswith(f"; {command_on(lake, 'score')} scores every landed run again")
    code, output = invoke("score", "--lake", str(lake))
    assert code == 0, output
    assert violations(lake) == (0, [])


@pytest.mark.slow
def test_a_removed_warehouse_and_a_tampered_rubric_are_named(lake: Path) -> None:
    (lake / "warehouse.duckdb").unlink()
    state = lake / "_state" / "current_rubric.json"
    document = json.loads(state.read_text())
    document["resolved"]["task"]["penalty_scale"] = 2.0
    state.write_text(json.dumps(document))
    code, found = violations(lake)
    assert code == 1
    assert any(v.startswith("warehouse: no warehouse at") for v in found), found
    assert any("is not its content's" in v for v in found), found


@pytest.mark.slow
def test_a_removed_or_damaged_warehouse_is_named_with_what_builds_it_for_this_lake(
    lake: Path,
) -> None:
    # The advice names this lake: pasted without --lake it had acted on data/lake.
    advice = f"`python -m pipeline score --lake {lake}` builds it"
    (lake / "warehouse.duckdb").write_bytes(b"not a database" * 100)
    code, found = violations(lake)
    assert code == 1
    assert [v for v in found if v.startswith("warehouse:")] == [
        f"warehouse: the warehouse {lake / 'warehouse.duckdb'} cannot be opened or has no "
        f"build record: {advice} again"
    ]
    (lake / "warehouse.duckdb").unlink()
    code, found = violations(lake)
    assert f"warehouse: no warehouse at {lake / 'warehouse.duckdb'}: {advice}" in found, found
    assert invoke("score", "--lake", str(lake))[0] == 0
    assert violations(lake) == (0, [])


@pytest.mark.slow
def test_a_warehouse_another_version_built_is_named_with_what_builds_it_again(
    lake: Path,
) -> None:
    edit_warehouse(lake, "update _meta set value = 'an older build' where key = 'fingerprint'")
    code, found = violations(lake)
    assert code == 1
    assert found == [
        "warehouse: the warehouse was built by another version of the pipeline, whose views "
        f"differ from this one's: `python -m pipeline score --lake {lake}` (or any command "
        "that writes) builds it again"
    ]
    assert runner.invoke(app, ["score", "--lake", str(lake)]).exit_code == 0
    assert violations(lake) == (0, [])


@pytest.mark.slow
def test_a_dead_builds_copy_of_the_warehouse_is_named_until_a_write_removes_it(
    lake: Path,
) -> None:
    # A nightly killed mid-build left a 94 MB copy that check did not mention.
    stray = lake / ".warehouse.duckdb.0badc0de.tmp"
    stray.write_bytes(b"x" * 1000)
    code, found = violations(lake)
    assert code == 1
    assert found == [
        f"warehouse: {stray} (1000 bytes) is left by a build that died: the next command that "
        f"writes removes it (`python -m pipeline score --lake {lake}`)"
    ]
    assert runner.invoke(app, ["score", "--lake", str(lake)]).exit_code == 0
    assert not stray.exists()
    assert violations(lake) == (0, [])


@pytest.mark.slow
def test_a_broken_current_rubric_does_not_hide_a_damaged_part(lake: Path) -> None:
    # check's parts step reads the current rubric to choose which score files to decode; a
    # hand-edited rubric had turned the whole step into one "could not be checked".
    state = lake / "_state" / "current_rubric.json"
    document = json.loads(state.read_text())
    document["resolved"]["task"] = "bogus"
    state.write_text(json.dumps(document))
    landed = sorted((lake / "task_runs").glob("*.parquet"))[0]
    data = bytearray(landed.read_bytes())
    data[100:108] = b"\x00" * 8
    landed.write_bytes(bytes(data))
    code, found = violations(lake)
    assert code == 1
    assert any(v.startswith("parts: part ") and "SHA-256" in v for v in found), found


@pytest.mark.slow
def test_a_damaged_block_of_the_warehouse_is_named(lake: Path) -> None:
    """Planning the views reads no block: a block whose checksum fails had passed check.
    Damage is tried at offsets through the file until one lands in a table's data (others
    fall in free space, or in the catalog, where the file does not open at all)."""
    from pipeline.jobs.check import check_warehouse

    path = lake / "warehouse.duckdb"
    whole = path.read_bytes()
    named: list[str] = []
    found: list[str] = []
    for offset in range(3 * 4096, len(whole) - 64, 64 * 1024):
        damaged = bytearray(whole)
        damaged[offset : offset + 64] = b"\xaa" * 64
        path.write_bytes(bytes(damaged))
        found = check_warehouse(lake).violations
        named = [v for v in found if v.startswith("table ")]
        if named:
            break
    assert named, "no offset landed in a table's data"
    # The views over it are not run: each would fail with it, and the table's line says what
    # mends them all.
    assert not [v for v in found if v.startswith("view ")], found
    assert "cannot be read" in named[0]
    assert named[0].endswith(
        f"remove {path} and run `python -m pipeline score --lake {lake}`, which builds it "
        "from nothing"
    )


@pytest.mark.slow
def test_a_view_or_macro_of_the_pipelines_changed_by_hand_is_named(lake: Path) -> None:
    """An incremental build copies the file, so a by_agent redefined by hand would have shown
    other numbers for good, with check passing."""
    edit_warehouse(
        lake,
        "create or replace view by_agent as select 'someone else' as agent",
        "create or replace macro wilson_low(p, n) as 0.0",
        "drop view by_cwe",
        "alter table _meta add column note varchar",
    )
    code, found = violations(lake)
    assert code == 1
    remedy = (
        f": remove {lake / 'warehouse.duckdb'} and run `python -m pipeline score --lake "
        f"{lake}`, which builds it from nothing"
    )
    assert found == [
        f"warehouse: macro wilson_low(p, n) is not defined as the pipeline defines it{remedy}",
        f"warehouse: table _meta is not defined as the pipeline defines it{remedy}",
        f"warehouse: view by_agent is not defined as the pipeline defines it{remedy}",
        f"warehouse: view by_cwe is missing{remedy}",
    ]
    (lake / "warehouse.duckdb").unlink()
    assert runner.invoke(app, ["score", "--lake", str(lake)]).exit_code == 0
    assert violations(lake) == (0, [])


# Views an analyst added, each set with the one line check gives of them. Names from the
# catalog are quoted as identifiers: a name with a double quote in it is read as that view,
# not as broken SQL. A view is run in its own schema: one of the schema scratch had been
# looked up in main, so a sound one was named as failing ('does not exist'), and a failing
# one was named for that and not for its own error.
ANALYSTS_VIEWS = {
    "quoted": (
        (
            'create view "my ""best"" runs" as select * from task_runs',
            "create table scratch (x int)",
            'create view "gone ""soon""" as select * from scratch',
            "drop table scratch",
        ),
        'warehouse: view gone "soon" does not answer',
    ),
    "schema": (
        (
            "create schema scratch",
            "create view scratch.mine as select run_id from main.task_runs",
            "create view scratch.broken as select cast(run_id as integer) as n from main.task_runs",
        ),
        "warehouse: view scratch.broken does not answer: Conversion Error: ",
    ),
    # Named as a view and a table of the pipeline's, in a schema of the analyst's: theirs,
    # not the pipeline's defined otherwise ('remove the file and build it from nothing', which
    # loses them), and the view is run, not main's of that name in its place.
    "schema, a pipeline's name": (
        (
            "create schema scratch",
            "create table scratch.task_runs as select 1 as one",
            "create view scratch.by_agent as select cast(run_id as integer) as n "
            "from main.task_runs",
        ),
        "warehouse: view scratch.by_agent does not answer: Conversion Error: ",
    ),
}


@pytest.mark.parametrize("case", sorted(ANALYSTS_VIEWS))
def test_views_an_analyst_added_are_run_whatever_their_names(lake: Path, case: str) -> None:
    statements, line = ANALYSTS_VIEWS[case]
    edit_warehouse(lake, *statements)
    code, found = violations(lake)
    assert code == 1
    assert len(found) == 1, found
    assert found[0].startswith(line), found


def _remedy(ours: bool) -> str:
    return (
        "; the pipeline's view fails on a row of this lake, and so does any query that reads "
        "that row: report it with this line"
        if ours
        else "; it is not one of the pipeline's views: mend it (create or replace view) or drop it"
    )


@pytest.mark.slow
def test_views_that_fail_only_when_run_are_each_named(lake: Path, tmp_path: Path) -> None:
    """A view that plans but fails on a row had passed check (it planned each view), while
    every query reading that row failed: cost_per_solved summed tokens into a BIGINT until
    2026-12-05, and a run reporting 2^63-1 tokens (valid: tokens are numbers) broke it. That
    view is put back as it was, beside an analyst's view whose one failing column a count(*)
    would never compute, on the one row that holds the number. Each is named, one not hiding
    the other; the pipeline's own view, built again, answers."""
    from pipeline.core.sql import sql_text

    line = (SAMPLE / "tasks" / "atlas.jsonl").read_text("utf-8").splitlines()[0]
    huge = line.replace('"tokens":184440', f'"tokens":{2**63 - 1}').replace(
        '"run_id":"atlas-1.3.0-exploit-libpng-00-t0"', '"run_id":"huge-tokens"'
    )
    assert huge.count(str(2**63 - 1)) == 1 and '"huge-tokens"' in huge
    (tmp_path / "huge.jsonl").write_text(huge + "\n", "utf-8")
    code, output = invoke("ingest", str(tmp_path / "huge.jsonl"), "--lake", str(lake))
    assert code == 0, output
    assert violations(lake) == (0, [])  # the pipeline's views answer with it

    current = sql_text("marts/cost_per_solved.sql")
    summed = "sum(tokens order by problem_id) as tokens"
    assert current.count(summed) == 1
    edit_warehouse(
        lake,
        current.replace(summed, "sum(tokens order by problem_id)::bigint as tokens"),
        "create view big_tokens as select run_id, "
        "cast(case when tokens > 1e18 then tokens else 0 end as integer) as big from task_runs",
    )
    code, found = violations(lake)
    assert code == 1
    rebuild = (
        f": remove {lake / 'warehouse.duckdb'} and run `python -m pipeline score --lake "
        f"{lake}`, which builds it from nothing"
    )
    assert found[0] == (
        f"warehouse: view cost_per_solved is not defined as the pipeline defines it{rebuild}"
    )
    # The views in name order, each with DuckDB's first line whole and what to do.
    assert len(found) == 3, found
    for failed, view, ours in zip(
        found[1:], ("big_tokens", "cost_per_solved"), (False, True), strict=True
    ):
        assert failed.startswith(f"warehouse: view {view} does not answer: Conversion Error: ")
        assert failed.endswith(_remedy(ours))
        assert "out of range" in failed and "\n" not in failed

    (lake / "warehouse.duckdb").unlink()
    assert invoke("score", "--lake", str(lake))[0] == 0
    code, output = invoke("query", "select tokens from cost_per_solved", "--lake", str(lake))
    assert code == 0, output
    assert violations(lake) == (0, [])


@pytest.mark.slow
def test_views_are_run_while_the_process_holds_the_warehouse_open(sample_lake: Path) -> None:
    """A library user's connection to the warehouse (the analysts' door) beside check: the
    views' own connection to the path under other settings had been refused, a violation."""
    from pipeline.jobs.check import check_lake
    from pipeline.warehouse.file import connect_read_only

    with connect_read_only(sample_lake) as held:
        assert check_lake(sample_lake).violations == []
        assert held.execute("select count(*) from by_agent").fetchone() == (28,)


def test_a_view_that_breaks_duckdb_is_named_and_the_views_after_it_still_run(
    lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An internal error of DuckDB's invalidates its instance: each later statement on it
    fails ('database has been invalidated'), which had named every view after the one that
    broke it. Stood in for by a connection that fails so after a planted internal error."""
    import duckdb

    from pipeline.jobs import check as checker

    real = checker._confined
    edit_warehouse(lake, "create view aaa_breaks as select 1 as one")

    class Breaking:
        def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
            self.con, self.broken = con, False

        def execute(self, sql: str, params: object = None) -> duckdb.DuckDBPyConnection:
            if self.broken:
                raise duckdb.FatalException("FATAL Error: database has been invalidated")
            if params == ['"main"."aaa_breaks"']:
                self.broken = True
                raise duckdb.InternalException("INTERNAL Error: planted")
            return self.con.execute(sql, params)

        def interrupt(self) -> None:
            self.con.interrupt()

        def close(self) -> None:
            self.con.close()

    opened: list[Breaking] = []

    def confined(path: Path) -> Breaking:
        opened.append(Breaking(real(path)))
        return opened[-1]

    monkeypatch.setattr(checker, "_confined", confined)
    assert checker.unanswered_views(lake / "warehouse.duckdb").violations == [
        "view aaa_breaks does not answer: INTERNAL Error: planted; "
        + _remedy(ours=False).removeprefix("; ")
    ]
    assert len(opened) == 2


@pytest.mark.slow
def test_a_view_past_the_memory_limit_is_a_note_naming_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """surface_finding_changes_all pairs every two versions of a server: a server probed in
    40 versions of 72 findings each makes 1,560 pairs of 144 findings. Past DuckDB's memory
    limit it is a note naming the setting (a bound met, as a view out of time: no crash, no
    spill beside the warehouse), and the views after it are run. surface_finding_changes
    reads only the 39 steps from a version to the next and answers within the same limit
    (it had compared every pair before keeping the steps, and ran out of it too). Raised,
    the setting lets check run them all whole."""
    report = json.loads(
        (SAMPLE / "surface" / "shell-tools-1.1.0" / "report.json").read_text("utf-8")
    )
    assert len(report["findings"]) == 18
    inbox = tmp_path / "reports"
    for version in range(40):
        probed = report | {
            "server": report["server"] | {"version": f"1.{version}.0"},
            "generated_at": f"2025-{1 + version // 28:02d}-{1 + version % 28:02d}T10:08:00+00:00",
            "findings": report["findings"] * 4,
        }
        (inbox / str(version)).mkdir(parents=True)
        (inbox / str(version) / "report.json").write_text(json.dumps(probed), "utf-8")
    lake = tmp_path / "lake"
    code, output = invoke("ingest", str(inbox), "--lake", str(lake))
    assert code == 0, output
    monkeypatch.setenv("PIPELINE_DUCKDB_THREADS", "1")
    monkeypatch.setenv("PIPELINE_DUCKDB_MEMORY_BYTES", str(64 * 1024**2))
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")  # where an in-memory DuckDB spills (.tmp)
    code, output = invoke("check", "--lake", str(lake), "--json")
    assert code == 0, output
    report_json = json.loads(output)
    assert report_json["violations"] == []
    assert report_json["notes"] == [
        "warehouse: view surface_finding_changes_all needs more than DuckDB's memory limit of "
        "67108864 bytes (PIPELINE_DUCKDB_MEMORY_BYTES) to run to its end, and a query of it "
        "whole as much: raise PIPELINE_DUCKDB_MEMORY_BYTES to check it"
    ]
    assert not (lake / "warehouse.duckdb.tmp").exists()
    assert not list((tmp_path / "cwd").iterdir())
    monkeypatch.setenv("PIPELINE_DUCKDB_MEMORY_BYTES", str(256 * 1024**2))
    code, output = invoke("check", "--lake", str(lake), "--json")
    assert (code, json.loads(output)["notes"]) == (0, []), output


@pytest.mark.slow
def test_a_view_still_running_after_its_time_is_stopped_with_a_note(
    lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A view is given VIEW_SECONDS: one still running then is stopped and named in a note
    (not a violation: nothing was found wrong), and the views after it are run."""
    from pipeline.jobs import check as checker

    edit_warehouse(
        lake,
        "create view endless as select sum(range) as total from range(1000000000000)",
        "create view later as select cast(line + 1000 as tinyint) as small from task_runs",
    )
    monkeypatch.setattr(checker, "VIEW_SECONDS", 0.5)
    code, output = invoke("check", "--lake", str(lake), "--json")
    report = json.loads(output)
    assert code == 1
    assert report["notes"] == [
        "warehouse: view endless was stopped after 0.5 s, not run to its end: a row it fails "
        "on would not be seen (check gives each view that long)"
    ]
    assert len(report["violations"]) == 1
    assert report["violations"][0].startswith("warehouse: view later does not answer: ")


@pytest.mark.slow
def test_runs_committed_but_not_yet_in_the_warehouse_are_named(lake: Path, tmp_path: Path) -> None:
    """A command killed after the lake's commit and before the warehouse's rebuild leaves
    scored runs the views do not show: the check names them (it had said every invariant
    held while `compare` could not find the new version), and the next command mends it."""
    from pipeline.jobs.ingest import ingest_locked
    from pipeline.jobs.score import score_locked
    from pipeline.storage.rubrics import current_rubric

    new = tmp_path / "new.jsonl"
    atlas = (SAMPLE / "tasks" / "atlas.jsonl").read_text("utf-8")
    new.write_text(atlas.replace('"agent_version":"1.4.0"', '"agent_version":"1.5.0"'), "utf-8")
    rubric = current_rubric(lake)
    assert rubric is not None
    ingest_locked([new], lake, rubric)
    score_locked(lake, rubric, full=False)  # committed and scored; no build follows
    code, found = violations(lake)
    assert code == 1
    (stale,) = found
    assert stale.startswith("warehouse: the warehouse does not show the lake as it is: ")
    assert "lake file(s) not in it (e.g. " in stale and "0 it holds no longer" in stale
    assert runner.invoke(app, ["score", "--lake", str(lake)]).exit_code == 0
    assert violations(lake) == (0, [])


@pytest.mark.slow
def test_a_line_in_two_places_is_named(lake: Path, tmp_path: Path) -> None:
    """A landed run's line (its place and its text) also sitting in the quarantine breaks
    'one state per line'."""
    import polars as pl

    runs = pl.read_parquet(next(p for p in (lake / "task_runs").glob("*.parquet")))
    quarantine_file = next(p for p in (lake / "quarantine").glob("*.parquet") if p.stem != "empty")
    quarantine = pl.read_parquet(quarantine_file)
    twin = quarantine.head(1).with_columns(
        source=pl.lit(runs["source"][0]),
        line=pl.lit(runs["line"][0], dtype=pl.Int64),
        raw=pl.lit(runs["record"][0]),
    )
    pl.concat([quarantine, twin]).write_parquet(quarantine_file)
    manifest = lake / "_parts" / f"{quarantine_file.stem}.json"
    document = json.loads(manifest.read_text())
    document["tables"]["quarantine"] += 1
    manifest.write_text(json.dumps(document))
    code, found = violations(lake)
    assert code == 1
    assert any("line both landed and quarantined" in v for v in found), found


@pytest.mark.slow
def test_a_rewritten_inbox_file_is_one_line_a_place_per_version(tmp_path: Path) -> None:
    """An inbox file rewritten after a night landed it: its changed line is quarantined (its
    run_id landed with other content), and a line inserted before others moves them. The
    same place holds other text in each version, so each version's line is in one place and
    the check holds (it had named them 'both landed and quarantined')."""
    inbox, lake = tmp_path / "inbox", tmp_path / "lake"
    inbox.mkdir()
    lines = (SAMPLE / "tasks" / "atlas.jsonl").read_text("utf-8").splitlines()[:6]
    day = inbox / "day.jsonl"
    day.write_text("\n".join([lines[0], "{not json", lines[1]]) + "\n", encoding="utf-8")
    assert invoke("run", str(SAMPLE / "bad"), "--lake", str(lake))[0] == 0
    assert invoke("nightly", "--inbox", str(inbox), "--lake", str(lake))[0] == 0
    changed = lines[0].replace('"cost_usd":', '"cost_usd":1', 1)
    assert changed != lines[0]
    day.write_text("\n".join([changed, lines[2], "{not json", lines[1]]) + "\n", encoding="utf-8")
    code, output = invoke("nightly", "--inbox", str(inbox), "--lake", str(lake))
    assert code == 0, output
    assert "lake check: all invariants hold" in output, output
    # Both versions' lines are where they belong: line 1 landed as first read, and its new
    # text quarantined; line 3 landed as first read, and the line moved there quarantined.
    code, rows = invoke(
        "query",
        "select q.line, q.reason like '%already landed with different content%' as clash "
        "from quarantine as q join task_runs as r using (source, line) "
        "where source like '%/inbox/day.jsonl' order by q.line",
        "--lake",
        str(lake),
        "--json",
    )
    assert code == 0, rows
    assert json.loads(rows) == [{"line": 1, "clash": True}, {"line": 3, "clash": False}]
    assert violations(lake) == (0, [])


@pytest.mark.slow
def test_a_nightly_whose_closing_check_fails_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The night's work is done and committed; the violation is printed and the exit is 1,
    so cron reports it. (A violation planted in the checker: the real ones a nightly cannot
    leave are each tested where they are found.)"""
    from pipeline.jobs import check as checker

    inbox, lake = tmp_path / "inbox", tmp_path / "lake"
    shutil.copytree(SAMPLE / "tasks", inbox)
    assert invoke("run", str(SAMPLE / "bad"), "--lake", str(lake))[0] == 0
    monkeypatch.setitem(checker.CHECKS, "lines", lambda lake: ["a planted violation"])
    code, output = invoke("nightly", "--inbox", str(inbox), "--lake", str(lake))
    assert code == 1, output
    assert "check: lines: a planted violation" in output
    assert "lake check: VIOLATIONS" in output
    summary = json.loads(next((lake / "_runs").glob("nightly-*.json")).read_text())
    assert summary["check_ok"] is False
    assert summary["landed_task_runs"] > 0


@pytest.mark.slow
def test_nightly_ends_with_the_check_in_its_summary(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    shutil.copytree(SAMPLE / "tasks", inbox)
    lake = tmp_path / "lake"
    # nightly needs a lake (CONTRACT section 7): the first one comes from a run.
    assert invoke("run", str(SAMPLE / "bad"), "--lake", str(lake))[0] == 0
    code, output = invoke("nightly", "--inbox", str(inbox), "--lake", str(lake))
    assert code == 0, output
    assert "lake check: all invariants hold" in output
    summary = json.loads(next((lake / "_runs").glob("nightly-*.json")).read_text())
    assert summary["check_ok"] is True
    assert summary["check_violations"] == []


@pytest.mark.slow
def test_check_writes_nothing_so_a_read_only_lake_can_be_checked(
    lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No lock file made, no marker written, no file touched (on a read-only mount each of
    those had failed the check with EROFS)."""
    import errno

    from pipeline.storage import lake as lk

    (lake / ".lock").unlink(missing_ok=True)
    before = {p: p.stat().st_mtime_ns for p in lake.rglob("*")}
    real_open = open

    def read_only(path: object, mode: str = "r", *args: object, **kwargs: object) -> object:
        if any(flag in mode for flag in "wax+"):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open(path, mode, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(lk, "open", read_only, raising=False)
    assert violations(lake) == (0, [])
    assert {p: p.stat().st_mtime_ns for p in lake.rglob("*")} == before


def _attempt(run_id: str, uuid: str) -> str:
    """A task grade of the Inspect reader's form: its sample's uuid is its attempt."""
    parts = {"defect_matching": 1.0, "pov_quality": 0.5}
    record = {
        "run_id": run_id,
        "agent": "a",
        "agent_version": "1",
        "problem_id": "p1",
        "env_type": "exploit",
        "graded_at": "2026-12-01T00:00:00Z",
        "grade": {
            "subscores": parts,
            "weights": dict.fromkeys(parts, 0.5),
            "metadata": {"inspect": {"sample_uuid": uuid}},
        },
    }
    return json.dumps(record) + "\n"


@pytest.mark.slow
def test_an_attempt_an_older_version_landed_twice_is_a_note_not_a_violation(
    tmp_path: Path,
) -> None:
    # Before 2026-12-05 a log and its retry's log both landed the samples the retry carried
    # over. Made here as it was: each copy landed into a lake of its own, then one lake's
    # part (its files, scores and manifest) copied into the other.
    first, second = tmp_path / "first", tmp_path / "second"
    for lake, run_id in ((first, "inspect:E1/1#1"), (second, "inspect:E2/1#1")):
        (tmp_path / f"{lake.name}.jsonl").write_text(_attempt(run_id, "U1"))
        assert invoke("ingest", str(tmp_path / f"{lake.name}.jsonl"), "--lake", str(lake))[0] == 0
    for path in second.rglob("*-p00000.*"):
        target = first / path.relative_to(second)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    assert invoke("score", "--lake", str(first))[0] == 0
    code, output = invoke("check", "--lake", str(first), "--json")
    assert code == 0
    assert json.loads(output)["notes"] == [
        "lines: 1 Inspect attempt(s) (sample uuids) landed under more than one run_id: "
        "inspect:E1/1#1 and inspect:E2/1#1. A version before 2026-12-05 landed a sample an "
        "Inspect retry carried over from both logs, so each counts more than once in the "
        "views, compare and history; a lake built again from its inputs lands each once"
    ]
    assert "note: lines: 1 Inspect attempt(s)" in invoke("check", "--lake", str(first))[1]
    assert json.loads(invoke("check", "--lake", str(second), "--json")[1])["notes"] == []
