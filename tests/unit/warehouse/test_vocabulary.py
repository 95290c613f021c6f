"""The words the views compare data with are the ones the pipeline writes: a run's status is
born in pipeline/tasks/formulas.py, and every literal the SQL compares `status` with, and the
values schema.yml accepts for it, are among them (a renamed status fails here, not in a view
that silently counts nothing)."""

from __future__ import annotations

import re

from pipeline.core.sql import SQL_DIR
from schemas.tasks import STATUSES
from tools.warehouse_docs import load

# `status = 'x'`, `status <> 'x'`, `status in ('x', 'y')`: the literals after them.
_COMPARED = re.compile(r"\bstatus\s*(?:=|<>|!=|\bin\b)\s*\(?((?:\s*'[^']*'\s*,?)+)", re.I)


def status_literals(sql: str) -> set[str]:
    return {
        literal
        for match in _COMPARED.finditer(sql)
        for literal in re.findall(r"'([^']*)'", match.group(1))
    }


def test_the_pattern_finds_each_way_sql_compares_a_status() -> None:
    sql = "where status = 'a' and t.status <> 'b' or status in ('c', 'd') and x = 'e'"
    assert status_literals(sql) == {"a", "b", "c", "d"}


def test_every_status_the_sql_compares_with_is_one_the_pipeline_writes() -> None:
    found = {
        path.relative_to(SQL_DIR).as_posix(): status_literals(path.read_text("utf-8"))
        for path in sorted(SQL_DIR.rglob("*.sql"))
    }
    assert set().union(*found.values()) >= {"scored", "grader_error"}
    strays = {name: sorted(words - set(STATUSES)) for name, words in found.items()}
    assert not {name: words for name, words in strays.items() if words}


def test_the_documented_statuses_are_the_written_ones() -> None:
    (task_runs,) = [model for model in load() if model.name == "task_runs"]
    (status,) = [column for column in task_runs.columns if column.name == "status"]
    accepted = [
        test["accepted_values"]["values"] for test in status.tests if "accepted_values" in test
    ]
    assert accepted == [list(STATUSES)]


def test_the_views_gate_needs_as_many_pairs_as_compares() -> None:
    from pipeline.compare.stats import MIN_PAIRS_FOR_INTERVAL

    view = (SQL_DIR / "marts" / "version_regressions.sql").read_text("utf-8")
    assert f"paired_problems < {MIN_PAIRS_FOR_INTERVAL})" in view
