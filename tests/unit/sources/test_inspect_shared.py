"""Inspect tasks of one env type whose samples share ids are noted: a problem is
(problem_id, env_type), so compare would take their samples as the same problems."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.jobs import commands as jobs
from pipeline.sources.inspect.shared import shared_problem_notes, task_problems

NOTE = (
    "Inspect tasks of env type exploit share sample ids (2 of them, e.g. 1, 2; tasks a, b): "
    "compare and the views take their samples as the same problems; give samples ids "
    "unique across the tasks of an env type"
)


def test_one_note_per_env_type_whose_tasks_share_sample_ids() -> None:
    found = pl.DataFrame(
        {
            "env_type": ["exploit"] * 6 + ["patch", "patch"],
            "problem_id": ["1", "1", "2", "2", "3", "1", "1", "2"],
            "task": ["a", "b", "a", "b", "a", "a", "c", "c"],
        }
    )
    assert shared_problem_notes(found) == [NOTE]  # a row repeated changes nothing
    assert shared_problem_notes(found.filter(pl.col("task") != "b")) == []
    assert shared_problem_notes(found.head(0)) == []


def test_task_problems_reads_the_task_of_inspect_runs_only() -> None:
    runs = pl.LazyFrame(
        {
            "run_id": ["inspect:E1/1#1", "inspect:E1/1#2", "r-1", "inspect:E2/1#1"],
            "env_type": ["exploit"] * 4,
            "problem_id": ["1", "1", "1", "1"],
        }
    )
    metadata = pl.LazyFrame(
        [
            ("inspect:E1/1#1", "inspect.task", '"a\\"b"'),
            ("inspect:E1/1#2", "inspect.task", '"a\\"b"'),
            ("inspect:E1/1#1", "inspect.model", '"m"'),
            ("r-1", "inspect.task", '"other"'),
            # a task that is not a string (a .jsonl record may give one) names none
            ("inspect:E2/1#1", "inspect.task", '["a"]'),
        ],
        schema=["run_id", "key", "value"],
        orient="row",
    )
    assert task_problems(runs, metadata).collect().rows() == [("exploit", "1", 'a"b')]


def _inspect_file(path: Path, make: Callable[..., dict[str, Any]], task: Any, samples: int) -> Path:
    """A .jsonl file of records shaped as the Inspect reader writes them."""
    lines = []
    for sample in range(1, samples + 1):
        record = make(f"inspect:E-{task}/{sample}#1", "exploit", {"defect_matching": 1.0})
        record["problem_id"] = str(sample)
        record["grade"]["metadata"] = {"inspect": {"task": task, "sample_uuid": f"{task}{sample}"}}
        lines.append(json.dumps(record))
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_tasks_landed_by_two_ingests_are_noted_and_an_odd_task_takes_nothing_down(
    task_record: Callable[..., dict[str, Any]], tmp_path: Path
) -> None:
    lake = tmp_path / "lake"
    first = jobs.ingest([_inspect_file(tmp_path / "a.jsonl", task_record, "a", 3)], lake)
    assert not [note for note in first.notes if "share sample ids" in note]
    odd = _inspect_file(tmp_path / "odd.jsonl", task_record, ["a"], 1)
    second = jobs.ingest([_inspect_file(tmp_path / "b.jsonl", task_record, "b", 2), odd], lake)
    assert second.landed_task_runs == 3
    assert [note for note in second.notes if "share sample ids" in note] == [NOTE]
