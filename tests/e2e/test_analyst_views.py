"""The analysts' views by hand: by_cwe's Wilson interval and cost_per_solved."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.jobs import commands as jobs
from pipeline.warehouse import build_warehouse
from tests.e2e.test_warehouse import DEFAULT, con_of, grade


def _record(run_id: str, problem: str, gate: float, **extra: object) -> str:
    return grade(run_id, "1", problem, gate, 1.0, **extra)


def _grader_error(run_id: str, problem: str, **extra: object) -> str:
    record = json.loads(_record(run_id, problem, 0.0, **extra))
    record["grade"] = {"subscores": {}, "weights": {}, "env_internal_failure": True}
    return json.dumps(record)


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("views")
    lines = [
        _record("r1", "p1", 0.0, cost_usd=1.0, tokens=100),  # p1: failed, then
        _record("r2", "p1", 1.0, trial=1, cost_usd=2.0, tokens=200),  # solved on retry
        _record("r3", "p2", 1.0, cost_usd=0.5, tokens=300),
        _record("r4", "p3", 1.0, cost_usd=0.25, tokens=400),
        _grader_error("r5", "p4", cost_usd=10.0, tokens=5000),  # excluded, counted
        _record("r6", "p5", 0.0, cwe=None),  # no cost reported, no cwe
    ]
    source = root / "a.jsonl"
    source.write_text("\n".join(lines) + "\n")
    jobs.run([source], root / "lake", DEFAULT)
    return root / "lake"


@pytest.mark.slow
def test_by_cwe_pass_rate_has_a_wilson_interval(lake: Path) -> None:
    row = (
        con_of(lake)
        .execute(
            "select runs, grader_errors, pass_rate, pass_n, pass_rate_ci_low, pass_rate_ci_high "
            "from by_cwe where cwe = 'CWE-787'"
        )
        .fetchone()
    )
    assert row is not None
    runs, errors, rate, n, low, high = row
    assert (runs, errors, n) == (5, 1, 4)  # r6 has no cwe; r5 is a grader error
    assert rate == pytest.approx(0.75)
    # p = 3/4, n = 4, z² = 3.8416: centre (0.75 + 0.4802) / 1.9604 = 0.627525;
    # half-width 1.96·sqrt(0.046875 + 0.060025) / 1.9604 = 1.96·0.326956 / 1.9604 = 0.326889
    # 95% Wilson for 3 of 4 with z = 1.959963984540054 (the exact 97.5% normal quantile)
    assert low == pytest.approx(0.300642, abs=1e-6)
    assert high == pytest.approx(0.954413, abs=1e-6)


@pytest.mark.slow
def test_cost_per_solved_by_hand(lake: Path) -> None:
    con = con_of(lake)
    row = con.execute(
        "select agent, agent_version, env_type, runs, grader_errors, problems, solved_problems, "
        "runs_without_cost, cost_usd, tokens, cost_per_solved, tokens_per_solved "
        "from cost_per_solved"
    ).fetchall()
    assert len(row) == 1
    agent, version, env, runs, errors, problems, solved, no_cost, cost, tokens, per, tper = row[0]
    assert (agent, version, env) == ("crab", "1", "exploit")
    assert (runs, errors, problems, solved, no_cost) == (6, 1, 5, 3, 1)
    assert cost == pytest.approx(1.0 + 2.0 + 0.5 + 0.25)  # r5's 10.0 left out
    assert tokens == 100 + 200 + 300 + 400
    assert per == pytest.approx(3.75 / 3)
    assert tper == pytest.approx(1000 / 3)


@pytest.mark.slow
def test_by_agent_mean_cost_leaves_grader_errors_out_as_cost_per_solved_does(lake: Path) -> None:
    # r5, a grader error, reported 10.0: it had counted in by_agent's mean, not in
    # cost_per_solved. r6 reported no cost: neither counts it.
    row = con_of(lake).execute("select grader_errors, mean_cost_usd from by_agent").fetchall()
    assert row == [(1, pytest.approx((1.0 + 2.0 + 0.5 + 0.25) / 4))]


@pytest.mark.slow
def test_nothing_solved_gives_no_cost_per_solved(tmp_path: Path) -> None:
    source = tmp_path / "a.jsonl"
    source.write_text(_record("x", "p1", 0.0, cost_usd=4.0) + "\n")
    jobs.run([source], tmp_path / "lake", DEFAULT)
    row = (
        con_of(tmp_path / "lake")
        .execute("select solved_problems, cost_usd, cost_per_solved from cost_per_solved")
        .fetchone()
    )
    assert row == (0, 4.0, None)


@pytest.mark.slow
def test_token_counts_past_a_bigint_still_answer(tmp_path: Path) -> None:
    # tokens is a number >= 0 (CONTRACT 2), landed as a double: the view cast its sum to
    # BIGINT, and one run of 2^63-1 tokens made every query of cost_per_solved fail.
    source = tmp_path / "a.jsonl"
    lines = [_record(f"r{i}", f"p{i}", 1.0, tokens=2**63 - 1) for i in range(2)]
    source.write_text("\n".join(lines) + "\n")
    jobs.run([source], tmp_path / "lake", DEFAULT)
    row = (
        con_of(tmp_path / "lake")
        .execute("select solved_problems, tokens, tokens_per_solved from cost_per_solved")
        .fetchone()
    )
    assert row == (2, pytest.approx(2.0 * 2**63), pytest.approx(2.0**63))


@pytest.mark.slow
def test_failure_reasons_tell_a_list_over_the_metadata_limit_by_its_items(
    tmp_path: Path,
) -> None:
    # run_metadata keeps no text for a list over 1 MiB: gate_metadata had shown it as a JSON
    # null ("tried": null), as though the gate had tried nothing.
    record = json.loads(_record("r1", "p1", 0.0))
    tried = [f"frame-{i:07d}" for i in range(80_000)]  # ~1.2 MB as JSON
    record["grade"]["metadata"]["defect_matching"]["tried"] = tried
    source = tmp_path / "a.jsonl"
    source.write_text(json.dumps(record) + "\n")
    jobs.run([source], tmp_path / "lake", DEFAULT)
    reason, gate_metadata = (
        con_of(tmp_path / "lake")
        .execute("select reason, gate_metadata from failure_reasons")
        .fetchone()
        or ()
    )
    held = json.loads(gate_metadata)
    assert reason == "frame mismatch"
    assert "tried" not in held
    assert (held["tried[0]"], held["tried[79999]"]) == ("frame-0000000", "frame-0079999")


def test_an_empty_lake_has_the_views_and_no_rows(tmp_path: Path) -> None:
    build_warehouse(tmp_path, DEFAULT.rubric_id)
    con = con_of(tmp_path)
    for view in ("by_cwe", "cost_per_solved"):
        assert con.execute(f"select count(*) from {view}").fetchone() == (0,), view  # noqa: S608
