"""Every real mcp-xray report (tests/fixtures/mcp-xray) regraded:
our overall within 0.1 of the report's own, the same letter, the worst phase named."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipeline.rubric import parse_rubric
from pipeline.surface import SurfaceScoring, parse_reports, score_surfaces
from schemas import checked
from schemas.surface import (
    SurfaceFinding,
    SurfaceFindingScore,
    SurfacePhaseScore,
    SurfaceRun,
    SurfaceScore,
)
from tests.paths import REAL_REPORTS as REPORTS
from tests.surface_records import surface_records

FILES = sorted(REPORTS.glob("*.json"))


def test_every_real_report_is_in_the_repository() -> None:
    """35 LiveMCPBench servers and the two github-mcp-server reports (fixtures/README.md):
    a missing fixture fails here instead of silently shrinking the parametrized tests."""
    assert len(FILES) == 37


@pytest.fixture(scope="module")
def graded() -> tuple[pl.DataFrame, SurfaceScoring]:
    texts = [path.read_text(encoding="utf-8") for path in FILES]
    records = surface_records(texts, [str(path) for path in FILES], batch_id="real")
    batch = parse_reports(records)
    assert batch.quarantine.is_empty(), batch.quarantine["reason"].to_list()
    runs = checked(SurfaceRun, batch.runs)
    findings = checked(SurfaceFinding, batch.findings)
    return runs, score_surfaces(runs.lazy(), findings.lazy(), parse_rubric({}))


def test_every_report_lands_with_every_finding(graded: tuple[pl.DataFrame, SurfaceScoring]) -> None:
    runs, scoring = graded
    assert runs.height == len(FILES)
    expected = sum(len(json.loads(path.read_text())["findings"]) for path in FILES)
    assert checked(SurfaceFindingScore, scoring.findings.collect()).height == expected


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_agrees_with_mcp_xray(graded: tuple[pl.DataFrame, SurfaceScoring], path: Path) -> None:
    runs, scoring = graded
    report = json.loads(path.read_text())
    scores = checked(SurfaceScore, scoring.runs.collect())
    run_id = runs.filter(pl.col("source") == str(path))["run_id"].item()
    row = scores.filter(pl.col("run_id") == run_id).row(0, named=True)
    assert row["overall"] == pytest.approx(report["grade"]["overall"], abs=0.1)
    assert row["letter"] == report["grade"]["letter"]
    assert row["agrees_with_report"] is True
    for name, sub in report["grade"]["subscores"].items():
        if sub["measured"]:
            # mcp-xray rounds each dimension to one decimal as it goes
            assert row[name] == pytest.approx(sub["score"], abs=0.1), name
        else:
            assert row[name] is None, name


def test_phased_github_names_its_worst_phase(
    graded: tuple[pl.DataFrame, SurfaceScoring],
) -> None:
    runs, scoring = graded
    run_id = runs.filter(pl.col("source").str.ends_with("91_github-phased.json"))["run_id"].item()
    row = scoring.runs.collect().filter(pl.col("run_id") == run_id).row(0, named=True)
    assert row["worst_phase"] == "repos"
    phases = checked(SurfacePhaseScore, scoring.phases.collect()).filter(pl.col("run_id") == run_id)
    assert sorted(phases["phase"].to_list()) == ["actions", "issues", "pull_requests", "repos"]
    worst = phases.filter(pl.col("is_worst_phase"))
    assert worst["phase"].to_list() == ["repos"]
    # the worst phase's row is the one the dimension is scored on
    assert worst["context_efficiency"].item() == pytest.approx(row["context_efficiency"])
