"""Names from data are data: they reach the warehouse unchanged and never become SQL or paths."""

from __future__ import annotations

import json
import random
import re
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.jobs import commands as jobs
from pipeline.rubric import parse_rubric
from pipeline.storage.lake import LANDED_TABLES, RUBRIC_TABLES, SCORE_TABLES
from tests.examples import examples
from tests.strategies import (
    HOSTILE_NAMES,
    Expect,
    Line,
    jsonl_bytes,
    surface_report,
    surface_reports,
    task_record,
    task_records,
)

# Every file the pipeline writes has a name it made itself: batch ids, table
# names, rubric-key hashes. Nothing else may appear under the lake.
SAFE_PART = re.compile(r"^[A-Za-z0-9_.\-]+$")
KNOWN_DIRS = {
    *LANDED_TABLES,
    *SCORE_TABLES,
    *RUBRIC_TABLES,
    "scores",
    "_state",
    "_staging",
    "_parts",
    "_runs",
}
HEX_KEY = re.compile(r"^[0-9a-f]{16}$")


def views(con: duckdb.DuckDBPyConnection) -> set[str]:
    rows = con.execute("select view_name from duckdb_views() where not internal").fetchall()
    return {name for (name,) in rows}


def assert_paths_are_ours(lake: Path, names: list[str]) -> None:
    for path in lake.rglob("*"):
        relative = path.relative_to(lake)
        for part in relative.parts:
            assert SAFE_PART.match(part), f"unexpected name under the lake: {relative}"
            assert part not in names or part in KNOWN_DIRS, f"a data name became a path: {relative}"
        if path.is_dir():
            assert all(p in KNOWN_DIRS or HEX_KEY.match(p) for p in relative.parts), relative


def write_lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_bytes(
        jsonl_bytes(
            [
                Line(json.dumps(r, ensure_ascii=False).encode(), Expect.LAND, "", None, "")
                for r in records
            ]
        )
    )
    return path


# The fields of a task record that carry a name: a hostile task sets each to the name.
NAME_FIELDS = ("agent", "agent_version", "problem_id", "defect_id", "cwe", "project")


def hostile_task(index: int, name: str) -> dict[str, Any]:
    record = task_record(random.Random(index), f"name-{index}")
    record.update(dict.fromkeys(NAME_FIELDS, name), env_type="exploit")
    # A component named by the data: lands, weight 0 under the rubric, flagged.
    record["grade"] = {
        "subscores": {"defect_matching": 1.0, name: 0.5},
        "weights": {"defect_matching": 0.5, name: 0.5},
        "metadata": {name: {"inner": name}},
    }
    return record


def hostile_report(index: int, name: str) -> dict[str, Any]:
    report = surface_report(random.Random(index), f"srv-{index}")
    report["server"]["name"] = name
    report["server"]["version"] = name
    report["findings"][0]["target"] = [name, "plain"]
    return report


@pytest.mark.slow
def test_hostile_names_reach_every_view_unchanged(tmp_path: Path) -> None:
    names = list(HOSTILE_NAMES)
    tasks = [hostile_task(i, n) for i, n in enumerate(names)]
    reports = [hostile_report(i, n) for i, n in enumerate(names)]
    source = write_lines(tmp_path / "hostile.jsonl", tasks + reports)
    lake = tmp_path / "lake"
    summary = jobs.run([source], lake, parse_rubric({}))
    assert summary.ingest.landed_task_runs == len(names)
    assert summary.ingest.landed_surface_runs == len(names)
    assert summary.ingest.quarantined == 0
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    try:
        for index, name in enumerate(names):
            got = con.execute(
                "select agent, agent_version, problem_id, defect_id, cwe, project "
                "from task_runs where run_id = ?",
                [f"name-{index}"],
            ).fetchall()
            assert got == [(name,) * len(NAME_FIELDS)], (index, name)
            components = con.execute(
                "select component from task_components where run_id = ? order by component",
                [f"name-{index}"],
            ).fetchall()
            assert {c for (c,) in components} >= {name, "defect_matching"}
            server = con.execute(
                "select server, server_version from surface_runs where run_id = ?",
                [f"srv-{index}"],
            ).fetchall()
            assert server == [(name, name)]
            targets = con.execute(
                "select target from surface_findings where run_id = ? and kind = 'token_cost' "
                "order by target",
                [f"srv-{index}"],
            ).fetchall()
            assert [name, "plain"] in [t for (t,) in targets]
            # The metadata value is stored as JSON text of the name.
            values = con.execute(
                "select value from run_metadata where run_id = ?", [f"name-{index}"]
            ).fetchall()
            assert (json.dumps(name, ensure_ascii=False),) in values or any(
                json.loads(v) == name for (v,) in values
            )
        # Aggregates group by the names without merging or splitting any.
        agents = con.execute("select distinct agent from by_agent").fetchall()
        assert {a for (a,) in agents} == set(names)
        assert "task_runs" in views(con)
    finally:
        con.close()
    assert_paths_are_ours(lake, names)


