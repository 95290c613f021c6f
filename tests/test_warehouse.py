"""The warehouse: views over the lake, correct roll-ups, and views that follow the lake."""

from __future__ import annotations

import json
import math
from pathlib import Path

import duckdb
import pytest

from pipeline import jobs
from pipeline.rubric import parse_rubric
from pipeline.warehouse import WarehouseError, build_warehouse, lake_literal

DEFAULT = parse_rubric({})
WEIGHTS = {"defect_matching": 0.6, "pov_quality": 0.2, "summary_quality": 0.1, "target_calls": 0.1}


def grade(run_id: str, version: str, problem: str, gate: float, pov: float, **extra: object) -> str:
    record = {
        "run_id": run_id,
        "agent": "crab",
        "agent_version": version,
        "problem_id": problem,
        "env_type": "exploit",
        "graded_at": "2026-11-30T12:00:00Z",
        "defect_id": f"D-{problem}",
        "cwe": "CWE-787",
        "grade": {
            "subscores": {
                "defect_matching": gate,
                "pov_quality": pov,
                "summary_quality": 0.0,
                "target_calls": 0.0,
            },
            "weights": WEIGHTS,
            "metadata": {"defect_matching": {"reason": "frame mismatch" if gate == 0 else "ok"}},
        },
        **extra,
    }
    return json.dumps(record)


def con_of(lake: Path) -> duckdb.DuckDBPyConnection:
    return duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)


def test_wilson_macro_matches_hand_arithmetic(tmp_path: Path) -> None:
    build_warehouse(tmp_path, DEFAULT.rubric_id)
    con = con_of(tmp_path)
    low, high = con.execute("select wilson_low(0.5, 4), wilson_high(0.5, 4)").fetchone() or (0, 0)
    # z = 1.959963985, z² = 3.841459: centre (0.5 + z²/8) / (1 + z²/4) = 0.5;
    # half-width z·sqrt(0.0625 + z²/64) / (1 + z²/4) = 1.959964·0.350033 / 1.960365 = 0.349961
    assert low == pytest.approx(0.150039, abs=1e-6)
    assert high == pytest.approx(0.849961, abs=1e-6)


def test_empty_lake_has_every_view_and_no_rows(tmp_path: Path) -> None:
    build_warehouse(tmp_path, DEFAULT.rubric_id)
    con = con_of(tmp_path)
    for view in (
        "task_runs",
        "task_components",
        "run_metadata",
        "by_agent",
        "by_defect",
        "by_cwe",
        "failure_reasons",
        "quarantine",
        "surface_runs",
        "surface_findings",
        "by_phase",
        "by_server",
        "fleet",
        "version_history",
    ):
        assert con.execute(f"select count(*) from {view}").fetchone() == (0,), view  # noqa: S608


def test_by_agent_and_failure_reasons_by_hand(tmp_path: Path) -> None:
    source = tmp_path / "a.jsonl"
    source.write_text(
        "\n".join(
            [
                grade("a", "1", "p1", 1.0, 1.0),  # 0.6 + 0.2 = 0.8
                grade("b", "1", "p2", 1.0, 0.5),  # 0.6 + 0.1 = 0.7
                grade("c", "1", "p3", 0.0, 1.0),  # gated out: 0
                json.dumps(
                    {
                        **json.loads(grade("d", "1", "p4", 0.0, 0.0)),
                        "grade": {"subscores": {}, "weights": {}, "env_internal_failure": True},
                    }
                ),
            ]
        )
        + "\n"
    )
    jobs.run([source], tmp_path / "lake", DEFAULT)
    con = con_of(tmp_path / "lake")
    row = con.execute(
        "select runs, grader_errors, scored_runs, mean_score, score_se, pass_rate from by_agent"
    ).fetchone()
    assert row is not None
    runs, errors, scored, mean, se, rate = row
    assert (runs, errors, scored) == (4, 1, 3)
    assert mean == pytest.approx(0.5)  # (0.8 + 0.7 + 0) / 3
    # sample sd of (0.8, 0.7, 0): deviations 0.3, 0.2, -0.5 -> sqrt(0.38/2) = 0.43589; / sqrt(3)
    assert se == pytest.approx(math.sqrt(0.19) / math.sqrt(3))
    assert rate == pytest.approx(2 / 3)
    reasons = con.execute("select run_id, reason, gate_metadata from failure_reasons").fetchall()
    assert reasons == [("c", "frame mismatch", '{"reason":"frame mismatch"}')]
    errored = con.execute("select status, score from task_runs where run_id = 'd'").fetchone()
    assert errored == ("grader_error", None)


def test_views_follow_the_lake_as_it_gains_files(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    first = tmp_path / "a.jsonl"
    first.write_text(grade("a", "1", "p1", 1.0, 1.0) + "\n")
    jobs.run([first], lake, DEFAULT)
    second = tmp_path / "b.jsonl"
    second.write_text(grade("b", "2", "p1", 1.0, 0.0) + "\n")
    jobs.ingest([second], lake)  # lands without rebuilding the warehouse
    con = con_of(lake)
    assert con.execute("select count(*) from task_runs").fetchone() == (2,)
    con.close()


def test_lake_path_with_glob_characters_is_refused(tmp_path: Path) -> None:
    with pytest.raises(WarehouseError, match="glob"):
        lake_literal(tmp_path / "la*ke")
    assert lake_literal(tmp_path / "it's").endswith("it''s")
