"""The nightly job: idempotent, rescoring only on a rubric change, safe to kill at any point."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from pipeline.jobs import nightly
from pipeline.rubric import parse_rubric
from pipeline.storage.lake import CRASH_AT_ENV, LakeBusyError, lake_lock
from pipeline.storage.rubrics import known_rubrics
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


def inbox_with_sample(tmp_path: Path) -> Path:
    inbox = tmp_path / "inbox"
    shutil.copytree(SAMPLE / "tasks", inbox / "tasks")
    shutil.copytree(SAMPLE / "surface", inbox / "surface")
    return inbox


@pytest.mark.slow
def test_second_run_does_nothing_and_says_so(tmp_path: Path) -> None:
    inbox, lake = inbox_with_sample(tmp_path), tmp_path / "lake"
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
    stages = {"scan", "ingest", "score", "warehouse", "score: plan", "score: checks"}
    assert set(document["seconds"]) >= stages | {"score: writes"}
    # The score's parts are inside its whole.
    parts = sum(document["seconds"][f"score: {s}"] for s in ("plan", "checks", "writes"))
    assert 0 < parts <= document["seconds"]["score"] + 0.003


@pytest.mark.slow
def test_rubric_change_rescores_everything_and_only_then(tmp_path: Path) -> None:
    inbox, lake = inbox_with_sample(tmp_path), tmp_path / "lake"
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


@pytest.mark.slow
def test_concurrent_start_is_refused(tmp_path: Path) -> None:
    inbox, lake = inbox_with_sample(tmp_path), tmp_path / "lake"
    with lake_lock(lake):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pipeline",
                "nightly",
                "--inbox",
                str(inbox),
                "--lake",
                str(lake),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        with pytest.raises(LakeBusyError):
            nightly.nightly(inbox, lake, DEFAULT)
    assert done.returncode == 1
    assert "in use" in done.stderr


def _nightly(inbox: Path, lake: Path, crash_at: int | None) -> int:
    # The nightly command works on a lake that exists (run or ingest make one).
    with lake_lock(lake):
        pass
    env = {k: v for k, v in os.environ.items() if k != CRASH_AT_ENV}
    if crash_at is not None:
        env[CRASH_AT_ENV] = str(crash_at)
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "nightly", "--inbox", str(inbox), "--lake", str(lake)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode


@pytest.mark.slow
def test_killed_at_seeded_points_then_rerun_gives_the_uninterrupted_warehouse(
    tmp_path: Path,
) -> None:
    inbox = inbox_with_sample(tmp_path)
    reference = tmp_path / "reference"
    assert _nightly(inbox, reference, None) == 0
    expected = warehouse_state(reference)
    # Count the file writes and moves of one uninterrupted run, then kill at
    # seeded points across that range: mid-staging, mid-move, mid-warehouse.
    steps = 2 * sum(1 for _ in (reference).rglob("*.parquet")) + 8
    points = sorted(random.Random(20261202).sample(range(1, steps), 5))
    killed = 0
    for point in points:
        lake = tmp_path / f"killed-{point}"
        code = _nightly(inbox, lake, point)
        assert code in (0, -9), f"crash point {point}: exit {code}"
        killed += code == -9
        assert _nightly(inbox, lake, None) == 0
        assert warehouse_state(lake) == expected, f"crash point {point}"
        assert not list(lake.rglob(".*.tmp"))
        assert not (lake / "_staging").exists() or not any((lake / "_staging").iterdir())
    assert killed >= 4  # the points really fell inside the run
