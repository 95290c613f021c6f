"""Read-only analysts: `pipeline query` reads the views and refuses anything that writes."""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from pipeline import jobs
from pipeline.cli import app
from pipeline.query import QueryError, QueryRefused, check_read_only, run_query
from pipeline.rubric import parse_rubric
from pipeline.warehouse import WarehouseError
from tests.strategies import surface_report, task_record

ROOT = Path(__file__).resolve().parents[1]
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
    with pytest.raises(QueryRefused, match=r"refused|cannot tell"):
        check_read_only(sql)
    code, _, err = invoke(lake, sql)
    assert code == 2
    assert "refused" in err
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


def test_not_sql_is_a_usage_error(lake: Path) -> None:
    code, _, err = invoke(lake, "selec * frm nowhere")
    assert code == 2 and "parse" in err
    code, _, err = invoke(lake, "   ")
    assert code == 2 and "no statement" in err


def test_a_missing_warehouse_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(WarehouseError, match="no warehouse at"):
        list(run_query(tmp_path, "select 1"))


def test_the_command_line_exit_codes(lake: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pipeline", "query", *args, "--lake", str(lake)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )

    ok = run("select count(*) as n from task_runs", "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout) == [{"n": 4}]
    refused = run("drop view task_runs")
    assert refused.returncode == 2
    assert "DROP statement is not read-only" in refused.stderr


def test_the_documented_duckdb_readonly_door_cannot_change_the_warehouse(lake: Path) -> None:
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    try:
        with pytest.raises(duckdb.Error, match="read-only"):
            con.execute("drop view task_runs")
        assert con.execute("select count(*) from task_runs").fetchone() == (4,)
    finally:
        con.close()
