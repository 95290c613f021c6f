"""Read-only analysts: `pipeline query` reads the views and refuses anything that writes."""

from __future__ import annotations

import hashlib
import io
import json
import math
import random
from pathlib import Path

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.cli import query as query_command
from pipeline.jobs import commands as jobs
from pipeline.rubric import parse_rubric
from pipeline.warehouse import WarehouseError
from pipeline.warehouse.query import (
    QueryError,
    QueryRefused,
    as_markdown,
    check_read_only,
    readable,
    run_query,
)
from tests.strategies import surface_report, task_record

runner = CliRunner()


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("query")
    rng = random.Random(3)
    records = [task_record(rng, f"q{i}") for i in range(4)]
    records[0]["agent"] = "x'); drop view task_runs; --"
    source = root / "a.jsonl"
    lines = [json.dumps(r) for r in records] + [json.dumps(surface_report(rng, "s1")), "bad"]
    source.write_text("\n".join(lines) + "\n")
    lake = root / "lake"
    jobs.run([source], lake, parse_rubric({}))
    return lake


def snapshot(lake: Path) -> dict[str, str]:
    """Every file under the lake (and beside it) with a hash of its bytes."""
    return {
        str(p.relative_to(lake.parent)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(lake.parent.rglob("*"))
        if p.is_file()
    }


def invoke(lake: Path, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["query", *args, "--lake", str(lake)])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.slow
def test_views_read_as_a_table_json_and_csv(lake: Path) -> None:
    code, out, _ = invoke(lake, "select count(*) as runs from task_runs")
    assert code == 0
    assert "runs" in out and "4" in out
    code, out, _ = invoke(lake, "select run_id, agent from task_runs order by run_id", "--json")
    assert code == 0
    rows = json.loads(out)
    assert [r["run_id"] for r in rows] == ["q0", "q1", "q2", "q3"]
    assert rows[0]["agent"] == "x'); drop view task_runs; --"
    code, out, _ = invoke(lake, "select run_id, target from surface_findings limit 1", "--csv")
    assert code == 0
    header, first = out.splitlines()[:2]
    assert header == "run_id,target"
    assert first.startswith("s1,")
    code, out, _ = invoke(lake, "select reason from quarantine", "--json")
    assert json.loads(out) == [{"reason": "not valid JSON (the line does not parse)"}]


@pytest.mark.slow
def test_every_reading_form_runs(lake: Path) -> None:
    for sql in (
        "from by_agent",
        "with t as (select 1 as a) select * from t",
        "values (1), (2)",
        "describe task_runs",
        "show tables",
        "summarize select score from task_runs",
        "explain select * from task_runs",
        "explain analyze select count(*) from task_runs",
        "select 1; select 2",
    ):
        results = list(run_query(lake, sql))
        assert results and all(r.frame.width > 0 for r in results), sql


WRITES = [
    "insert into _meta values ('k', 'v')",
    "update _meta set value = 'x'",
    "delete from _meta",
    "create table t as select 1",
    "create or replace view task_runs as select 1",
    "drop view task_runs",
    "alter view task_runs rename to gone",
    "attach '{lake}/other.duckdb' as other",
    "detach warehouse",
    "copy (select * from task_runs) to '{lake}/task_runs/stolen.parquet'",
    "copy (select 1) to '/tmp/outside.csv'",
    "copy _meta from '{lake}/x.csv'",
    "export database '{lake}/export'",
    "install httpfs",
    "load httpfs",
    "set enable_external_access = true",
    "reset lock_configuration",
    "pragma enable_profiling",
    "checkpoint",
    "call pragma_version()",
    "vacuum",
    "begin transaction",
    "prepare p as select 1",
    "set variable x = 1",
    "create macro m() as 1",
    "explain analyze copy (select 1) to '{lake}/task_runs/x.parquet'",
    "explain analyze create table t as select 1",
    "select 1; drop view task_runs",
]


@pytest.mark.parametrize("template", WRITES)
def test_a_statement_that_would_write_is_refused(lake: Path, template: str) -> None:
    before = snapshot(lake)
    sql = template.format(lake=lake)
    with pytest.raises(QueryRefused, match=r"not a read-only statement|cannot tell"):
        check_read_only(sql)
    code, _, err = invoke(lake, sql)
    assert code == 2
    assert err.startswith("refused: ") and "refused: refused" not in err
    assert len(err.strip().splitlines()) == 1
    assert snapshot(lake) == before
    assert not Path("/tmp/outside.csv").exists()


def test_no_file_can_be_read_not_even_the_lakes(lake: Path) -> None:
    for sql in (
        "select * from read_text('/etc/hostname')",
        "select * from read_csv('/proc/self/status')",
        "select * from read_blob('/etc/passwd')",
        "select * from read_parquet('/tmp/*.parquet')",
        # An analyst's statement naming the lake's own files (the text is the attack).
        f"select * from read_parquet('{lake}/task_runs/*.parquet')",  # noqa: S608
        f"select * from read_json('{lake}/_state/current_rubric.json')",  # noqa: S608
        "select * from glob('/etc/*')",
    ):
        with pytest.raises(QueryError, match=r"Permission|disabled"):
            list(run_query(lake, sql))
    code, _, err = invoke(lake, "select * from read_text('/etc/hostname')")
    assert code == 1
    assert "query failed" in err


def test_a_query_past_its_memory_writes_nothing_beside_the_warehouse(
    lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # DuckDB had spilled it to <lake>/warehouse.duckdb.tmp, up to 90% of the free disk.
    monkeypatch.setenv("PIPELINE_QUERY_MEMORY_BYTES", str(64 * 1024 * 1024))
    big_sort = (
        "select count(*) from (select range::varchar || repeat('x', 30) as s "
        "from range(5000000) order by s desc)"
    )
    before = sorted(lake.iterdir())
    code, _, err = invoke(lake, big_sort)
    assert code == 1
    assert "needs more than the memory limit of 67108864 bytes" in " ".join(err.split())
    assert sorted(lake.iterdir()) == before


def test_install_is_refused_by_its_own_name() -> None:
    # DuckDB files INSTALL as a LOAD: "LOAD is not a read-only statement" puzzled its writer.
    with pytest.raises(QueryRefused, match=r"^INSTALL is not a read-only statement"):
        check_read_only("/* x */ install httpfs")


def test_a_statement_the_python_module_cannot_name_is_refused() -> None:
    # Its StatementType is unknown to the Python module: a ValueError had failed the check.
    with pytest.raises(QueryRefused, match=r"^UPDATE is not a read-only statement"):
        check_read_only("update extensions")


def test_a_variant_inside_a_list_is_shown_as_text(lake: Path) -> None:
    code, out, err = invoke(lake, "select [1::variant, 'a'::variant] as l", "--json")
    assert code == 0, err
    assert json.loads(out) == [{"l": "[1, a]"}]


def test_a_variant_column_is_shown_as_text(lake: Path) -> None:
    # Arrow hands DuckDB's VARIANT over as an extension type: `select * from duckdb_settings()`
    # had failed converting it.
    sql = "select * from duckdb_settings() where name = 'threads'"
    code, out, err = invoke(lake, sql, "--json")
    assert code == 0, err
    (row,) = json.loads(out)
    assert row["typed_value"] == row["value"]


def test_not_sql_is_a_usage_error(lake: Path) -> None:
    code, _, err = invoke(lake, "selec * frm nowhere")
    assert code == 2 and "parse" in err
    code, _, err = invoke(lake, "   ")
    assert code == 2 and "no statement" in err


def test_sql_on_standard_input(lake: Path) -> None:
    # A .sql file that starts with a -- comment, as analysts keep them: query - < file.sql
    script = "-- how many runs\nselect count(*) as n from task_runs"
    done = runner.invoke(app, ["query", "-", "--lake", str(lake), "--json"], input=script)
    assert done.exit_code == 0, done.stderr
    assert json.loads(done.stdout) == [{"n": 4}]
    limit = query_command.MAX_STDIN_SQL_BYTES
    padded = "select 1 as n" + " " * (limit - len("select 1 as n"))
    at_limit = runner.invoke(app, ["query", "-", "--lake", str(lake), "--json"], input=padded)
    assert at_limit.exit_code == 0 and json.loads(at_limit.stdout) == [{"n": 1}]
    too_long = runner.invoke(app, ["query", "-", "--lake", str(lake)], input=padded + " ")
    assert too_long.exit_code == 2 and f"over {limit} bytes" in too_long.stderr
    not_utf8 = runner.invoke(app, ["query", "-", "--lake", str(lake)], input=b"select '\xff'")
    assert not_utf8.exit_code == 2 and "not UTF-8" in not_utf8.stderr


def test_sql_on_a_closed_standard_input_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    import typer

    monkeypatch.setattr(sys, "stdin", None)  # what Python gives a process started with <&-
    with pytest.raises(typer.Exit) as ended:
        query_command._stdin_sql()
    assert ended.value.exit_code == 2
    assert "standard input, which is closed" in capsys.readouterr().err


def test_a_missing_warehouse_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(WarehouseError, match="no warehouse at"):
        list(run_query(tmp_path, "select 1"))


def test_the_command_line_exit_codes(lake: Path) -> None:
    code, out, err = invoke(lake, "select count(*) as n from task_runs", "--json")
    assert code == 0, err
    assert json.loads(out) == [{"n": 4}]
    code, _, err = invoke(lake, "drop view task_runs")
    assert code == 2
    assert "DROP is not a read-only statement" in err
    # One line, said once: the refusal's prefix comes from the CLI, not also from the message.
    assert err.count("refused") == 1 and err.strip().count("\n") == 0


def test_the_documented_duckdb_readonly_door_cannot_change_the_warehouse(lake: Path) -> None:
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    try:
        with pytest.raises(duckdb.Error, match="read-only"):
            con.execute("drop view task_runs")
        assert con.execute("select count(*) from task_runs").fetchone() == (4,)
    finally:
        con.close()


# --------------------------------------------------------------------------- what a person reads


def _tokens(text: str) -> set[str]:
    """Whitespace-separated words of ``text``, with table rules and brackets stripped."""
    return {word.strip("│┃|[](),;") for word in text.split()}


def test_readable_rounds_floats_and_keeps_everything_else() -> None:
    frame = pl.DataFrame(
        {
            "f": [1 / 3, 1234567.891, 12.34567, -0.000123456, 2.0, None],
            "i": [1, 2, 3, 4, 5, None],
            "s": ["a", "b|c", None, "d", "e", "f"],
            "l": [["x"], [], None, ["y", "z"], ["w"], ["v"]],
        }
    )
    shown = readable(frame)
    assert shown.get_column("f").to_list() == [
        "0.3333",
        "1234568",
        "12.35",
        "-0.0001235",
        "2",
        "NULL",
    ]
    assert shown.get_column("i").to_list() == ["1", "2", "3", "4", "5", "NULL"]
    assert shown.get_column("s").to_list() == ["a", "b|c", "NULL", "d", "e", "f"]
    assert shown.get_column("l").to_list() == ['["x"]', "[]", "NULL", '["y","z"]', '["w"]', '["v"]']
    md = as_markdown(frame.head(2)).splitlines()
    assert md == [
        "| f | i | s | l |",
        "|---|---|---|---|",
        '| 0.3333 | 1 | a | ["x"] |',
        "| 1234568 | 2 | b\\|c | [] |",
    ]


def test_markdown_shows_control_characters_from_data_as_escapes() -> None:
    # Meant for pasting, and read on a terminal: an ESC sequence in a name had reached it raw.
    frame = pl.DataFrame({"\x1b[2Jname": ["\x1b]0;title\x07", "a\u202eb", "plain"]})
    assert as_markdown(frame).splitlines() == [
        "| \\x1b[2Jname |",
        "|---|",
        "| \\x1b]0;title\\x07 |",
        "| a\\u202eb |",
        "| plain |",
    ]


@pytest.mark.parametrize(
    "sql",
    ["select * from by_agent order by agent, agent_version, env_type", "select * from task_runs"],
)
def test_the_table_shows_every_number_whole_at_80_columns(lake: Path, sql: str) -> None:
    code, out, _ = invoke(lake, sql, "--format", "json")
    assert code == 0
    rows = json.loads(out)
    result = runner.invoke(app, ["query", sql, "--lake", str(lake)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.stderr
    table = result.stdout
    assert "…" not in table
    assert max(len(line) for line in table.splitlines()) <= 80
    words = _tokens(table)
    frame = next(iter(run_query(lake, sql))).frame
    shown = readable(frame)
    checked = 0
    for name, dtype in frame.schema.items():
        if not dtype.is_numeric():
            continue
        for value, text in zip(
            [row[name] for row in rows], shown.get_column(name).to_list(), strict=True
        ):
            if value is None:
                continue
            # Rounded for reading, but the same number, shown whole.
            assert math.isclose(float(text), value, rel_tol=5e-4, abs_tol=0.5 * (abs(value) >= 1e4))
            assert text in words, (name, text)
            checked += 1
    assert checked >= len(rows)
    for row in rows:
        assert str(row.get("run_id", row.get("agent"))) in table


def test_select_star_from_task_runs_is_readable_not_a_grid_of_empty_cells(lake: Path) -> None:
    result = runner.invoke(
        app, ["query", "select * from task_runs", "--lake", str(lake)], env={"COLUMNS": "80"}
    )
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    frame = next(iter(run_query(lake, "select * from task_runs"))).frame
    # One block per run, each column's name at the start of its own line.
    for name in frame.columns:
        assert sum(line.startswith(name + " ") for line in lines) == frame.height, name
    assert (
        sum(line.startswith(f"{i} of {frame.height}") for i in range(1, 5) for line in lines) == 4
    )


def test_csv_and_json_keep_every_digit(lake: Path) -> None:
    sql = "select run_id, score, cost_usd, score / 3 as third from task_runs order by run_id"
    expected = next(iter(run_query(lake, sql))).frame
    code, out, _ = invoke(lake, sql, "--format", "csv")
    assert code == 0
    from_csv = pl.read_csv(io.StringIO(out), schema=expected.schema)
    assert from_csv.equals(expected)
    for flags in (["--format", "json"], ["--json"]):
        code, out, _ = invoke(lake, sql, *flags)
        assert code == 0
        assert pl.DataFrame(json.loads(out), schema=expected.schema).equals(expected)
    code, alias, _ = invoke(lake, sql, "--csv")
    assert code == 0 and pl.read_csv(io.StringIO(alias), schema=expected.schema).equals(expected)


def test_markdown_format(lake: Path) -> None:
    code, out, _ = invoke(
        lake, "select run_id, score from task_runs order by run_id", "--format", "markdown"
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[:2] == ["| run_id | score |", "|---|---|"]
    assert len(lines) == 2 + 4
    assert all(line.startswith("| q") and line.endswith(" |") for line in lines[2:])


@pytest.mark.parametrize(
    "flags",
    [["--json", "--csv"], ["--json", "--format", "csv"], ["--format", "table", "--csv"]],
)
def test_two_output_formats_are_a_usage_error(lake: Path, flags: list[str]) -> None:
    code, out, err = invoke(lake, "select 1", *flags)
    assert code == 2 and out == ""
    assert err.startswith("usage: choose one output format") and len(err.splitlines()) == 1


@pytest.mark.parametrize("flag", ["--json", "--csv"])
def test_two_statements_are_one_document_only_as_a_table(lake: Path, flag: str) -> None:
    # Two JSON arrays (or two CSV headers) in one stream would parse as neither.
    code, out, err = invoke(lake, "select 1 as a; select 2 as b", flag)
    assert code == 2 and out == ""
    assert err.startswith(f"usage: --format {flag[2:]} prints one result: give one statement")
    code, out, _ = invoke(lake, "select 1 as a; select 2 as b")
    assert code == 0 and "a" in out and "b" in out
    code, out, _ = invoke(lake, "select 1 as a; select 2 as b", "--format", "markdown")
    assert code == 0 and "|\n\n|" in out  # two Markdown tables, a blank line between


def test_a_lake_that_is_a_file_or_has_no_warehouse_is_a_usage_error(tmp_path: Path) -> None:
    file = tmp_path / "lake.txt"
    file.write_text("not a lake")
    for lake, said in ((file, "is a file"), (tmp_path, "holds no lake")):
        code, out, err = invoke(lake, "select 1")
        assert code == 2 and out == ""
        assert err.startswith("usage: ") and said in err and len(err.splitlines()) == 1


def test_help_shows_no_type_beside_flags() -> None:
    commands = [c.name or c.callback.__name__ for c in app.registered_commands if c.callback]
    assert "query" in commands
    for command in commands:
        result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "100"})
        assert result.exit_code == 0
        assert "<bool>" not in result.stdout, command
        assert "--help" in result.stdout
    query_help = runner.invoke(app, ["query", "--help"], env={"COLUMNS": "100"}).stdout
    assert "<table|csv|json|markdown>" in query_help


def test_a_query_plan_prints_as_text(lake: Path) -> None:
    result = runner.invoke(
        app,
        ["query", "explain select count(*) from task_runs", "--lake", str(lake)],
        env={"COLUMNS": "80"},
    )
    assert result.exit_code == 0
    assert result.stdout.startswith("physical_plan:\n")
    assert "┃" not in result.stdout.splitlines()[0]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["compare", "--agent", "x"], "Missing option '--baseline'"),
        (["query", "select 1", "--format", "bogus"], "'bogus' is not one of"),
        (["nosuch"], "No such command 'nosuch'"),
        (["run", "--max-depth", "0"], "--max-depth"),
    ],
)
def test_typer_usage_errors_are_one_line(args: list[str], said: str) -> None:
    result = runner.invoke(app, args, env={"COLUMNS": "80"})
    assert result.exit_code == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("usage: ") and said in result.stderr


