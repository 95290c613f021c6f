"""The lake commands' entry points, each taking the lake's lock and wiring the jobs.

ingest: files -> line chunks -> records -> landed parts (pipeline/jobs/ingest.py)
score:  landed parts -> scores under one rubric, part by part (pipeline/jobs/score.py)
run:    ingest, then score what is not scored yet, then the warehouse's views

Each mends the lake first (pipeline/jobs/prepare.py) and refreshes the warehouse last.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from pipeline.core.settings import Settings, current_settings, use_settings
from pipeline.core.sql import sql_text
from pipeline.engines import Engine, LocalEngine
from pipeline.engines.local import score_part
from pipeline.jobs.lineage import RescoreDiff, rescore_diff
from pipeline.jobs.prepare import prepare
from pipeline.jobs.results import IngestReport, RunSummary, ScoreResult
from pipeline.jobs.rubric_names import scored_gap_notes, stored_gap_notes
from pipeline.jobs.score import score_locked, verify_landed
from pipeline.rubric import Rubric
from pipeline.storage import lake as lk
from pipeline.storage.rubrics import current_rubric, lake_rubric
from pipeline.storage.store import LakeStore
from pipeline.warehouse import build_warehouse, reading, warehouse_path
from schemas import polars_schema
from schemas.registry import SCORED

__all__ = ["dry_run", "ingest", "run", "score"]


def ingest(
    inputs: Sequence[Path],
    lake: Path,
    rubric: Rubric | None = None,
    settings: Settings | None = None,
) -> IngestReport:
    """Land every readable record of ``inputs``; account for every line.

    What lands is scored under the lake's rubric and shown by the warehouse at
    once, so the lake never holds a run without a current score (`pipeline
    check`); the rubric itself changes only through an explicit ``--rubric``.
    """
    report, scored = _ingest_and_score(inputs, lake, rubric, settings)
    report.scored = scored
    return report


def _ingest_and_score(
    inputs: Sequence[Path], lake: Path, rubric: Rubric | None, settings: Settings | None
) -> tuple[IngestReport, ScoreResult]:
    """Under the lock: mend the lake, land ``inputs``, score what is new, refresh the views."""
    # Here, not at the top: `score` imports this module and never lands anything.
    from pipeline.jobs.ingest import ingest_locked

    with use_settings(settings or current_settings()) as limits, lk.lake_lock(lake):
        notes = prepare(lake)
        chosen = lake_rubric(lake, rubric)
        verified = verify_landed(lake, chosen)
        # Landed and scored in one transaction: a crash leaves no run without its score.
        with lk.Transaction(lake) as tx:
            report = ingest_locked(inputs, lake, chosen, settings=limits, tx=tx)
            scored = score_locked(lake, chosen, full=False, tx=tx, verified=verified)
        report.notes = notes + report.notes
        if rubric is not None:
            # An explicit rubric: which of its names no landed run carries, and the other way.
            scored.notes += stored_gap_notes(lake, chosen)
        build_warehouse(lake, chosen.rubric_id)
    return report, scored


def score(
    lake: Path,
    rubric: Rubric | None = None,
    *,
    engine: Engine | None = None,
    settings: Settings | None = None,
) -> ScoreResult:
    """Rescore everything under ``rubric`` (None: the lake's), make it current, refresh
    the warehouse."""
    with use_settings(settings or current_settings()), lk.lake_lock(lake):
        # score_locked hashes every part it reads (full: all of them) before scoring.
        notes = prepare(lake, reads=())
        chosen = lake_rubric(lake, rubric)
        result = score_locked(lake, chosen, full=True, engine=engine or LocalEngine())
        result.notes = notes + result.notes
        if rubric is not None:
            result.notes += stored_gap_notes(lake, chosen)
        build_warehouse(lake, chosen.rubric_id)
        return result


def dry_run(
    lake: Path, rubric: Rubric | None = None, settings: Settings | None = None
) -> RescoreDiff:
    """Score every part under ``rubric`` in memory and diff it against the current scores.

    A lake this user may write is mended first, under its lock; one on a read-only mount is
    read as it is, under the lock shared (as ``check`` reads it)."""
    writable = os.access(lake, os.W_OK)
    lock = lk.lake_lock(lake) if writable else lk.reading_lock(lake)
    with use_settings(settings or current_settings()), lock:
        if writable:
            prepare(lake)
        before = current_rubric(lake)
        given = rubric is not None
        rubric = lake_rubric(lake, rubric)
        if before is None:
            raise lk.InputError(f"the lake {lake} has no scores yet to compare a rubric against")
        store = LakeStore(lake)
        parts = store.all_parts()
        scored = [score_part(store, part, rubric) for part in parts]

        def after(table: str) -> pl.LazyFrame:
            frames = [tables[table] for tables in scored if table in tables]
            empty = pl.DataFrame(schema=polars_schema(SCORED[table]))
            return (pl.concat(frames) if frames else empty).lazy()

        diff = rescore_diff(
            lake,
            before.rubric_id,
            rubric.rubric_id,
            after=after("task_scores"),
            surface_after=after("surface_scores"),
        )
        if given:
            counted = (
                (store.part("task_runs", part), tables["task_component_scores"].lazy())
                for part, tables in zip(parts, scored, strict=True)
                if "task_component_scores" in tables
            )
            diff.notes.extend(scored_gap_notes(rubric, counted))
        return diff


def run(
    inputs: Sequence[Path],
    lake: Path,
    rubric: Rubric | None = None,
    settings: Settings | None = None,
) -> RunSummary:
    """Ingest, score what is new (everything, when the rubric changed), refresh the views.

    Without a rubric the lake's own is used, so a plain run never undoes a rubric change.
    """
    report, scored = _ingest_and_score(inputs, lake, rubric, settings)
    with reading(lake) as con:
        by_version = con.sql(sql_text("queries/summary_by_version.sql")).pl()
        by_server = con.sql(sql_text("queries/summary_by_server.sql")).pl()
    return RunSummary(
        ingest=report,
        score=scored,
        warehouse=warehouse_path(lake),
        by_version=by_version,
        by_server=by_server,
    )
