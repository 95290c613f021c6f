"""A killed Inspect eval's retry, told from the lake: a run of the same task id, of another
eval, graded at least a second after the killed log began (Inspect writes when an eval
began to the second, and eval_set retries a failed eval at once). The first such run, by
when it was graded, is named."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl

from pipeline.jobs.earlier import Retries
from pipeline.sources.inspect.table import RunningEval

BEGAN = datetime(2026, 12, 5, 4, 0, 0, tzinfo=UTC)
KILLED = RunningEval(source="killed.eval", task_id="T1", eval_id="E1", created=BEGAN)


class Store:
    """The two landed tables the lookup reads, as a LakeStore gives them."""

    def __init__(self, runs: list[tuple[str, timedelta, Any]]) -> None:
        # (run_id, graded after BEGAN, its inspect.task_id value as JSON)
        self.runs = pl.DataFrame(
            {
                "run_id": [run_id for run_id, _, _ in runs],
                "source": ["retry.eval"] * len(runs),
                "graded_at": [BEGAN + after for _, after, _ in runs],
            },
            schema={
                "run_id": pl.String,
                "source": pl.String,
                "graded_at": pl.Datetime("us", "UTC"),
            },
        )
        ids = [run_id for run_id, _, _ in runs]
        # Beside each task id, metadata of other keys whose values are not strings: never
        # decoded as one.
        self.meta = pl.DataFrame(
            {
                "run_id": ids * 2,
                "key": ["inspect.task_id"] * len(ids) + ["sample.found"] * len(ids),
                "value": [json.dumps(task) for _, _, task in runs] + ['["d1", "d2"]'] * len(ids),
            }
        )

        self.reads: list[str] = []

    def landed(self, table: str, tx: Any = None) -> pl.LazyFrame:
        self.reads.append(table)
        return {"task_runs": self.runs, "run_metadata": self.meta}[table].lazy()


SECOND = timedelta(seconds=1)


def find(runs: list[tuple[str, timedelta, Any]]) -> str | None:
    return Retries(Store(runs)).find(KILLED)  # type: ignore[arg-type]


def test_a_run_of_the_same_task_from_another_eval_a_second_later_is_a_retry() -> None:
    retries = Retries(Store([("inspect:E2/ex-0#1", SECOND, "T1")]))  # type: ignore[arg-type]
    assert retries.find(KILLED) == "E2"
    assert retries.found == {"killed.eval": "inspect:E2/ex-0#1"}


def test_within_the_second_the_killed_log_began_it_may_be_the_attempt_before() -> None:
    # Or a retry: Inspect records nothing else that tells them apart (a retry has a new eval
    # id and run id, the task id every attempt has; eval.created is to the second), so the
    # log stays "still running" rather than be taken for retried by the attempt before it.
    assert find([("inspect:E0/ex-0#1", SECOND - timedelta(microseconds=1), "T1")]) is None


def test_its_own_runs_other_tasks_and_other_sources_are_not() -> None:
    assert find([("inspect:E1/ex-0#1", 9 * SECOND, "T1")]) is None  # its own eval
    assert find([("inspect:E2/ex-0#1", 9 * SECOND, "T2")]) is None  # another task
    assert find([("run-7", 9 * SECOND, "T1")]) is None  # a .jsonl record's metadata
    assert find([("inspect:E2/ex-0#1", 9 * SECOND, 7)]) is None  # not a task id


def test_of_several_retries_the_first_graded_run_is_named() -> None:
    runs = [
        ("inspect:E3/b#1", 5 * SECOND, "T1"),
        ("inspect:E9/a#1", 2 * SECOND, "T1"),
        ("inspect:E3/a#1", 2 * SECOND, "T1"),
    ]
    retries = Retries(Store(runs))  # type: ignore[arg-type]
    assert retries.find(KILLED) == "E3"
    assert retries.found == {"killed.eval": "inspect:E3/a#1"}


def test_the_lake_is_read_once_however_many_logs_are_looked_up() -> None:
    # An ingest of many logs left at "started" read the lake's runs for each: it reads them
    # once, at the first, and each log after it is looked up in what was read.
    store = Store([("inspect:E2/ex-0#1", SECOND, "T1"), ("inspect:E5/ex-0#1", SECOND, "T4")])
    retries = Retries(store)  # type: ignore[arg-type]
    killed = [
        RunningEval(source=f"killed{n}.eval", task_id=f"T{n}", eval_id=f"E{n}", created=BEGAN)
        for n in range(1, 5)
    ]
    assert [retries.find(log) for log in killed] == ["E2", None, None, "E5"]
    assert sorted(store.reads) == ["run_metadata", "task_runs"]
    assert retries.found == {
        "killed1.eval": "inspect:E2/ex-0#1",
        "killed4.eval": "inspect:E5/ex-0#1",
    }