@pytest.mark.slow
def test_an_injection_name_leaves_every_view_in_place(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    plain = write_lines(tmp_path / "plain.jsonl", [task_record(random.Random(0), "plain")])
    jobs.run([plain], lake, parse_rubric({}))
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    before = views(con)
    con.close()
    injection = "x'); drop view task_runs; --"
    record = hostile_task(99, injection)
    record["run_id"] = injection
    hostile = write_lines(tmp_path / "hostile.jsonl", [record])
    jobs.run([hostile], lake, parse_rubric({}))
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    try:
        assert views(con) == before
        got = con.execute("select run_id, agent from task_runs order by run_id", []).fetchall()
        assert got == [("plain", record_agent(plain)), (injection, injection)]
    finally:
        con.close()
    assert_paths_are_ours(lake, [injection])


def record_agent(path: Path) -> str:
    agent: str = json.loads(path.read_text().splitlines()[0])["agent"]
    return agent


@pytest.mark.slow
def test_a_rubric_id_from_a_file_never_becomes_a_path(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    source = write_lines(tmp_path / "a.jsonl", [task_record(random.Random(1), "r1")])
    rubric = parse_rubric({"rubric_id": "../../escape'; drop view task_runs; --"})
    jobs.run([source], lake, rubric)
    assert not (tmp_path / "escape'; drop view task_runs; --").exists()
    assert_paths_are_ours(lake, [])
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    try:
        assert con.execute("select rubric_id from task_runs").fetchall() == [(rubric.rubric_id,)]
    finally:
        con.close()


@pytest.mark.slow
@settings(
    max_examples=examples(5),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    tasks=st.lists(task_records(), min_size=1, max_size=8),
    reports=st.lists(surface_reports(), min_size=1, max_size=4),
)
def test_drawn_names_round_trip_exactly(
    tasks: list[dict[str, Any]], reports: list[dict[str, Any]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        lake = root / "lake"
        source = write_lines(root / "drawn.jsonl", tasks + reports)
        summary = jobs.run([source], lake, parse_rubric({}))
        assert summary.ingest.accounted == summary.ingest.lines_read
        assert summary.ingest.quarantined == 0
        con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
        try:
            got_tasks = dict(
                (r, (a, v, p))
                for r, a, v, p in con.execute(
                    "select run_id, agent, agent_version, problem_id from task_runs"
                ).fetchall()
            )
            got_servers = dict(
                (r, (s, v))
                for r, s, v in con.execute(
                    "select run_id, server, server_version from surface_runs"
                ).fetchall()
            )
        finally:
            con.close()
        for task in tasks:
            want = (task["agent"], task["agent_version"], task["problem_id"])
            assert got_tasks[task["run_id"]] == want
        for report in reports:
            want_server = (report["server"]["name"], report["server"]["version"])
            assert got_servers[report["run_id"]] == want_server
        names = [t["agent"] for t in tasks] + [r["server"]["name"] for r in reports]
        assert_paths_are_ours(lake, names)


MARKUP_NAMES = ("[/bold]oops", "[link=https://evil.example]click[/link]", "[bold red]X[/]")


@pytest.mark.slow
def test_markup_in_names_is_printed_as_text_by_every_command(tmp_path: Path) -> None:
    """A name is never read as Rich markup: `[/bold]` had failed `run` after its commit (exit
    1), and `[link=...]` made the terminal show a link the data chose."""
    from typer.testing import CliRunner

    from pipeline.cli import app

    agent, old, new = MARKUP_NAMES
    records = []
    for index in range(6):
        for version in (old, new):
            record = task_record(random.Random(index), f"{version}-{index}")
            record.update(agent=agent, agent_version=version, problem_id=f"p{index}")
            records.append(record)
    reports = []
    for index, version in enumerate((old, new)):
        report = surface_report(random.Random(index), f"srv-{index}")
        report["server"].update(name=agent, version=version)
        report["findings"][0]["target"] = [new, "plain"]
        reports.append(report)
    source = write_lines(tmp_path / "markup.jsonl", records + reports)
    lake = str(tmp_path / "lake")
    runner = CliRunner()
    halved = tmp_path / "half.toml"
    halved.write_text('rubric_id = "[/x] half"\n[task]\npenalty_scale = 0.5\n')
    commands = [
        (["run", str(source)], agent),
        (["compare", "--agent", agent, "--baseline", old, "--candidate", new], agent),
        (["history", "--agent", agent], agent),
        (["surface-diff", "--server", agent], new),
        (["score", "--dry-run", "--rubric", str(halved)], agent),
        (["score", "--rubric", str(halved)], "under rubric [/x] half"),
        # With that id current: a line that names it had failed the commands below.
        (["score", "--dry-run", "--rubric", "default"], "stays under rubric [/x] half"),
        (["nightly", "--inbox", str(tmp_path)], "[/x] half"),
        (["nightly", "--inbox", str(tmp_path)], "nothing to do"),
        (["query", "select agent, agent_version from task_runs limit 2"], agent),
    ]
    for command, expected in commands:
        result = runner.invoke(app, [*command, "--lake", lake], env={"COLUMNS": "200"})
        assert result.exit_code == 0, (command, result.output)
        shown = " ".join(result.output.split())
        assert expected in shown, (command, result.output)
