"""An Inspect sample's attempt (its uuid) lands once: eval_retry carries a finished sample
over into the retry's log under a new eval id, so under a new run_id, with the same uuid."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import polars as pl

from pipeline.ingest.batch import build_batch
from pipeline.ingest.dedupe import ATTEMPTS_SCHEMA, dedupe
from pipeline.sources.lines import Lines


def _batch(records: list[dict[str, Any]]) -> Any:
    frame = pl.DataFrame(
        {
            "row_nr": pl.Series(range(len(records)), dtype=pl.UInt32),
            "source": "f.jsonl",
            "line": pl.Series(range(1, len(records) + 1), dtype=pl.Int64),
            "raw": [json.dumps(record) for record in records],
            "problem": pl.Series([None] * len(records), dtype=pl.String),
        }
    )
    return build_batch(Lines(frame=frame, files=["f.jsonl"]), ["exploit"], "b")


def _sample(
    task_record: Callable[..., dict[str, Any]], run_id: str, uuid: str | None
) -> dict[str, Any]:
    record = task_record(run_id, "exploit", {"defect_matching": 1.0})
    if uuid is not None:
        record["grade"]["metadata"] = {"inspect": {"sample_uuid": uuid, "eval_id": run_id}}
    return record


def _nothing() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    runs = pl.DataFrame(
        schema={
            "run_id": pl.String,
            "content_hash": pl.String,
            "source": pl.String,
            "line": pl.Int64,
        }
    )
    held = pl.DataFrame(
        schema={"source": pl.String, "line": pl.Int64, "line_end": pl.Int64, "raw": pl.String}
    )
    return runs, runs, held


def test_an_attempt_seen_earlier_in_the_batch_under_another_run_id_is_a_duplicate(
    task_record: Callable[..., dict[str, Any]],
) -> None:
    batch = _batch(
        [
            _sample(task_record, "inspect:E1/1#1", "U1"),
            _sample(task_record, "inspect:E1/2#1", "U2"),
            _sample(task_record, "inspect:E2/1#1", "U1"),  # carried over by the retry
            _sample(task_record, "inspect:E2/2#1", "U3"),  # run again: a new attempt
        ]
    )
    result = dedupe(batch, *_nothing())
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
    batch = _batch(
        [
            _sample(task_record, "inspect:E2/1#1", "U1"),
            _sample(task_record, "inspect:E2/2#1", "U9"),
        ]
    )
    # run_metadata keeps a value as JSON text, the lake's and the batch's alike.
    landed = pl.DataFrame(
        {"attempt": ['"U1"'], "run_id": ["inspect:E1/1#1"]}, schema=ATTEMPTS_SCHEMA
    )
    named = batch.tables["run_metadata"].filter(pl.col("key") == "inspect.sample_uuid")
    assert named["value"].to_list() == ['"U1"', '"U9"']
    result = dedupe(batch, *_nothing(), landed_attempts=landed)
    assert result.batch.tables["task_runs"]["run_id"].to_list() == ["inspect:E2/2#1"]
    assert result.duplicate_rows.select("line", "run_id").rows() == [(1, "inspect:E1/1#1")]
    assert result.skipped_duplicates == 1


def test_the_same_run_id_and_records_without_an_attempt_are_left_to_the_run_id_checks(
    task_record: Callable[..., dict[str, Any]],
) -> None:
    batch = _batch(
        [
            _sample(task_record, "inspect:E1/1#1", "U1"),  # the lake holds this very run
            _sample(task_record, "r-1", "U2"),  # not an Inspect run_id: no attempt
            _sample(task_record, "r-2", "U2"),
            _sample(task_record, "r-3", None),
        ]
    )
    landed = pl.DataFrame(
        {"attempt": ['"U1"', '"U1"'], "run_id": ["inspect:E0/1#1", "inspect:E1/1#1"]},
        schema=ATTEMPTS_SCHEMA,
    )
    result = dedupe(batch, *_nothing(), landed_attempts=landed)
    assert result.batch.tables["task_runs"]["run_id"].to_list() == [
        "inspect:E1/1#1",
        "r-1",
        "r-2",
        "r-3",
    ]
    assert result.skipped_duplicates == 0
