"""The scoring stage for engines that move Arrow batches: ``Arrow table -> Arrow table``.

An engine that hands out Arrow batches (Spark's ``mapInArrow``) cannot give a
stage several related tables at once, so a batch holds *whole runs*, one row per
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

Inside, a batch is unnested into the flat landed tables, scored by
``stage.score_tables`` (the very stage the local engine runs on each part), and
the score tables are nested again. ``carry`` columns (e.g. the part a run was
landed in) pass through per run.

``unnest_scores`` turns a stage's output back into the lake's score tables,
sorted as the local engine sorts them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl
import pyarrow as pa

from pipeline.engines.stage import RUN_ID, Family, score_tables
from pipeline.rubric import Rubric
from schemas import polars_schema
from schemas.registry import LANDED, SCORED

COMPONENTS = "components"
PENALTIES = "penalties"
FINDINGS = "findings"
PHASES = "phases"
# The nested column a batch holds each child table in (in), and each child score table (out).
NESTED = {
    "task_components": COMPONENTS,
    "task_penalties": PENALTIES,
    "surface_findings": FINDINGS,
    "task_component_scores": COMPONENTS,
    "surface_finding_scores": FINDINGS,
    "surface_phase_scores": PHASES,
}
# The keys each unnested score table is sorted by, as the local engine's plans sort it.
SORT_KEYS = {
    "task_scores": (RUN_ID,),
    "task_component_scores": (RUN_ID, "component"),
    "surface_scores": (RUN_ID,),
    "surface_finding_scores": (RUN_ID, "finding_index"),
    "surface_phase_scores": (RUN_ID, "finding_index"),
}
# Spark (and most Arrow consumers) take the classic types, not string views.
COMPAT = pl.CompatLevel.oldest()


def child_fields(family: Family, table: str) -> tuple[str, ...]:
    """The fields of a nested child table: the columns scoring reads, without run_id."""
    return tuple(c for c in family.landed[table] if c != RUN_ID)


class ArrowStageError(ValueError):
    """A batch handed to a stage lacks what the stage needs."""


def _model_schema(table: str) -> pl.Schema:
    return polars_schema(SCORED[table])


def _children_dtype(schema: Mapping[str, pl.DataType]) -> pl.List:
    return pl.List(pl.Struct({n: t for n, t in schema.items() if n != RUN_ID}))


def input_schema(family: Family, carry: pl.Schema | None = None) -> pl.Schema:
    """The schema a batch of ``family`` must have (carry columns last)."""
    landed = {table: polars_schema(LANDED[table]) for table in family.landed}
    runs = {name: landed[family.runs][name] for name in family.landed[family.runs]}
    children = {
        NESTED[table]: _children_dtype(
            {name: landed[table][name] for name in child_fields(family, table)}
        )
        for table in family.children
    }
    return pl.Schema({**runs, **children, **(carry or {})})


def output_schema(family: Family, carry: pl.Schema | None = None) -> pl.Schema:
    """The schema of a stage's output for ``family`` (carry columns last)."""
    per_run, *children = family.scores
    nested = {NESTED[table]: _children_dtype(_model_schema(table)) for table in children}
    return pl.Schema({**_model_schema(per_run), **nested, **(carry or {})})


def _children(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """A nested list<struct> column as long rows keyed by run_id (a null list: no rows)."""
    return frame.select(RUN_ID, column).explode(column, keep_nulls=False).unnest(column)


def unnest_batch(family: Family, frame: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """A batch as the flat landed tables of its runs (what the local engine reads)."""
    runs = {family.runs: frame.select(family.landed[family.runs])}
    return runs | {table: _children(frame, NESTED[table]) for table in family.children}


def _nest(parent: pl.DataFrame, child: pl.DataFrame, table: str) -> pl.DataFrame:
    """``child`` rows (model column order, without run_id) as a list per parent row."""
    column, schema = NESTED[table], _model_schema(table)
    fields = [name for name in schema if name != RUN_ID]
    nested = child.group_by(RUN_ID, maintain_order=True).agg(pl.struct(fields).alias(column))
    empty = pl.lit([], dtype=_children_dtype(schema))
    return parent.join(nested, on=RUN_ID, how="left", maintain_order="left").with_columns(
        pl.col(column).fill_null(empty)
    )


def nest_scores(family: Family, tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """The score tables of a batch as one row per run, the child tables nested."""
    per_run, *children = family.scores
    out = tables[per_run]
    for table in children:
        out = _nest(out, tables[table], table)
    return out


def _carry_schema(frame: pl.DataFrame, carry: Sequence[str]) -> pl.Schema | None:
    return pl.Schema({name: frame.schema[name] for name in carry}) if carry else None


def score_frame(
    family: Family, frame: pl.DataFrame, rubric: Rubric, carry: Sequence[str] = ()
) -> pl.DataFrame:
    """``score_batch`` on a Polars frame (nested runs in, nested scores out)."""
    carried = _carry_schema(frame, carry)
    expected = input_schema(family, carried)
    frame = frame.cast({name: dtype for name, dtype in expected.items() if name in frame.columns})
    landed = {table: flat.lazy() for table, flat in unnest_batch(family, frame).items()}
    out = nest_scores(family, score_tables(landed, rubric))
    if carry:
        out = out.join(frame.select(RUN_ID, *carry), on=RUN_ID, how="left", maintain_order="left")
    return out.select(list(output_schema(family, carried)))


def score_batch(
    family: Family, table: pa.Table, rubric: Rubric, carry: Sequence[str] = ()
) -> pa.Table:
    """Whole runs of ``family`` (children nested) in; their scores (children nested) out."""
    frame = pl.from_arrow(table)
    stage = f"score_batch({family.runs})"
    if not isinstance(frame, pl.DataFrame):
        raise ArrowStageError(f"{stage}: expected an Arrow table")
    needed = (*family.landed[family.runs], *(NESTED[t] for t in family.children), *carry)
    missing = [name for name in needed if name not in frame]
    if missing:
        raise ArrowStageError(f"{stage}: the batch lacks column(s) {', '.join(missing)}")
    return score_frame(family, frame, rubric, carry).to_arrow(compat_level=COMPAT)


def _sorted_table(frame: pl.DataFrame, table: str) -> pl.DataFrame:
    schema = _model_schema(table)
    return frame.select(list(schema)).cast(schema).sort(SORT_KEYS[table])


def unnest_scores(family: Family, frame: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """A stage's output as the lake's score tables of ``family``."""
    per_run, *children = family.scores
    return {per_run: _sorted_table(frame, per_run)} | {
        table: _sorted_table(_children(frame, NESTED[table]), table) for table in children
    }


def empty_tables() -> dict[str, pl.DataFrame]:
    """Every score table, empty: what a part with no runs of a kind gets."""
    return {name: pl.DataFrame(schema=_model_schema(name)) for name in SCORED}
