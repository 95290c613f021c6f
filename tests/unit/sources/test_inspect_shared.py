"""Inspect tasks of one env type whose samples share ids are noted: a problem is
(problem_id, env_type), so compare would take their samples as the same problems."""

from __future__ import annotations

import polars as pl

from pipeline.sources.inspect.shared import shared_problem_notes, task_problems


def test_one_note_per_env_type_whose_tasks_share_sample_ids() -> None:
    found = pl.DataFrame(
        {
            "env_type": ["exploit"] * 5 + ["patch", "patch"],
            "problem_id": ["1", "1", "2", "2", "3", "1", "2"],
            "task": ["a", "b", "a", "b", "a", "c", "c"],
        }
    )
    # split over two parts, one row repeated: the same note
    assert shared_problem_notes([found.head(3), found.tail(5)]) == [
        "Inspect tasks of env type exploit share sample ids (2 of them, e.g. 1, 2; tasks a, b): "
        "compare and the views take their samples as the same problems; give samples ids "
        "unique across the tasks of an env type"
    ]
    assert shared_problem_notes([found.filter(pl.col("task") != "b")]) == []
    assert shared_problem_notes([]) == []


def test_task_problems_reads_the_task_of_inspect_runs_only() -> None:
    runs = pl.DataFrame(
        {
            "run_id": ["inspect:E1/1#1", "inspect:E1/1#2", "r-1"],
            "env_type": ["exploit"] * 3,
            "problem_id": ["1", "1", "1"],
        }
    )
    metadata = pl.DataFrame(
        {
            "run_id": ["inspect:E1/1#1", "inspect:E1/1#2", "inspect:E1/1#1", "r-1"],
            "key": ["inspect.task", "inspect.task", "inspect.model", "inspect.task"],
            "value": ['"a\\"b"', '"a\\"b"', '"m"', '"other"'],
        }
    )
    assert task_problems(runs, metadata).rows() == [("exploit", "1", 'a"b')]
