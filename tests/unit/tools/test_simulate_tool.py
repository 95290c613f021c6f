"""tools/simulate as a tool: its command, its record builders, its place outside the runtime
package, and its plain-Python mcp-xray grader as the oracle for the pipeline's regrade."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline.rubric import parse_rubric
from pipeline.surface import parse_reports, score_surfaces
from schemas.surface import DIMENSIONS
from tests.paths import ROOT
from tests.surface_records import surface_records
from tools import simulate as sim
from tools.simulate import records as build


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_the_command_rewrites_the_committed_sample_byte_for_byte(tmp_path: Path) -> None:
    out = tmp_path / "sample"
    done = subprocess.run(
        [sys.executable, "-m", "tools.simulate", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    written = _files(out)
    assert len(done.stdout.splitlines()) == len(written)
    assert written == _files(ROOT / "data" / "sample")


def test_the_command_refuses_a_bad_option_as_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tools.simulate", "--seed", "seven"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 2
    assert "--seed" in done.stderr
    assert not any(tmp_path.iterdir())


def test_the_runtime_package_never_imports_tools() -> None:
    for path in (ROOT / "pipeline").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            assert not [n for n in names if n.split(".")[0] in {"tools", "bench", "tests"}], path


# A task record's required top-level fields.
REQUIRED: dict[str, Any] = {
    "run_id": "r",
    "agent": "a",
    "agent_version": "1",
    "problem_id": "p",
    "env_type": "audit",
    "graded_at": "2026-01-02T03:04:05+00:00",
}


def test_the_task_builder_leaves_none_out_and_keeps_zero_and_false() -> None:
    record = build.task_record(
        **REQUIRED,
        subscores={"audit": 0.25},
        weights={"audit": 1.0},
        trial=0,
        cwe=None,
        allow_unbounded=False,
        penalties=None,
    )
    assert record == {
        **REQUIRED,
        "grade": {
            "subscores": {"audit": 0.25},
            "weights": {"audit": 1.0},
            "allow_unbounded": False,
        },
        "trial": 0,
    }


def test_the_builders_refuse_a_field_they_do_not_know() -> None:
    with pytest.raises(TypeError, match=r"unknown field\(s\) \['trail'\]"):
        build.task_record(**REQUIRED, subscores={}, weights={}, trail=1)
    with pytest.raises(TypeError, match="surface_report"):
        build.surface_report(
            generated_at="x", server={}, grade={}, headline={}, coverage={}, findings=[], runid="r"
        )


def test_the_bulk_builder_and_the_single_record_builder_share_the_top_level_fields() -> None:
    flat = sim.generate_task_frame(40, seed=1)
    top = {name for name in flat.columns if "." not in name}
    assert top == set(build.TASK_FIELDS)
    line = json.loads(sim.flat_ndjson_bytes(flat.head(1)).decode())
    assert set(build.TASK_REQUIRED) <= set(line) <= set(build.TASK_FIELDS) | {"grade", "harness"}


def _regrade(reports: list[dict[str, object]]) -> pl.DataFrame:
    lines = surface_records(reports, sources=[f"report-{i}.json" for i in range(len(reports))])
    batch = parse_reports(lines)
    assert batch.quarantine.is_empty(), batch.quarantine["reason"].to_list()
    scoring = score_surfaces(batch.runs.lazy(), batch.findings.lazy(), parse_rubric({}))
    return scoring.runs.collect().join(batch.runs.select("run_id", "source"), on="run_id")


def test_the_pipeline_regrade_agrees_with_the_reference_grader_on_every_sample_report() -> None:
    # The reference grade is what each sample report carries; the pipeline's vectorized
    # regrade shares no code with it.
    reports = sim.sample_reports(7) + sim.extra_reports(7)
    scores = _regrade(reports)
    by_source = {row["source"]: row for row in scores.iter_rows(named=True)}
    assert len(by_source) == len(reports)
    for index, report in enumerate(reports):
        row = by_source[f"report-{index}.json"]
        grade = report["grade"]
        assert (row["overall_display"], row["letter"]) == (grade["overall"], grade["letter"])
        assert row["agrees_with_report"] is True
        for dimension in DIMENSIONS:
            assert row[f"{dimension}_display"] == grade["subscores"][dimension]["score"], (
                report["server"],
                dimension,
            )
