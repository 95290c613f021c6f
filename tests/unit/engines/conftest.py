"""Three task runs and three mcp-xray reports, as landed tables and as one part of a lake."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline.storage import lake as lk
from pipeline.surface.parse import parse_reports
from tests.surface_records import surface_records

PART = "p-0001"


def _finding(kind: str, **measurement: Any) -> dict[str, Any]:
    return {
        "probe": "test",
        "kind": kind,
        "target": "tool_a",
        "measurement": measurement,
        "severity": 0.5,
        "confidence": 0.9,
        "detail": {},
    }


def _report(name: str, tokens: float) -> dict[str, Any]:
    per_tool = tokens / 2
    surface = _finding(
        "token_cost", scope="surface", tokens=tokens, tool_count=2, tokens_per_tool_avg=per_tool
    )
    return {
        "tool": "mcp-xray",
        "generated_at": "2026-12-02T13:42:50+00:00",
        "server": {"name": name, "version": "1.0.0", "fingerprint": "f00", "tool_count": 2},
        "coverage": {"ran": ["static_hygiene", "consolidate"]},
        "findings": [surface, _finding("schema_smell", smell="missing_description")],
    }


@pytest.fixture(scope="module")
def landed(
    task_record: Callable[..., dict[str, Any]], task_frames: Callable[..., Any]
) -> dict[str, pl.DataFrame]:
    """Three task runs (gated, with a penalty; minimized; audit) and three reports."""
    tasks = task_frames(
        [
            task_record(
                "r-exploit",
                "exploit",
                {"defect_matching": 1.0, "pov_quality": 0.5, "summary_quality": 0.25},
                penalties={"timeout": 0.1},
            ),
            task_record(
                "r-patch",
                "patch",
                {"patch_verified": 1.0, "minimization": 0.2, "size_of_patch": 0.7},
                metadata={"minimization": {"final_size": 20, "minimal_size": 10}},
            ),
            task_record("r-audit", "audit", {"audit": 0.75}),
        ]
    )
    surfaces = parse_reports(
        surface_records([_report(f"srv-{i}", tokens) for i, tokens in enumerate((900, 4e4, 2e5))])
    )
    assert surfaces.quarantine.is_empty()
    return {
        "task_runs": tasks.runs.collect(),
        "task_components": tasks.components.collect(),
        "task_penalties": tasks.penalties.collect(),
        "surface_runs": surfaces.runs,
        "surface_findings": surfaces.findings,
    }


@pytest.fixture(scope="module")
def lake(landed: Mapping[str, pl.DataFrame], tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lake")
    for table, frame in landed.items():
        lk.write_parquet_atomic(frame, lk.table_dir(root, table) / f"{PART}.parquet")
    return root
