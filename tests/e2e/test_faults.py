"""Faults: a full disk mid-commit, a crash after the journal, files removed or broken by hand.

Each fault either gives a clear error or is repaired, and a rerun converges to
the state of a lake that never had the fault (compared view by view).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

from pipeline.jobs import commands as jobs
from pipeline.rubric import parse_rubric
from pipeline.storage import lake as lk
from pipeline.warehouse import WarehouseError, build_warehouse
from pipeline.warehouse.query import run_query
from tests.strategies import corpus, jsonl_bytes

RUBRIC = parse_rubric({})
# What an analyst sees; batch ids and timestamps of the run itself may differ.
VIEWS = {
    "task_runs": "select run_id, agent, agent_version, problem_id, env_type, status, score, "
    "score_as_graded, passed, source, line from task_runs order by run_id",
    "task_components": "select run_id, component, subscore, weight, contribution "
    "from task_components order by run_id, component",
    "run_metadata": "select run_id, key, value from run_metadata order by run_id, key",
    "surface_runs": "select run_id, server, overall, letter from surface_runs order by run_id",
    "surface_findings": "select run_id, kind, severity from surface_findings "
    "order by run_id, kind, severity",
    "quarantine": "select source, line, reason, raw from quarantine order by source, line",
    "by_agent": "select * from by_agent order by all",
}


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("faults") / "night.jsonl"
    path.write_bytes(jsonl_bytes(corpus(300, seed=11)))
    return path


def contents(lake: Path) -> dict[str, list[tuple[Any, ...]]]:
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    try:
        return {name: con.execute(sql).fetchall() for name, sql in VIEWS.items()}
    finally:
        con.close()


@pytest.fixture(scope="module")
def clean_lake(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    lake = tmp_path_factory.mktemp("clean") / "lake"
    jobs.run([source], lake, RUBRIC)
    return lake


@pytest.fixture(scope="module")
def clean(clean_lake: Path) -> dict[str, Any]:
    return contents(clean_lake)


@pytest.fixture
def lake(clean_lake: Path, tmp_path: Path) -> Path:
    """The lake a run of ``source`` left, this test's own copy to damage."""
    return Path(shutil.copytree(clean_lake, tmp_path / "lake"))


def landed_files(lake: Path) -> list[Path]:
    return sorted(p for p in lake.rglob("*.parquet") if p.stem != "empty")


def fail_on_call(number: int, real: Callable[..., Any]) -> Callable[..., Any]:
    calls = {"n": 0}

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == number:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args, **kwargs)

    return wrapped


# The fast tier keeps one case of each fault; the full suite runs them all.
SLOW_CASE = pytest.mark.slow


@pytest.mark.parametrize(
    "failing_write", [1, pytest.param(3, marks=SLOW_CASE), pytest.param(6, marks=SLOW_CASE)]
)
@pytest.mark.slow
def test_disk_full_while_staging_leaves_the_lake_as_it_was(
    source: Path,
    clean: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    failing_write: int,
) -> None:
    lake = tmp_path / "lake"
    with monkeypatch.context() as patch:
        patch.setattr(
            pl.DataFrame, "write_parquet", fail_on_call(failing_write, pl.DataFrame.write_parquet)
        )
        with pytest.raises(OSError, match="No space left") as caught:
            jobs.run([source], lake, RUBRIC)
        assert caught.value.errno == errno.ENOSPC
    # Nothing half-landed: no table file, no staging left behind, no temporary file.
    assert landed_files(lake) == []
    assert not any((lake / "_staging").glob("*")) if (lake / "_staging").exists() else True
    assert not list(lake.rglob(".*.tmp"))
    jobs.run([source], lake, RUBRIC)
    assert contents(lake) == clean


