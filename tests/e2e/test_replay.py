"""Schema evolution: new fields, kinds and components land and are reported; a new env type
waits in quarantine until the rubric has it, then replay-quarantine lands it once."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.core.settings import (
    KEEP_BAD_LINES_ENV,
    MAX_DEPTH_ENV,
    MAX_EXPANDED_BYTES_ENV,
    MAX_RECORD_BYTES_ENV,
)
from pipeline.ingest.evolution import schema_news
from pipeline.jobs import commands as jobs
from pipeline.jobs import land
from pipeline.jobs.replay import replay_quarantine, unresolved
from pipeline.rubric import parse_rubric
from tests.strategies import surface_report, task_record

# Each test lands a lake of its own and replays it: end to end, and slow.
pytestmark = pytest.mark.slow

FUZZ_RUBRIC = {"task": {"fuzz": {"gate": "crash", "weights": {"crash": 0.5, "triage": 0.5}}}}
FUZZ_TOML = """
[task.fuzz]
gate = "crash"
weights = { crash = 0.5, triage = 0.5 }
"""


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    return tmp_path / "lake"


def fuzz_record(run_id: str) -> dict[str, Any]:
    record = task_record(random.Random(run_id), run_id)
    record["env_type"] = "fuzz"
    record["grade"] = {
        "subscores": {"crash": 1.0, "triage": 0.5},
        "weights": {"crash": 0.5, "triage": 0.5},
    }
    return record


def rows(lake: Path, table: str) -> pl.DataFrame:
    files = sorted((lake / table).glob("*.parquet"))
    return pl.concat([pl.read_parquet(f) for f in files]) if files else pl.DataFrame()


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_new_env_type_waits_then_lands_once_with_its_provenance(tmp_path: Path, lake: Path) -> None:
    plain = task_record(random.Random(0), "plain")
    source = write(
        tmp_path / "night.jsonl",
        [
            json.dumps(plain),
            json.dumps(fuzz_record("f1")),
            "garbage",
            json.dumps(fuzz_record("f2")),
        ],
    )
    first = jobs.run([source], lake, parse_rubric({}))
    assert (first.ingest.landed_task_runs, first.ingest.quarantined) == (1, 3)
    reasons = rows(lake, "quarantine").sort("line")["reason"].to_list()
    assert reasons[0].startswith("unknown env_type 'fuzz'")
    assert "add a [task.fuzz] table (gate, weights) to the rubric" in reasons[0]
    assert "then run replay-quarantine" in reasons[0]

    # Under the old rubric nothing changes.
    unchanged = replay_quarantine(lake)
    assert (unchanged.tried, unchanged.released, unchanged.still_quarantined) == (3, 0, 3)
    assert unresolved(lake).height == 3

    rubric = parse_rubric(FUZZ_RUBRIC)
    replayed = replay_quarantine(lake, rubric)
    assert (replayed.tried, replayed.landed_task_runs, replayed.still_quarantined) == (3, 2, 1)
    assert replayed.accounted == replayed.tried
    left = unresolved(lake)
    assert left["raw"].to_list() == ["garbage"]
    landed = rows(lake, "task_runs").filter(pl.col("env_type") == "fuzz").sort("line")
    # The original file and line, not a temporary file's.
    assert landed.select("run_id", "source", "line").rows() == [
        ("f1", str(source), 2),
        ("f2", str(source), 4),
    ]

    again = replay_quarantine(lake, rubric)
    assert (again.tried, again.released) == (1, 0)
    assert rows(lake, "task_runs").height == 3
    # And ingesting the night's file again under the new rubric adds nothing either.
    rerun = jobs.ingest([source], lake, rubric)
    assert (rerun.landed_task_runs, rerun.skipped_duplicates, rerun.already_quarantined) == (
        0,
        3,
        1,
    )
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    try:
        got = con.execute(
            "select run_id, score, rubric_id from task_runs where env_type = 'fuzz' order by 1"
        ).fetchall()
    finally:
        con.close()
    # crash 1.0 * 0.5 + triage 0.5 * 0.5 = 0.75
    assert got == [
        ("f1", pytest.approx(0.75), rubric.rubric_id),
        ("f2", pytest.approx(0.75), rubric.rubric_id),
    ]


def test_the_same_line_quarantined_twice_lands_once(tmp_path: Path, lake: Path) -> None:
    line = json.dumps(fuzz_record("twin"))
    a = write(tmp_path / "a.jsonl", [line])
    b = write(tmp_path / "b.jsonl", [line])
    jobs.ingest([a, b], lake)
    assert rows(lake, "quarantine").height == 2
    report = replay_quarantine(lake, parse_rubric(FUZZ_RUBRIC))
    assert (report.landed_task_runs, report.skipped_duplicates, report.still_quarantined) == (
        1,
        1,
        0,
    )
    assert unresolved(lake).height == 0
    # Resolved, not removed: the rows stay, each marked with the run it became.
    assert rows(lake, "quarantine").height == 2
    assert sorted(rows(lake, "quarantine_resolved")["outcome"].to_list()) == [
        "duplicate",
        "landed",
    ]
    assert rows(lake, "task_runs")["run_id"].to_list() == ["twin"]


def _inspect_sample(eval_id: str, uuid: str = "U1", sample: str = "s-1", task: str = "t") -> str:
    """A fuzz sample as the Inspect reader writes it: the same uuid under two eval ids is
    one attempt (a retry's log carries it over)."""
    record = fuzz_record(f"inspect:{eval_id}/{sample}#1")
    record["problem_id"] = sample
    record["grade"]["metadata"] = {
        "inspect": {"eval_id": eval_id, "sample_uuid": uuid, "task": task}
    }
    return json.dumps(record)


def test_replay_notes_tasks_of_one_env_type_whose_samples_share_ids(
    tmp_path: Path, lake: Path
) -> None:
    # Two fuzz tasks numbering their samples alike: quarantined (fuzz unknown), then
    # landed by replay, which says they are the same problems to compare.
    lines = [_inspect_sample(f"E-{t}", f"{t}{i}", f"s-{i}", t) for t in "ab" for i in (1, 2)]
    jobs.ingest([write(tmp_path / "logs.jsonl", lines)], lake)
    report = replay_quarantine(lake, parse_rubric(FUZZ_RUBRIC))
    assert report.landed_task_runs == 4
    assert report.notes == [
        "Inspect tasks of env type fuzz share sample ids (2 of them, e.g. s-1, s-2; tasks a, "
        "b): compare and the views take their samples as the same problems; give samples ids "
        "unique across the tasks of an env type"
    ]
    done = CliRunner().invoke(app, ["replay-quarantine", "--lake", str(lake)])
    assert done.exit_code == 0 and "share sample ids" not in done.stdout  # nothing new


def test_a_sample_carried_over_by_a_retry_resolves_as_a_copy_of_the_run_it_was(
    tmp_path: Path, lake: Path
) -> None:
    # An Inspect sample in a log and in its retry's log (a new eval id, the same uuid), both
    # waiting for their env type: one lands, the other is a duplicate of that run.
    sample = _inspect_sample

    jobs.ingest([write(tmp_path / "a.jsonl", [sample("E1"), sample("E2")])], lake)
    assert rows(lake, "quarantine").height == 2
    report = replay_quarantine(lake, parse_rubric(FUZZ_RUBRIC))
    assert (report.landed_task_runs, report.skipped_duplicates) == (1, 1)
    assert rows(lake, "task_runs")["run_id"].to_list() == ["inspect:E1/s-1#1"]
    resolved = rows(lake, "quarantine_resolved").sort("line")
    assert resolved.select("line", "run_id", "outcome").rows() == [
        (1, "inspect:E1/s-1#1", "landed"),
        (2, "inspect:E1/s-1#1", "duplicate"),
    ]


def test_a_raised_depth_limit_lets_a_deep_record_land_but_cut_text_never_replays(
    tmp_path: Path, lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = task_record(random.Random(5), "deep")
    nest: Any = 1
    for _ in range(70):
        nest = {"n": nest}
    deep["grade"]["metadata"] = {"nest": nest}
    big = task_record(random.Random(6), "big")
    big["grade"]["metadata"] = {"log": "y" * 5000}
    monkeypatch.setenv(MAX_RECORD_BYTES_ENV, "4096")
    source = write(tmp_path / "a.jsonl", [json.dumps(deep), json.dumps(big)])
    assert jobs.ingest([source], lake).quarantined == 2
    monkeypatch.setenv(MAX_DEPTH_ENV, "100")
    monkeypatch.setenv(MAX_RECORD_BYTES_ENV, str(10**6))
    report = replay_quarantine(lake, rescore=False)
    assert (report.held, report.not_replayable, report.landed_task_runs) == (2, 1, 1)
    assert rows(lake, "task_runs")["run_id"].to_list() == ["deep"]
    assert unresolved(lake)["line"].to_list() == [2]


def test_an_empty_report_file_is_counted_not_replayable(tmp_path: Path, lake: Path) -> None:
    # Its quarantine row holds no record: replayed as a blank line, it had been counted
    # nowhere ("replayed 1 of 1: 0 landed, 0 still quarantined, 0 not replayable").
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a-empty.json").write_text("")
    write(tmp_path / "in" / "b.jsonl", ["", json.dumps(task_record(random.Random(3), "r1"))])
    report = jobs.ingest([tmp_path / "in"], lake)
    assert (report.quarantined, report.skipped_blank) == (1, 1)
    replayed = replay_quarantine(lake, rescore=False)
    assert (replayed.held, replayed.tried, replayed.not_replayable) == (1, 0, 1)
    assert unresolved(lake)["source"].to_list() == [str(tmp_path / "in" / "a-empty.json")]


def test_replay_quarantine_command(tmp_path: Path, lake: Path) -> None:
    source = write(tmp_path / "a.jsonl", [json.dumps(fuzz_record("c1"))])
    jobs.run([source], lake, parse_rubric({}))
    rubric_file = tmp_path / "fuzz.toml"
    rubric_file.write_text(FUZZ_TOML)
    runner = CliRunner()
    done = runner.invoke(
        app, ["replay-quarantine", "--lake", str(lake), "--rubric", str(rubric_file)]
    )
    assert done.exit_code == 0, done.output
    assert "1 task and 0 surface run(s) landed" in done.stdout
    bad_rubric = tmp_path / "bad.toml"
    bad_rubric.write_text("[task]\nminimization_multiple = 0.5\n")
    refused = runner.invoke(
        app, ["replay-quarantine", "--lake", str(lake), "--rubric", str(bad_rubric)]
    )
    assert refused.exit_code == 2


def test_new_fields_kinds_and_components_land_and_are_news(tmp_path: Path, lake: Path) -> None:
    rng = random.Random(9)
    old_task = task_record(rng, "old")
    old_report = surface_report(rng, "old-report")
    jobs.ingest([write(tmp_path / "a.jsonl", [json.dumps(old_task), json.dumps(old_report)])], lake)

    new_task = task_record(rng, "new")
    new_task["env_type"] = "audit"
    new_task["grader_build"] = "2026.12"
    new_task["grade"]["subscores"] = {"audit": 0.25, "novelty": 1.0}
    new_task["grade"]["weights"] = {"audit": 1.0, "novelty": 0.0}
    new_report = surface_report(rng, "new-report")
    new_report["carbon"] = {"grams": 3}
    new_report["findings"].append(
        {"probe": "future", "kind": "quantum_smell", "target": "tool_0", "measurement": {"q": 1}}
    )
    second = jobs.ingest(
        [write(tmp_path / "b.jsonl", [json.dumps(new_task), json.dumps(new_report)])], lake
    )
    assert (second.landed_task_runs, second.landed_surface_runs, second.quarantined) == (1, 1, 0)
    part = second.parts[0]
    batch = {
        name: pl.read_parquet(lake / name / f"{part}.parquet")
        for name in ("task_runs", "surface_runs", "surface_findings", "task_components")
    }
    news = schema_news(batch, lake)
    assert news == {
        "task_fields": sorted(set(new_task) - set(old_task)),
        "surface_fields": ["carbon"],
        "finding_kinds": sorted(
            {f["kind"] for f in new_report["findings"]}
            - {f["kind"] for f in old_report["findings"]}
        ),
        "components": sorted(
            set(new_task["grade"]["subscores"]) - set(old_task["grade"]["subscores"])
        ),
        "env_types": sorted({new_task["env_type"]} - {old_task["env_type"]}),
    }
    assert "grader_build" in news["task_fields"]
    assert "quantum_smell" in news["finding_kinds"]
    assert "novelty" in news["components"]
    # Kept: the new component with its stored subscore, the new kind's finding, the field.
    con_rows = rows(lake, "task_components").filter(pl.col("component") == "novelty")
    assert con_rows["stored_subscore"].to_list() == [1.0]
    kinds = rows(lake, "surface_findings").filter(pl.col("kind") == "quantum_smell")
    assert kinds["measurement"].to_list() == ['{"q":1}']
    runs = rows(lake, "task_runs").filter(pl.col("run_id") == "new")
    assert json.loads(runs["record"][0])["grader_build"] == "2026.12"
    # A batch with nothing new: empty lists, whether asked before or after it landed.
    assert schema_news({"task_runs": batch["task_runs"].head(0)}, lake)["task_fields"] == []
    old_batch = {"task_runs": rows(lake, "task_runs").filter(pl.col("run_id") == "old")}
    assert "grader_build" not in schema_news(old_batch, lake)["task_fields"]


# --- counted blocks: read again from their source ---------------------------------------------


def _quarantine_view(lake: Path) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    try:
        return con.execute(
            "select line, line_end, lines, raw is null, reason from quarantine order by line"
        ).fetchall()
    finally:
        con.close()


def _fuzz_night(path: Path, fuzz: int, bad: int, *, gz: bool = False) -> Path:
    lines = [json.dumps(fuzz_record(f"f{i}")) for i in range(fuzz)] + ["{}"] * bad
    text = "".join(line + "\n" for line in lines).encode()
    if gz:
        # Two members, as `cat a.gz b.gz` makes: the block is read from both.
        half = len(lines) // 2
        first = "".join(line + "\n" for line in lines[:half]).encode()
        path.write_bytes(gzip.compress(first) + gzip.compress(text[len(first) :]))
    else:
        path.write_bytes(text)
    return path


def test_a_block_replayed_lands_each_attempt_once(
    tmp_path: Path, lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Line 1 kept with its text, lines 2-6 as a block (no text): a log's samples and its
    # retry's copies of them, read again from the file by replay; each attempt lands once.
    monkeypatch.setenv(KEEP_BAD_LINES_ENV, "1")
    lines = [_inspect_sample("E1", f"U{i}", f"s-{i}") for i in range(3)]
    lines += [_inspect_sample("E2", f"U{i}", f"s-{i}") for i in range(3)]
    source = write(tmp_path / "logs.jsonl", lines)
    assert jobs.run([source], lake, parse_rubric({})).ingest.quarantined == 6
    report = replay_quarantine(lake, parse_rubric(FUZZ_RUBRIC))
    assert (report.landed_task_runs, report.block_lines_read, report.block_task_runs) == (1, 5, 2)
    assert sorted(rows(lake, "task_runs")["run_id"]) == [f"inspect:E1/s-{i}#1" for i in range(3)]


@pytest.mark.parametrize("gz", [False, True])
def test_bad_lines_kept_as_blocks_are_read_again_from_their_source(
    tmp_path: Path, lake: Path, monkeypatch: pytest.MonkeyPatch, gz: bool
) -> None:
    monkeypatch.setenv(KEEP_BAD_LINES_ENV, "10")
    source = _fuzz_night(tmp_path / ("night.jsonl.gz" if gz else "night.jsonl"), 40, 30, gz=gz)
    first = jobs.run([source], lake, parse_rubric({}))
    assert first.ingest.quarantined == 70
    # Lines 1-10 in full; 11-40 (unknown env type) and 41-70 (`{}`) as blocks.
    before = _quarantine_view(lake)
    assert [row[:4] for row in before] == [(n, n, 1, False) for n in range(1, 11)] + [
        (11, 40, 30, True),
        (41, 70, 30, True),
    ]

    report = replay_quarantine(lake, parse_rubric(FUZZ_RUBRIC))
    assert (report.tried, report.landed_task_runs) == (10, 10)
    assert (report.blocks, report.block_lines_read, report.block_task_runs) == (2, 60, 30)
    assert (report.blocks_resolved, report.block_lines_quarantined_again) == (1, 0)
    landed = rows(lake, "task_runs").sort("line")
    assert landed["line"].to_list() == list(range(1, 41))
    assert set(landed["source"]) == {str(source)}
    # The `{}` block, where nothing landed, is as it was; every line is in one place.
    assert [row[:4] for row in _quarantine_view(lake)] == [(41, 70, 30, True)]
    resolved = rows(lake, "quarantine_resolved").filter(pl.col("outcome") == "reread")
    assert resolved.select("line", "raw").rows() == [(11, None)]

    again = replay_quarantine(lake, parse_rubric(FUZZ_RUBRIC))
    assert (again.tried, again.blocks, again.block_task_runs, again.blocks_resolved) == (
        0,
        1,
        0,
        0,
    )
    assert rows(lake, "task_runs").height == 40
    assert _quarantine_view(lake) == [row for row in before if row[0] == 41]


def test_a_file_that_failed_whole_is_read_again_and_its_bad_lines_stay_counted(
    tmp_path: Path, lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = [json.dumps(task_record(random.Random(i), f"g{i}")) for i in range(5)]
    source = write(tmp_path / "night.jsonl", [good[0], "garbage", *good[1:], "{}"])
    real = land.build_batch

    def failing(lines, env_types, batch_id):  # type: ignore[no-untyped-def]
        raise MemoryError

    monkeypatch.setattr(land, "build_batch", failing)
    jobs.run([source], lake, parse_rubric({}))
    assert [row[:4] for row in _quarantine_view(lake)] == [(1, 7, 7, True)]
    monkeypatch.setattr(land, "build_batch", real)

    report = replay_quarantine(lake)
    assert (report.block_task_runs, report.blocks_resolved) == (5, 1)
    assert report.block_lines_quarantined_again == 2
    view = _quarantine_view(lake)
    assert [(row[0], row[2], row[3]) for row in view] == [(2, 1, False), (7, 1, False)]
    assert view[0][4] == "not valid JSON (the line does not parse)"
    assert sorted(rows(lake, "task_runs")["line"].to_list()) == [1, 3, 4, 5, 6]


def test_the_rest_of_a_file_past_the_expansion_limit_lands_once_the_limit_is_raised(
    tmp_path: Path, lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = [json.dumps(task_record(random.Random(i), f"z{i}")) for i in range(200)]
    source = tmp_path / "big.jsonl.gz"
    source.write_bytes(gzip.compress("".join(r + "\n" for r in records).encode()))
    monkeypatch.setenv(MAX_EXPANDED_BYTES_ENV, "20000")
    first = jobs.run([source], lake, parse_rubric({}))
    cut = first.ingest.landed_task_runs
    assert 0 < cut < 200
    # Under the same limit the block is read again, lands nothing, and stays as it was.
    same = replay_quarantine(lake)
    assert (same.blocks, same.blocks_resolved) == (1, 0)
    assert len(_quarantine_view(lake)) == 1
    monkeypatch.delenv(MAX_EXPANDED_BYTES_ENV)
    raised = replay_quarantine(lake)
    assert (raised.block_task_runs, raised.blocks_resolved) == (200 - cut, 1)
    assert _quarantine_view(lake) == []
    assert sorted(rows(lake, "task_runs")["line"].to_list()) == list(range(1, 201))


def test_a_block_whose_source_is_gone_stays_unresolved(
    tmp_path: Path, lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEEP_BAD_LINES_ENV, "1")
    source = _fuzz_night(tmp_path / "night.jsonl", 5, 0)
    jobs.run([source], lake, parse_rubric({}))
    source.unlink()
    report = replay_quarantine(lake, parse_rubric(FUZZ_RUBRIC))
    assert (report.landed_task_runs, report.blocks, report.block_lines_read) == (1, 1, 0)
    assert [row[:3] for row in _quarantine_view(lake)] == [(2, 5, 4)]
