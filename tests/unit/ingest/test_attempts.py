"""An Inspect sample's attempt (its uuid) lands once: eval_retry carries a finished sample
over into the retry's log under a new eval id, so under a new run_id, with the same uuid."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.jobs.ingest import ingest_locked
from pipeline.storage import lake as lk
from tests.batches import LANDED_RUNS, batch_of, deduped


def _sample(
    task_record: Callable[..., dict[str, Any]], run_id: str, uuid: str | None
) -> dict[str, Any]:
    record = task_record(run_id, "exploit", {"defect_matching": 1.0})
    if uuid is not None:
        record["grade"]["metadata"] = {"inspect": {"sample_uuid": uuid, "eval_id": run_id}}
    return record


def test_an_attempt_seen_earlier_in_the_batch_under_another_run_id_is_a_duplicate(
    task_record: Callable[..., dict[str, Any]],
) -> None:
    batch = batch_of(
        [
            _sample(task_record, "inspect:E1/1#1", "U1"),
            _sample(task_record, "inspect:E1/2#1", "U2"),
            _sample(task_record, "inspect:E2/1#1", "U1"),  # carried over by the retry
            _sample(task_record, "inspect:E2/2#1", "U3"),  # run again: a new attempt
        ]
    )
    result = deduped(batch)
    assert result.batch.tables["task_runs"]["run_id"].to_list() == [
        "inspect:E1/1#1",
        "inspect:E1/2#1",
        "inspect:E2/2#1",
    ]
    assert result.skipped_duplicates == 1
    # Skipped as a copy of the run that landed: its place, that run's id.
    assert result.duplicate_rows.select("line", "run_id").rows() == [(3, "inspect:E1/1#1")]
    kept = set(result.batch.tables["task_runs"]["run_id"])
    assert set(result.batch.tables["task_components"]["run_id"]) == kept
    assert set(result.batch.tables["run_metadata"]["run_id"]) == kept


def test_an_attempt_the_lake_holds_under_another_run_id_is_a_duplicate_of_it(
    task_record: Callable[..., dict[str, Any]],
) -> None:
    batch = batch_of(
        [
            _sample(task_record, "inspect:E2/1#1", "U1"),
            _sample(task_record, "inspect:E2/2#1", "U9"),
        ]
    )
    # run_metadata keeps a value as JSON text, the lake's and the batch's alike.
    named = batch.tables["run_metadata"].filter(pl.col("key") == "inspect.sample_uuid")
    assert named["value"].to_list() == ['"U1"', '"U9"']
    result = deduped(batch, landed_attempts=[('"U1"', "inspect:E1/1#1", "b1")])
    assert result.batch.tables["task_runs"]["run_id"].to_list() == ["inspect:E2/2#1"]
    assert result.duplicate_rows.select("line", "run_id").rows() == [(1, "inspect:E1/1#1")]
    assert result.skipped_duplicates == 1


def test_the_same_run_id_and_records_without_an_attempt_are_left_to_the_run_id_checks(
    task_record: Callable[..., dict[str, Any]],
) -> None:
    batch = batch_of(
        [
            _sample(task_record, "inspect:E1/1#1", "U1"),  # the lake holds this very run
            _sample(task_record, "r-1", "U2"),  # not an Inspect run_id: no attempt
            _sample(task_record, "r-2", "U2"),
            _sample(task_record, "r-3", None),
        ]
    )
    first = batch.tables["task_runs"].row(0, named=True)
    landed_runs = [{key: first[key] for key in LANDED_RUNS}]
    landed = [('"U1"', "inspect:E0/1#1", "b0"), ('"U1"', "inspect:E1/1#1", "b1")]
    result = deduped(batch, landed_runs, landed)
    assert result.batch.tables["task_runs"]["run_id"].to_list() == ["r-1", "r-2", "r-3"]
    # a plain duplicate of itself (its run_id and content), not of the attempt's first run
    assert result.duplicate_rows.select("line", "run_id").rows() == [(1, "inspect:E1/1#1")]


def test_only_a_non_empty_uuid_is_an_attempt(task_record: Callable[..., dict[str, Any]]) -> None:
    records = [_sample(task_record, f"inspect:E{i}/1#1", "U") for i in range(4)]
    records[0]["grade"]["metadata"]["inspect"]["sample_uuid"] = None
    records[1]["grade"]["metadata"]["inspect"]["sample_uuid"] = None
    records[2]["grade"]["metadata"]["inspect"]["sample_uuid"] = ""
    records[3]["grade"]["metadata"]["inspect"]["sample_uuid"] = ""
    result = deduped(batch_of(records))
    assert result.batch.tables["task_runs"].height == 4
    assert result.skipped_duplicates == 0


def test_an_attempt_whose_first_copy_clashes_lands_from_the_next(
    task_record: Callable[..., dict[str, Any]],
) -> None:
    # E1/1#1 landed before with other content: this copy clashes and is quarantined, so
    # the attempt has not landed, and its copy under E2 lands.
    batch = batch_of(
        [
            _sample(task_record, "inspect:E1/1#1", "U1"),
            _sample(task_record, "inspect:E2/1#1", "U1"),
        ]
    )
    landed_runs = [
        {"run_id": "inspect:E1/1#1", "content_hash": "other", "source": "old", "line": 1}
    ]
    result = deduped(batch, landed_runs)
    assert result.batch.tables["task_runs"]["run_id"].to_list() == ["inspect:E2/1#1"]
    assert result.batch.quarantine["line"].to_list() == [1]
    assert result.skipped_duplicates == 0


def test_attempts_are_found_across_chunks_and_ingests(
    task_record: Callable[..., dict[str, Any]], tmp_path: Path
) -> None:
    # One line a chunk: a copy lands in a later chunk than its first (staged, found through
    # the attempt index), or in a later ingest (read from the lake when the index is built).
    first = [_sample(task_record, f"inspect:E1/{i}#1", f"U{i}") for i in range(3)]
    retry = [_sample(task_record, f"inspect:E2/{i}#1", f"U{i}") for i in (0, 2)]
    rerun = [_sample(task_record, "inspect:E2/1#1", "U9")]  # a sample run again
    log1 = tmp_path / "log1.jsonl"
    log2 = tmp_path / "log2.jsonl"
    log1.write_text("".join(json.dumps(r) + "\n" for r in first))
    log2.write_text("".join(json.dumps(r) + "\n" for r in [*retry, *rerun]))
    lake = tmp_path / "lake"
    with lk.lake_lock(lake):
        together = ingest_locked([log1, log2], lake, chunk_bytes=1)
    assert (together.landed_task_runs, together.skipped_duplicates) == (4, 2)
    other = tmp_path / "other"
    with lk.lake_lock(other):
        ingest_locked([log1], other, chunk_bytes=1)
    with lk.lake_lock(other):
        later = ingest_locked([log2], other, chunk_bytes=1)
    assert (later.landed_task_runs, later.skipped_duplicates) == (1, 2)
    for root in (lake, other):
        landed = pl.read_parquet(root / "task_runs" / "*.parquet")["run_id"].sort().to_list()
        assert landed == ["inspect:E1/0#1", "inspect:E1/1#1", "inspect:E1/2#1", "inspect:E2/1#1"]


def test_a_copy_repeats_the_attempts_earliest_run_in_a_lake_that_holds_two(
    task_record: Callable[..., dict[str, Any]],
) -> None:
    # A lake written before attempts were deduped may hold one attempt under two run_ids.
    batch = batch_of([_sample(task_record, "inspect:E3/1#1", "U1")])
    landed = [
        ('"U1"', "inspect:E2/1#1", "20261202T000000Z-b"),
        ('"U1"', "inspect:E1/1#1", "20261201T000000Z-a"),
    ]
    result = deduped(batch, landed_attempts=landed)
    assert result.duplicate_rows.select("line", "run_id").rows() == [(1, "inspect:E1/1#1")]


def test_a_copy_of_a_carried_over_line_repeats_the_run_it_repeats(
    task_record: Callable[..., dict[str, Any]],
) -> None:
    # The same carried-over record twice, written differently (same run_id and content):
    # both are copies of the run the attempt landed as, never of the first one's run_id.
    carried = _sample(task_record, "inspect:E2/1#1", "U1")
    batch = batch_of([carried, carried], indent=[None, 1])
    result = deduped(batch, landed_attempts=[('"U1"', "inspect:E1/1#1", "b1")])
    assert result.batch.tables["task_runs"].is_empty()
    assert result.duplicate_rows.select("line", "run_id").sort("line").rows() == [
        (1, "inspect:E1/1#1"),
        (2, "inspect:E1/1#1"),
    ]


def test_an_attempt_landed_with_other_content_is_its_log_changed_not_a_new_attempt(
    task_record: Callable[..., dict[str, Any]],
) -> None:
    # The same sample (run_id and uuid) read again from a log that changed since (an older
    # version read it while its eval ran): no new attempt to give a run_id. A record without
    # an attempt, or whose run_id the lake holds as another attempt, keeps the advice to give
    # its new attempt its own run_id.
    batch = batch_of(
        [
            _sample(task_record, "inspect:E1/1#1", "U1"),
            _sample(task_record, "r-1", None),
            _sample(task_record, "inspect:E1/2#1", "U3"),  # the lake's run of it is U2's
        ]
    )
    landed_runs = [
        {"run_id": run_id, "content_hash": "an older text", "source": "old.eval", "line": 3}
        for run_id in ("inspect:E1/1#1", "r-1", "inspect:E1/2#1")
    ]
    result = deduped(batch, landed_runs, [('"U1"', "inspect:E1/1#1", "b0")])
    assert result.batch.tables["task_runs"].height == 0
    assert result.batch.quarantine.select("line", "reason").rows() == [
        (
            1,
            "task run_id 'inspect:E1/1#1' already landed with different content (from "
            "old.eval:3); the same attempt (its sample uuid), so its log changed since it was "
            "read (scored again, or read while its eval ran by a version of the pipeline before "
            "2026-12-05): the run landed first stands",
        ),
        (
            2,
            "task run_id 'r-1' already landed with different content (from old.eval:3); give "
            "the new attempt its own run_id",
        ),
        (
            3,
            "task run_id 'inspect:E1/2#1' already landed with different content (from "
            "old.eval:3); give the new attempt its own run_id",
        ),
    ]


def test_a_changed_copy_of_a_carried_over_attempt_repeats_the_landed_run_too(
    task_record: Callable[..., dict[str, Any]],
) -> None:
    # The lake holds attempt U1 as E1/1#1. The batch holds E2/1#1 (U1) twice, the second
    # with another score: both are that attempt, so both repeat E1/1#1. The second had been
    # quarantined as "appears again with different content (first at f.jsonl:1)", naming a
    # copy that lands nowhere.
    first = _sample(task_record, "inspect:E2/1#1", "U1")
    changed = _sample(task_record, "inspect:E2/1#1", "U1")
    changed["grade"]["subscores"]["defect_matching"] = 0.5
    other = _sample(task_record, "inspect:E2/1#1", "U7")  # the same run_id, another attempt
    result = deduped(
        batch_of([first, changed, other]), landed_attempts=[('"U1"', "inspect:E1/1#1", "b1")]
    )
    assert result.batch.tables["task_runs"].is_empty()
    assert result.duplicate_rows.sort("line").select("line", "run_id").rows() == [
        (1, "inspect:E1/1#1"),
        (2, "inspect:E1/1#1"),
    ]
    assert result.skipped_duplicates == 2
    # Another attempt under that run_id is no copy of U1: it still clashes.
    assert result.batch.quarantine.select("line", "reason").rows() == [
        (
            3,
            "task run_id 'inspect:E2/1#1' appears again with different content (first at "
            "f.jsonl:1); give each attempt its own run_id",
        )
    ]
