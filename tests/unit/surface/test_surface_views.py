"""The surface views (sql/marts/) over a tiny lake written the way the pipeline writes it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipeline.rubric import parse_rubric
from pipeline.storage.lake import score_dir, table_dir, write_parquet_atomic
from pipeline.surface import parse_reports, score_surfaces
from pipeline.warehouse import build_warehouse, connect_read_only
from schemas import checked
from schemas.surface import (
    SurfaceFinding,
    SurfaceFindingScore,
    SurfacePhaseScore,
    SurfaceRun,
    SurfaceScore,
)
from tests.surface_records import surface_records


def _surface(tokens: float, tools: int, per_tool: float, **extra: Any) -> dict[str, Any]:
    measurement = {"scope": "surface", "tokens": tokens, "tool_count": tools}
    measurement |= {"tokens_per_tool_avg": per_tool, **extra}
    return {
        "probe": "static_hygiene",
        "kind": "token_cost",
        "target": ["a"],
        "measurement": measurement,
    }


def _smell(smell: str) -> dict[str, Any]:
    return {
        "probe": "static_hygiene",
        "kind": "schema_smell",
        "target": "a",
        "measurement": {"smell": smell},
    }


def _phase(name: str, tokens: float, tools: int, per_tool: float) -> dict[str, Any]:
    measurement = {"scope": "phase", "phase": name, "tokens": tokens, "tool_count": tools}
    measurement |= {"tokens_per_tool_avg": per_tool}
    return {
        "probe": "phase_surface",
        "kind": "token_cost",
        "target": ["a"],
        "measurement": measurement,
    }


def _report(name: str, version: str, at: str, findings: list[dict[str, Any]]) -> str:
    return json.dumps(
        {
            "generated_at": at,
            "server": {"name": name, "version": version, "tool_count": 2},
            "coverage": {"ran": ["static_hygiene"]},
            "grade": {"overall": 0.0, "letter": "F"},
            "findings": findings,
        }
    )


# Offline, static_hygiene only, n = 2, CE = 100 everywhere (150/tool, 1500 tokens):
#   alpha 1.0: no smells           -> SH 100, DQ 100 -> overall 100
#   alpha 2.0: deep_nesting (0.6)  -> SH 70,  DQ 100 -> (30*100 + 15*70 + 15*100)/60 = 92.5
#   beta  0.1: missing_description -> SH 100, DQ 100 - 0.9/2*100 = 55
#                                  -> (3000 + 1500 + 825)/60 = 88.75; phased (two phases)
REPORTS = [
    _report(
        "alpha",
        "2.0",
        "2026-02-01T00:00:00+00:00",
        [_surface(1500, 2, 150), _smell("deep_nesting")],
    ),
    _report("alpha", "1.0", "2026-01-01T00:00:00+00:00", [_surface(1500, 2, 150)]),
    _report(
        "beta",
        "0.1",
        "2026-01-15T00:00:00+00:00",
        [
            _surface(1500, 2, 150, worst_phase="p2"),
            _smell("missing_description"),
            _phase("p1", 300, 2, 150),
            _phase("p2", 1500, 2, 150),
        ],
    ),
]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    lake: Path = tmp_path_factory.mktemp("lake")
    rubric = parse_rubric({})
    records = surface_records(REPORTS)
    batch = parse_reports(records)
    assert batch.quarantine.is_empty()
    scoring = score_surfaces(batch.runs.lazy(), batch.findings.lazy(), rubric)
    # an older rubric's scores in the lake must not show
    other = score_surfaces(
        batch.runs.lazy(), batch.findings.lazy(), parse_rubric({"rubric_id": "old"})
    )
    write_parquet_atomic(
        checked(SurfaceRun, batch.runs), table_dir(lake, "surface_runs") / "b1.parquet"
    )
    write_parquet_atomic(
        checked(SurfaceFinding, batch.findings), table_dir(lake, "surface_findings") / "b1.parquet"
    )
    for rubric_id, result in ((rubric.rubric_id, scoring), ("old", other)):
        for table, model, frame in (
            ("surface_scores", SurfaceScore, result.runs),
            ("surface_finding_scores", SurfaceFindingScore, result.findings),
            ("surface_phase_scores", SurfacePhaseScore, result.phases),
        ):
            write_parquet_atomic(
                checked(model, frame.collect()), score_dir(lake, rubric_id, table) / "b1.parquet"
            )
    build_warehouse(lake, rubric.rubric_id)
    con = connect_read_only(lake)
    yield con
    con.close()


@pytest.mark.slow
def test_surface_runs_view(warehouse: duckdb.DuckDBPyConnection) -> None:
    rows = warehouse.sql(
        "select server, server_version, overall, letter, schema_hygiene, rubric_id, tool_count "
        "from surface_runs order by server, server_version"
    ).fetchall()
    assert [r[:5] for r in rows] == [
        ("alpha", "1.0", 100.0, "A+", 100.0),
        ("alpha", "2.0", pytest.approx(92.5), "A-", pytest.approx(70.0)),
        ("beta", "0.1", pytest.approx(88.75), "B+", 100.0),
    ]
    assert {r[5] for r in rows} == {parse_rubric({}).rubric_id}
    columns = {c[0] for c in warehouse.sql("describe surface_runs").fetchall()}
    assert {
        "run_id",
        "server",
        "server_version",
        "fingerprint",
        "generated_at",
        "tool_count",
        "overall",
        "letter",
        "worst_phase",
        "context_efficiency",
        "selection_robustness",
        "surface_redundancy",
        "schema_hygiene",
        "description_quality",
        "reported_overall",
        "reported_letter",
        "rubric_id",
    } <= columns


# Views whose rows over the lake above are worked out by hand: (query, rows).
VIEW_ROWS = [
    pytest.param(
        "select kind, target, severity from surface_findings "
        "where run_id like 'beta@%' order by finding_index",
        # surface: 1 - lerp01(150) = 0; missing_description 0.9; phase rows are "other
        # scope": share 0
        [
            ("token_cost", ["a"], 0.0),
            ("schema_smell", ["a"], 0.9),
            ("token_cost", ["a"], 0.0),
            ("token_cost", ["a"], 0.0),
        ],
        id="surface_findings",
        marks=pytest.mark.slow,
    ),
    pytest.param(
        "select server, phase, tool_count, tokens, context_efficiency, is_worst_phase "
        "from by_phase order by server, server_version, phase",
        # every row: 150/tool -> lerp 100; tokens <= 1500 -> lerp 100 -> CE 100
        [
            ("alpha", "all", 2, 1500.0, 100.0, True),
            ("alpha", "all", 2, 1500.0, 100.0, True),
            ("beta", "p1", 2, 300.0, 100.0, False),
            ("beta", "p2", 2, 1500.0, 100.0, True),
        ],
        id="by_phase",
    ),
    pytest.param(
        "select server, server_version, versions, overall, previous_version, overall_delta, "
        "schema_hygiene_delta, context_efficiency_delta, selection_robustness_delta "
        "from by_server order by server",
        # alpha: latest 2.0 (92.5) against 1.0 (100): -7.5 overall, SH 70 - 100 = -30, CE 0,
        # selection never measured -> null delta. beta: one version, no previous.
        [
            (
                "alpha",
                "2.0",
                2,
                pytest.approx(92.5),
                "1.0",
                pytest.approx(-7.5),
                pytest.approx(-30.0),
                0.0,
                None,
            ),
            ("beta", "0.1", 1, pytest.approx(88.75), None, None, None, None, None),
        ],
        id="by_server",
    ),
]


@pytest.mark.parametrize(("query", "rows"), VIEW_ROWS)
def test_view_rows(
    warehouse: duckdb.DuckDBPyConnection, query: str, rows: list[tuple[Any, ...]]
) -> None:
    assert warehouse.sql(query).fetchall() == rows


def test_fleet_view(warehouse: duckdb.DuckDBPyConnection) -> None:
    rows = {
        r[0]: r[1:]
        for r in warehouse.sql(
            "select dimension, servers, measured, p10, p50, p90, mean from fleet"
        ).fetchall()
    }
    # latest versions: overall 92.5 and 88.75. quantile_cont interpolates:
    # p10 = 88.75 + 0.1 * 3.75 = 89.125; p50 = 90.625; p90 = 88.75 + 0.9 * 3.75 = 92.125
    assert rows["overall"] == (
        2,
        2,
        pytest.approx(89.125),
        pytest.approx(90.625),
        pytest.approx(92.125),
        pytest.approx(90.625),
    )
    # selection robustness measured nowhere: counted, no distribution
    assert rows["selection_robustness"] == (2, 0, None, None, None, None)
    # schema hygiene: alpha 70, beta 100 -> p50 85
    assert rows["schema_hygiene"][3] == pytest.approx(85.0)
