"""The pipeline definition: stages wired together, with the lake's I/O at the edges.

ingest: files -> lines -> records -> landed tables (one commit per batch)
score:  landed tables -> scores under one rubric (one commit per rubric)
run:    ingest, then score, then the warehouse's views
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
from rich.console import Console
from rich.table import Table

from pipeline import lake as lk
from pipeline import score as task_score
from pipeline import surface
from pipeline.ingest import build_batch, dedupe, expand_inputs, landed_frames, read_lines
from pipeline.rubric import Rubric, parse_rubric
from pipeline.sql import sql_text
from pipeline.warehouse import build_warehouse, connect_read_only, warehouse_path
from schemas import checked, polars_schema
from schemas.registry import LANDED, SCORED

CURRENT_RUBRIC = "current_rubric"
FIRST_QUERY = "select * from by_agent order by agent, agent_version, env_type;"


@dataclass
class IngestReport:
    batch_id: str
    files: int
    lines_read: int
    landed_task_runs: int
    landed_surface_runs: int
    quarantined: int
    skipped_duplicates: int
    skipped_blank: int
    already_quarantined: int
    seconds: float

    @property
    def accounted(self) -> int:
        return (
            self.landed_task_runs
            + self.landed_surface_runs
            + self.quarantined
            + self.skipped_duplicates
            + self.skipped_blank
            + self.already_quarantined
        )


@dataclass
class ScoreResult:
    rubric_id: str
    task_runs: int
    surface_runs: int
    seconds: float


@dataclass
class RunSummary:
    ingest: IngestReport
    score: ScoreResult
    warehouse: Path
    by_version: pl.DataFrame = field(default_factory=pl.DataFrame)


def current_rubric(lake: Path) -> Rubric | None:
    """The rubric the lake was last scored with, from its state."""
    document = lk.read_json(lk.state_path(lake, CURRENT_RUBRIC), None)
    if document is None:
        return None
    return parse_rubric({"rubric_id": document["rubric_id"], **document["resolved"]})


def _landed(lake: Path, table: str) -> pl.LazyFrame:
    return lk.scan_table(lk.table_dir(lake, table), polars_schema(LANDED[table]))


def ingest(inputs: Sequence[Path], lake: Path, rubric: Rubric | None = None) -> IngestReport:
    """Land every readable record of ``inputs``; account for every line."""
    started = time.perf_counter()
    with lk.lake_lock(lake):
        lk.recover(lake)
        env_rubric = rubric or current_rubric(lake) or parse_rubric({})
        batch_id = lk.new_batch_id()
        lines = read_lines(expand_inputs(inputs))
        batch = build_batch(lines, sorted(env_rubric.task.envs), batch_id)
        provenance = ["run_id", "content_hash", "source", "line"]
        result = dedupe(
            batch,
            _landed(lake, "task_runs").select(provenance).collect(),
            _landed(lake, "surface_runs").select(provenance).collect(),
            _landed(lake, "quarantine").select("source", "line", "raw").collect(),
        )
        frames = landed_frames(result.batch)
        writes = {
            lk.table_dir(lake, name) / f"{batch_id}.parquet": frame
            for name, frame in frames.items()
            if frame.height
        }
        if writes:
            lk.commit(lake, writes)
    return IngestReport(
        batch_id=batch_id,
        files=len(lines.files),
        lines_read=batch.lines_read,
        landed_task_runs=frames["task_runs"].height,
        landed_surface_runs=frames["surface_runs"].height,
        quarantined=frames["quarantine"].height,
        skipped_duplicates=result.skipped_duplicates,
        skipped_blank=batch.blank_lines,
        already_quarantined=result.already_quarantined,
        seconds=time.perf_counter() - started,
    )


def score_frames(lake: Path, rubric: Rubric) -> dict[str, pl.DataFrame]:
    """Every landed run scored under ``rubric``, each table checked by its model."""
    tasks = task_score.score_tasks(
        _landed(lake, "task_runs"),
        _landed(lake, "task_components"),
        _landed(lake, "task_penalties"),
        rubric,
    )
    surfaces = surface.score_surfaces(
        _landed(lake, "surface_runs"), _landed(lake, "surface_findings"), rubric
    )
    lazy = {
        "task_scores": tasks.runs,
        "task_component_scores": tasks.components,
        "surface_scores": surfaces.runs,
        "surface_finding_scores": surfaces.findings,
        "surface_phase_scores": surfaces.phases,
    }
    collected = pl.collect_all(list(lazy.values()), engine="streaming")
    return {name: checked(SCORED[name], frame) for name, frame in zip(lazy, collected, strict=True)}


def score(lake: Path, rubric: Rubric) -> ScoreResult:
    """Rescore everything under ``rubric``, make it current, refresh the warehouse."""
    started = time.perf_counter()
    with lk.lake_lock(lake):
        lk.recover(lake)
        frames = score_frames(lake, rubric)
        stamp = lk.new_batch_id()
        old = [
            path
            for name in frames
            for path in lk.parquet_files(lk.score_dir(lake, rubric.rubric_id, name))
        ]
        writes = {
            lk.score_dir(lake, rubric.rubric_id, name) / f"{stamp}.parquet": frame
            for name, frame in frames.items()
        }
        lk.commit(lake, writes, deletes=old)
        lk.write_json_atomic(
            {"rubric_id": rubric.rubric_id, "resolved": rubric.resolved},
            lk.state_path(lake, CURRENT_RUBRIC),
        )
        build_warehouse(lake, rubric.rubric_id)
    return ScoreResult(
        rubric_id=rubric.rubric_id,
        task_runs=frames["task_scores"].height,
        surface_runs=frames["surface_scores"].height,
        seconds=time.perf_counter() - started,
    )


def run(inputs: Sequence[Path], lake: Path, rubric: Rubric) -> RunSummary:
    report = ingest(inputs, lake, rubric)
    result = score(lake, rubric)
    return RunSummary(ingest=report, score=result, warehouse=warehouse_path(lake))


def print_ingest_report(console: Console, report: IngestReport) -> None:
    table = Table(title=f"ingest {report.batch_id}", show_header=True)
    table.caption = "landed = task + surface; skipped = duplicates + blank + seen (bad lines quarantined before)"
    columns = (
        "files",
        "lines",
        "task",
        "surface",
        "quarantined",
        "duplicates",
        "blank",
        "seen",
        "s",
    )
    for column in columns:
        table.add_column(column, justify="right")
    table.add_row(
        str(report.files),
        str(report.lines_read),
        str(report.landed_task_runs),
        str(report.landed_surface_runs),
        str(report.quarantined),
        str(report.skipped_duplicates),
        str(report.skipped_blank),
        str(report.already_quarantined),
        f"{report.seconds:.2f}",
    )
    console.print(table)


def print_score_result(console: Console, result: ScoreResult) -> None:
    console.print(
        f"scored {result.task_runs} task runs and {result.surface_runs} surface grades "
        f"under rubric {result.rubric_id} in {result.seconds:.2f}s",
        highlight=False,
    )


def print_run_summary(console: Console, summary: RunSummary, lake: Path) -> None:
    print_ingest_report(console, summary.ingest)
    print_score_result(console, summary.score)
    con = connect_read_only(lake)
    try:
        rows = con.execute(sql_text("queries/summary_by_version.sql")).fetchall()
    finally:
        con.close()
    table = Table(title="runs and mean score by agent and version")
    for column in ("agent", "version", "runs", "grader errors", "mean score", "pass rate"):
        table.add_column(column, justify="right" if column not in ("agent", "version") else "left")
    for agent, version, runs, errors_, mean, rate in rows:
        table.add_row(
            str(agent),
            str(version),
            str(runs),
            str(errors_),
            "-" if mean is None else f"{mean:.3f}",
            "-" if rate is None else f"{rate:.1%}",
        )
    console.print(table)
    console.print(f"warehouse: {summary.warehouse}", highlight=False)
    console.print(f"open it with:  duckdb -readonly {summary.warehouse}", highlight=False)
    console.print(f"first query:   {FIRST_QUERY}", highlight=False)
