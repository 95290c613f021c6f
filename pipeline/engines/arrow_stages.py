"""Scoring stages as pure ``Arrow table -> Arrow table`` functions, for engines that move Arrow.

An engine that hands out Arrow batches (Spark's ``mapInArrow``) cannot give a
stage three related tables at once, so a batch holds *whole runs*, one row per
run, with the run's children nested as ``list<struct>`` columns:

- tasks in: the columns ``score_tasks`` reads from ``task_runs``, plus
  ``components`` (``list<struct<component, stored_subscore, record_weight>>``)
  and ``penalties`` (``list<struct<penalty, value>>``);
- tasks out: one TaskScore row per run plus ``components``, a list of its
  TaskComponentScore rows (without ``run_id``);
- surfaces in: the columns ``score_surfaces`` reads from ``surface_runs``,
  plus ``findings`` (its SurfaceFinding rows without ``run_id``);
- surfaces out: one SurfaceScore row per run plus ``findings``
  (SurfaceFindingScore rows) and ``phases`` (SurfacePhaseScore rows).

Inside, each stage unnests, calls the very functions the local engine calls
(``pipeline.tasks.score.score_tasks``, ``pipeline.surface.score_surfaces``), checks
every table with its model, and nests again. Scoring is per run (every join
is on ``run_id``), so how runs are split into batches never changes a score.
``carry`` columns (e.g. the part a run was landed in) pass through per run.

``unnest_task_scores`` / ``unnest_surface_scores`` turn a stage's output
back into the lake's score tables, sorted as the local engine sorts them.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl
import pyarrow as pa

from pipeline import surface
from pipeline.rubric import Rubric
from pipeline.tasks import keys as task_keys
from pipeline.tasks import score as task_score
from schemas import checked, polars_schema
from schemas.registry import LANDED, SCORED

RUN_ID = "run_id"
COMPONENTS = "components"
PENALTIES = "penalties"
FINDINGS = "findings"
PHASES = "phases"

# What each stage reads from the lake (and so what an engine must ship to it).
TASK_RUN_COLUMNS: tuple[str, ...] = task_keys.RUN_COLUMNS
TASK_COMPONENT_FIELDS: tuple[str, ...] = tuple(
    c for c in task_keys.COMPONENT_COLUMNS if c != RUN_ID
)
TASK_PENALTY_FIELDS: tuple[str, ...] = tuple(c for c in task_keys.PENALTY_COLUMNS if c != RUN_ID)
# score_surfaces selects these from surface_runs; findings are used whole.
SURFACE_RUN_COLUMNS = ("run_id", "coverage_ran", "reported_overall", "reported_letter")
SURFACE_FINDING_FIELDS: tuple[str, ...] = tuple(
    c for c in polars_schema(LANDED["surface_findings"]) if c not in (RUN_ID, "batch_id")
)
# Spark (and most Arrow consumers) take the classic types, not string views.
COMPAT = pl.CompatLevel.oldest()


class ArrowStageError(ValueError):
    """A batch handed to a stage lacks what the stage needs."""


def _model_schema(table: str) -> pl.Schema:
    return polars_schema(SCORED[table])


def _subset(schema: pl.Schema, names: Sequence[str]) -> pl.Schema:
    return pl.Schema({name: schema[name] for name in names})


def _children_dtype(schema: pl.Schema, exclude: Sequence[str] = (RUN_ID,)) -> pl.List:
    return pl.List(pl.Struct({n: t for n, t in schema.items() if n not in exclude}))


def task_input_schema(carry: pl.Schema | None = None) -> pl.Schema:
    """The schema a task batch must have (carry columns last)."""
    runs = _subset(polars_schema(LANDED["task_runs"]), TASK_RUN_COLUMNS)
    components = _subset(polars_schema(LANDED["task_components"]), TASK_COMPONENT_FIELDS)
    penalties = _subset(polars_schema(LANDED["task_penalties"]), TASK_PENALTY_FIELDS)
    return pl.Schema(
        {
            **runs,
            COMPONENTS: _children_dtype(components),
            PENALTIES: _children_dtype(penalties),
            **(carry or {}),
        }
    )


def surface_input_schema(carry: pl.Schema | None = None) -> pl.Schema:
    runs = _subset(polars_schema(LANDED["surface_runs"]), SURFACE_RUN_COLUMNS)
    findings = _subset(polars_schema(LANDED["surface_findings"]), SURFACE_FINDING_FIELDS)
    return pl.Schema({**runs, FINDINGS: _children_dtype(findings), **(carry or {})})


def task_output_schema(carry: pl.Schema | None = None) -> pl.Schema:
    return pl.Schema(
        {
            **_model_schema("task_scores"),
            COMPONENTS: _children_dtype(_model_schema("task_component_scores")),
            **(carry or {}),
        }
    )


def surface_output_schema(carry: pl.Schema | None = None) -> pl.Schema:
    return pl.Schema(
        {
            **_model_schema("surface_scores"),
            FINDINGS: _children_dtype(_model_schema("surface_finding_scores")),
            PHASES: _children_dtype(_model_schema("surface_phase_scores")),
            **(carry or {}),
        }
    )


def _children(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """A nested list<struct> column as long rows keyed by run_id (a null list: no rows)."""
    return frame.select(RUN_ID, column).explode(column, keep_nulls=False).unnest(column)


def _nest(parent: pl.DataFrame, child: pl.DataFrame, column: str, model: str) -> pl.DataFrame:
    """``child`` rows (model column order, without run_id) as a list per parent row."""
    fields = [name for name in _model_schema(model) if name != RUN_ID]
    nested = child.group_by(RUN_ID, maintain_order=True).agg(pl.struct(fields).alias(column))
    empty = pl.lit([], dtype=_children_dtype(_model_schema(model)))
    return parent.join(nested, on=RUN_ID, how="left", maintain_order="left").with_columns(
        pl.col(column).fill_null(empty)
    )


def _carry_schema(frame: pl.DataFrame, carry: Sequence[str]) -> pl.Schema:
    return pl.Schema({name: frame.schema[name] for name in carry})


def score_task_frame(
    frame: pl.DataFrame, rubric: Rubric, carry: Sequence[str] = ()
) -> pl.DataFrame:
    """``score_task_batch`` on a Polars frame (nested runs in, nested scores out)."""
    expected = task_input_schema(_carry_schema(frame, carry) if carry else None)
    frame = frame.cast({name: dtype for name, dtype in expected.items() if name in frame.columns})
    runs = frame.select(TASK_RUN_COLUMNS)
    scoring = task_score.score_tasks(
        runs.lazy(),
        _children(frame, COMPONENTS).lazy(),
        _children(frame, PENALTIES).lazy(),
        rubric,
    )
    run_scores, component_scores = pl.collect_all(
        [scoring.runs, scoring.components], engine="streaming"
    )
    run_scores = checked(SCORED["task_scores"], run_scores)
    component_scores = checked(SCORED["task_component_scores"], component_scores)
    out = _nest(run_scores, component_scores, COMPONENTS, "task_component_scores")
    if carry:
        out = out.join(frame.select(RUN_ID, *carry), on=RUN_ID, how="left", maintain_order="left")
    return out.select(list(task_output_schema(_carry_schema(frame, carry))))


def score_task_batch(table: pa.Table, rubric: Rubric, carry: Sequence[str] = ()) -> pa.Table:
    """Whole runs (components and penalties nested) in; their scores (components nested) out."""
    frame = pl.from_arrow(table)
    if not isinstance(frame, pl.DataFrame):
        raise ArrowStageError("score_task_batch: expected an Arrow table")
    missing = [n for n in (*TASK_RUN_COLUMNS, COMPONENTS, PENALTIES, *carry) if n not in frame]
    if missing:
        raise ArrowStageError(f"score_task_batch: the batch lacks column(s) {', '.join(missing)}")
    return score_task_frame(frame, rubric, carry).to_arrow(compat_level=COMPAT)


def score_surface_frame(
    frame: pl.DataFrame, rubric: Rubric, carry: Sequence[str] = ()
) -> pl.DataFrame:
    """``score_surface_batch`` on a Polars frame."""
    expected = surface_input_schema(_carry_schema(frame, carry) if carry else None)
    frame = frame.cast({name: dtype for name, dtype in expected.items() if name in frame.columns})
    findings = _children(frame, FINDINGS)
    scoring = surface.score_surfaces(
        frame.select(SURFACE_RUN_COLUMNS).lazy(), findings.lazy(), rubric
    )
    runs, finding_scores, phases = pl.collect_all(
        [scoring.runs, scoring.findings, scoring.phases], engine="streaming"
    )
    runs = checked(SCORED["surface_scores"], runs)
    finding_scores = checked(SCORED["surface_finding_scores"], finding_scores)
    phases = checked(SCORED["surface_phase_scores"], phases)
    out = _nest(runs, finding_scores, FINDINGS, "surface_finding_scores")
    out = _nest(out, phases, PHASES, "surface_phase_scores")
    if carry:
        out = out.join(frame.select(RUN_ID, *carry), on=RUN_ID, how="left", maintain_order="left")
    return out.select(list(surface_output_schema(_carry_schema(frame, carry))))


def score_surface_batch(table: pa.Table, rubric: Rubric, carry: Sequence[str] = ()) -> pa.Table:
    """Whole reports (findings nested) in; their scores (findings and phases nested) out."""
    frame = pl.from_arrow(table)
    if not isinstance(frame, pl.DataFrame):
        raise ArrowStageError("score_surface_batch: expected an Arrow table")
    missing = [n for n in (*SURFACE_RUN_COLUMNS, FINDINGS, *carry) if n not in frame]
    if missing:
        raise ArrowStageError(
            f"score_surface_batch: the batch lacks column(s) {', '.join(missing)}"
        )
    return score_surface_frame(frame, rubric, carry).to_arrow(compat_level=COMPAT)


def _unnest(frame: pl.DataFrame, column: str, model: str, keys: Sequence[str]) -> pl.DataFrame:
    schema = _model_schema(model)
    long = frame.select(RUN_ID, column).explode(column, keep_nulls=False).unnest(column)
    return long.select(list(schema)).cast(schema).sort(keys)


def _table(frame: pl.DataFrame, model: str, keys: Sequence[str]) -> pl.DataFrame:
    schema = _model_schema(model)
    return frame.select(list(schema)).cast(schema).sort(keys)


def unnest_task_scores(frame: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """A task stage's output as the lake's task_scores and task_component_scores tables."""
    return {
        "task_scores": _table(frame, "task_scores", [RUN_ID]),
        "task_component_scores": _unnest(
            frame, COMPONENTS, "task_component_scores", [RUN_ID, "component"]
        ),
    }


def unnest_surface_scores(frame: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """A surface stage's output as surface_scores, surface_finding_scores, surface_phase_scores."""
    return {
        "surface_scores": _table(frame, "surface_scores", [RUN_ID]),
        "surface_finding_scores": _unnest(
            frame, FINDINGS, "surface_finding_scores", [RUN_ID, "finding_index"]
        ),
        "surface_phase_scores": _unnest(
            frame, PHASES, "surface_phase_scores", [RUN_ID, "finding_index"]
        ),
    }


def empty_tables() -> dict[str, pl.DataFrame]:
    """Every score table, empty: what a part with no runs of a kind gets."""
    return {name: pl.DataFrame(schema=_model_schema(name)) for name in SCORED}