def test_no_arguments_prints_the_help_and_nothing_on_stderr() -> None:
    result = runner.invoke(app, [], env={"COLUMNS": "80"})
    assert "Usage:" in result.stdout and "query" in result.stdout
    assert result.stderr == ""


@pytest.mark.slow
def test_a_view_missing_from_a_warehouse_another_version_built_says_how_to_rebuild(
    sample_lake_copy: Path,
) -> None:
    lake = sample_lake_copy
    # The same name a missing view gets, from the version that built the file and from another.
    missing = "select * from a_view_of_another_version"
    with pytest.raises(QueryError) as same:
        list(run_query(lake, missing))
    assert "another version" not in str(same.value)
    with duckdb.connect(str(lake / "warehouse.duckdb")) as con:
        con.execute("update _meta set value = 'an older build' where key = 'fingerprint'")
    with pytest.raises(QueryError, match=r"a_view_of_another_version") as other:
        list(run_query(lake, missing))
    assert "the warehouse was built by another version of the pipeline" in str(other.value)
    assert f"pipeline score --lake {lake}" in str(other.value)
    code, _, err = invoke(lake, missing)
    assert code == 1
    assert "pipeline score --lake" in err
    # A query that answers from the older views says so too, once, and answers.
    answered = "select count(*) as runs from task_runs; select 1 as one"
    first, second = run_query(lake, answered)
    assert first.stale is not None and first.stale.startswith("the warehouse was built by")
    assert second.stale is None
    code, out, err = invoke(lake, "select count(*) as runs from task_runs")
    assert code == 0 and "runs" in out
    assert " ".join(err.split()).count("note: the warehouse was built by another version") == 1
    # What it says to run builds the views of this version again.
    assert runner.invoke(app, ["score", "--lake", str(lake)]).exit_code == 0
    assert next(run_query(lake, "select count(*) from task_penalties")).frame.height == 1
    assert next(run_query(lake, answered)).stale is None


def test_control_characters_from_data_show_as_escapes_in_a_table(lake: Path) -> None:
    # A name from data cannot recolour or retitle the terminal that reads it.
    sql = "select 'tool' || chr(27) || ']0;pwned' || chr(7) || chr(0) as name"
    code, out, _ = invoke(lake, sql)
    assert code == 0
    assert "\x1b" not in out and "\x07" not in out and "\x00" not in out
    assert "tool\\x1b]0;pwned\\x07\\x00" in out
    code, out, _ = invoke(lake, sql, "--json")
    assert json.loads(out) == [{"name": "tool\x1b]0;pwned\x07\x00"}]  # data formats keep it