@contextmanager
def crashing_at_the_third_move(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The block's command commits, then dies (disk full) at the third move of its journal:
    staging writes pass, the third move into the lake proper fails."""
    real_replace = os.replace
    moves = {"n": 0}

    def crash_mid_apply(src: Any, dst: Any) -> None:
        if "_staging" in str(src) and "_staging" not in str(dst):
            moves["n"] += 1
            if moves["n"] == 3:
                raise OSError(errno.ENOSPC, "No space left on device")
        real_replace(src, dst)

    with monkeypatch.context() as patch:
        patch.setattr(lk.os, "replace", crash_mid_apply)
        with pytest.raises(OSError, match="No space left"):
            yield


@pytest.mark.slow
def test_a_crash_after_the_journal_is_completed_by_the_next_run(
    source: Path, clean: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = tmp_path / "lake"
    with crashing_at_the_third_move(monkeypatch):
        jobs.ingest([source], lake)
    journals = list((lake / "_staging").glob("*/COMMIT.json"))
    assert len(journals) == 1  # the batch is committed, only partly moved
    done = lk.recover(lake)
    assert any(step.startswith("completed") for step in done)
    assert not (lake / "_staging").exists() or not any((lake / "_staging").iterdir())
    rerun = jobs.run([source], lake, RUBRIC)
    assert rerun.ingest.landed_task_runs == 0  # everything had landed
    assert contents(lake) == clean


@pytest.mark.slow
@pytest.mark.parametrize("then", ["another working directory", "the lake moved"])
def test_a_crashed_commit_is_completed_wherever_the_next_run_starts(
    source: Path,
    clean: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    then: str,
) -> None:
    """The journal names its files relative to the lake: the run that finishes a crashed
    commit may start in another folder, or find the lake moved. (It named them as the
    crashed command was given the lake, so a relative --lake finished elsewhere found no
    staged file, dropped them, and left parts without their components.)"""
    workdir = tmp_path / "work"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    with crashing_at_the_third_move(monkeypatch):
        jobs.ingest([source], Path("lake"))  # relative, as a user types it
    lake = workdir / "lake"
    if then == "the lake moved":
        lake = Path(shutil.move(lake, tmp_path / "moved-lake"))
    else:
        monkeypatch.chdir(tmp_path)
    done = lk.recover(lake)
    assert any(step.startswith("completed") for step in done)
    rerun = jobs.run([source], lake, RUBRIC)
    assert rerun.ingest.landed_task_runs == 0  # everything had landed
    assert contents(lake) == clean


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.slow
@pytest.mark.parametrize("given", ["absolute", "relative"])
@pytest.mark.parametrize("then", ["moved", "copied"])
def test_an_older_versions_crashed_commit_is_completed_where_the_lake_is_now(
    source: Path,
    clean: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    given: str,
    then: str,
) -> None:
    """A journal an older version wrote names its files as its command was given the lake
    (absolute, or relative to where it ran). Upgraded, then moved or copied, the lake's
    crashed commit is completed in the lake as it is now: applied as written, the moved
    lake's commit found no staged file, and the copy's moved files into the original."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    with crashing_at_the_third_move(monkeypatch):
        jobs.ingest([source], Path("lake"))
    lake = workdir / "lake"
    (stage,) = lk.staging_dir(lake).iterdir()
    journal = json.loads((stage / lk.JOURNAL_NAME).read_text())
    root = str(lake) + os.sep if given == "absolute" else "lake" + os.sep

    def old(path: str) -> str:
        return root + path

    (stage / lk.JOURNAL_NAME).write_text(
        json.dumps(
            {
                "moves": [{"from": old(m["from"]), "to": old(m["to"])} for m in journal["moves"]],
                "deletes": [old(d) for d in journal["deletes"]],
            }
        )
    )
    before = _files(lake)
    now = tmp_path / "elsewhere" / "lake"
    now.parent.mkdir()
    if then == "moved":
        shutil.move(lake, now)
    else:
        shutil.copytree(lake, now)
    monkeypatch.chdir(tmp_path)
    assert any(step.startswith("completed") for step in lk.recover(now))
    if then == "copied":
        assert _files(lake) == before  # the original is left as it was
    rerun = jobs.run([source], now, RUBRIC)
    assert rerun.ingest.landed_task_runs == 0  # everything had landed
    assert contents(now) == clean


@pytest.mark.slow
def test_a_run_that_died_before_its_journal_is_discarded(lake: Path) -> None:
    before = landed_files(lake)
    stage = lake / "_staging" / "20260101T000000Z-deadbeef"
    stage.mkdir(parents=True)
    (stage / "000000.parquet").write_bytes(b"half a file")
    stray = lake / "task_runs" / ".x.parquet.0000.tmp"
    stray.write_bytes(b"half")
    assert lk.recover(lake) == ["discarded 20260101T000000Z-deadbeef"]
    assert not stage.exists() and not stray.exists()
    assert landed_files(lake) == before


@pytest.mark.slow
def test_a_removed_warehouse_is_a_clear_error_then_rebuilt_from_the_lake(
    source: Path, clean: dict[str, Any], lake: Path
) -> None:
    (lake / "warehouse.duckdb").unlink()
    with pytest.raises(WarehouseError, match=r"no warehouse at .*warehouse\.duckdb"):
        list(run_query(lake, "select 1"))
    jobs.score(lake, RUBRIC)
    assert contents(lake) == clean
    # An ingest-only rerun plus run rebuilds it the same way.
    (lake / "warehouse.duckdb").unlink()
    jobs.run([source], lake, RUBRIC)
    assert contents(lake) == clean


@pytest.mark.slow
def test_a_corrupted_lake_file_leaves_the_warehouse_answering_and_is_named(
    clean: dict[str, Any], lake: Path
) -> None:
    broken = landed_files(lake / "task_runs")[0]
    broken.write_bytes(b"not parquet at all" * 10)
    # The warehouse holds its own copy of every row: readers go on as before.
    assert contents(lake) == clean
    # A build that meets the damage (outside a run, which repairs first) names the file
    # and leaves the warehouse as it was.
    with pytest.raises(WarehouseError) as caught:
        build_warehouse(lake, RUBRIC.rubric_id)
    assert broken.name in str(caught.value)
    assert contents(lake) == clean


@pytest.mark.slow
def test_a_deleted_lake_file_is_restored_by_a_rerun(
    source: Path, clean: dict[str, Any], lake: Path
) -> None:
    landed_files(lake / "task_runs")[0].unlink()
    jobs.run([source], lake, RUBRIC)
    assert contents(lake) == clean


@pytest.mark.parametrize(
    "table",
    [
        "task_runs",
        pytest.param("task_components", marks=SLOW_CASE),
        pytest.param("run_metadata", marks=SLOW_CASE),
    ],
)
@pytest.mark.slow
def test_a_corrupted_lake_file_is_repaired_by_a_rerun(
    table: str, source: Path, clean: dict[str, Any], lake: Path
) -> None:
    broken = landed_files(lake / table)[0]
    broken.write_bytes(broken.read_bytes()[:100])  # cut short, as a full disk or bad copy would
    summary = jobs.run([source], lake, RUBRIC)
    assert any(broken.name in note and "removed whole" in note for note in summary.ingest.notes)
    assert contents(lake) == clean
