"""The statements `query` runs are named the same wherever a user reads them (its --help,
its refusal, the README), and each one named is one it runs."""

from __future__ import annotations

import re
import threading

import pytest
import typer.main

from pipeline.cli import app
from pipeline.warehouse.query import QueryRefused, check_read_only
from tests.paths import ROOT

NAMED = ["SELECT", "FROM", "WITH", "VALUES", "DESCRIBE", "SHOW", "SUMMARIZE", "EXPLAIN"]
EXAMPLES = {
    "SELECT": "select 1",
    "FROM": "from task_runs",
    "WITH": "with t as (select 1) select * from t",
    "VALUES": "values (1)",
    "DESCRIBE": "describe task_runs",
    "SHOW": "show tables",
    "SUMMARIZE": "summarize task_runs",
    "EXPLAIN": "explain select 1",
}


def words(text: str) -> list[str]:
    return [w for w in re.findall(r"[A-Z]{4,}|FROM|WITH|SHOW", text) if w in EXAMPLES]


def test_every_statement_named_runs() -> None:
    for word in NAMED:
        assert check_read_only(EXAMPLES[word]), word


def test_the_refusal_names_them() -> None:
    with pytest.raises(QueryRefused) as refused:
        check_read_only("create table t (x int)")
    assert words(str(refused.value).split("only ", 1)[1]) == NAMED


def test_the_help_names_them() -> None:
    command = typer.main.get_command(app).commands["query"]  # type: ignore[attr-defined]
    (sql,) = [p for p in command.params if p.name == "sql"]
    assert words(sql.help or "") == NAMED


def test_the_readme_names_them() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    (listed,) = re.findall(r"only\s+(SELECT/[A-Z/]+)\s+run", readme)
    assert listed.split("/") == NAMED


def test_a_pivot_without_in_is_refused_saying_how_to_write_it() -> None:
    # It creates an ENUM type before it selects (DuckDB types it MULTI); with IN it reads.
    with pytest.raises(QueryRefused, match=r"a PIVOT without IN creates a type first"):
        check_read_only("pivot task_runs on env_type using count(*)")
    assert check_read_only("pivot task_runs on env_type in ('a', 'b') using count(*)")


@pytest.mark.parametrize(
    "sql",
    [
        "/* c */ explain select 1",
        "-- how many runs\nexplain select 1",
        "explain /* x */ analyze select 1",
        "EXPLAIN/*x*/SELECT 1",
        "EXPLAIN (FORMAT JSON) SELECT 1",
        "EXPLAIN (FORMAT JSON, ANALYZE) SELECT 1",
        "explain (select 1)",
        "explain (format json) (select 1)",
        "explain (describe task_runs)",
        "explain (summarize select 1)",
    ],
)
def test_what_explain_explains_is_found_past_comments_and_options(sql: str) -> None:
    # A comment before EXPLAIN had been taken for the statement it explains: the same text
    # again, forever, before the time limit's timer started; "(FORMAT JSON)" had failed with
    # a parser error. A thread, so a loop fails the test instead of hanging it.
    outcome: list[object] = []

    def judge() -> None:
        try:
            outcome.append(check_read_only(sql))
        except QueryRefused as refused:
            outcome.append(refused)

    worker = threading.Thread(target=judge, daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), f"check_read_only looped on {sql!r}"
    assert outcome == [[sql]]


def test_an_explain_of_an_explain_is_refused_as_duckdb_refuses_it() -> None:
    with pytest.raises(QueryRefused, match="not a statement DuckDB can parse"):
        check_read_only("/* a */ explain -- b\n explain select 1")


def test_an_explain_of_a_write_is_still_refused_behind_a_comment() -> None:
    with pytest.raises(QueryRefused, match="not a read-only statement"):
        check_read_only("/* c */ explain analyze copy (select 1) to '/tmp/x.csv'")
