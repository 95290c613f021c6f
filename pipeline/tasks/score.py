"""Task-grade scoring: CONTRACT section 4, as lazy Polars over the whole table.

Seed 000: "There is no single overall score field. The score is the sum of
each subscore multiplied by its weight, with any penalties applied." So every
total here is recomputed from the stored parts under a rubric; the record's
own weights are only used for ``*_as_graded``, to make a rescoring visible.

The plan is joins and group_by aggregations only (no window functions, no
``collect``), so a caller can run it with ``collect(engine="streaming")`` over tens
of millions of component rows; the engines score one bounded part at a time with the
in-memory engine, which costs less CPU (``engines/stage.py``). Rows are keyed by
integers standing for run_id and (run_id, component) (``keys``), and every sum adds
its terms in a fixed order (``pipeline.core.repeatable``), so both engines give the
same bits on every run. Outputs are sorted by their keys so that rescoring the same
input under the same rubric gives identical files.

The plan, in reading order: ``keys`` (the input columns, the rubric as frames, each
run's context) -> ``components`` (every component rescored, the gates,
TaskComponentScore) -> ``totals`` (per-run sums, score and passed, with the
``anomalies``: TaskScore). ``score_tasks`` below wires them.

Decisions where CONTRACT is silent (also in the README, "Decisions the input formats and
formulas leave open"):

- When a record carries ``metadata.minimization`` sizes, the ``minimization``
  subscore is recomputed from them even if the stored subscore is missing
  (the raw sizes are the stored part); the missing component is still flagged.
- A grader error keeps its component rows (subscores shown) but nothing
  contributes and nothing is gated out: its grader broke, so there is no gate
  decision to report.
- A component of an env type the rubric does not know is also flagged
  ``unknown_component``: it has no rubric weight, like any unknown component.
- ``gate_failed_with_nonzero`` and ``non_binary_gate`` describe the record, so
  they look at the stored gate subscore.
"""

from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

from pipeline.rubric import Rubric
from pipeline.tasks.components import component_scores, run_gates, scored_components
from pipeline.tasks.keys import (
    COMPONENT_COLUMNS,
    PENALTY_COLUMNS,
    RUN_COLUMNS,
    component_codes,
    run_context,
)
from pipeline.tasks.totals import run_scores

# The score tables whose value rules (status, weights and penalty totals >= 0) follow from
# the landed tables' checks and the rubric's, and which come out sorted by their unique
# keys: before a write they need only ``schemas.checked_by_plan``.
PLAN_CHECKED = frozenset({"task_scores", "task_component_scores"})


@dataclass(frozen=True)
class TaskScoring:
    """Scores under one rubric: ``runs`` is TaskScore, ``components`` TaskComponentScore."""

    runs: pl.LazyFrame
    components: pl.LazyFrame


class ScoringInputError(ValueError):
    """An input frame lacks a column scoring needs."""


def _require_columns(frame: pl.LazyFrame, name: str, columns: Iterable[str]) -> None:
    present = set(frame.collect_schema().names())
    missing = [column for column in columns if column not in present]
    if missing:
        raise ScoringInputError(f"score_tasks: {name} frame lacks column(s) {', '.join(missing)}")


def score_tasks(
    runs: pl.LazyFrame,
    components: pl.LazyFrame,
    penalties: pl.LazyFrame,
    rubric: Rubric,
) -> TaskScoring:
    """Score every run under ``rubric`` (CONTRACT section 4); nothing is collected here.

    ``runs`` and ``components`` share the rescored component rows: collect them
    together (``pl.collect_all``) to compute those once.
    """
    _require_columns(runs, "runs", RUN_COLUMNS)
    _require_columns(components, "components", COMPONENT_COLUMNS)
    _require_columns(penalties, "penalties", PENALTY_COLUMNS)
    # Each of these feeds several branches that read different columns, which hides the
    # common subplans from the optimiser: cached explicitly, each is computed once.
    context = run_context(runs, rubric).cache()
    codes = component_codes(components, rubric).cache()
    rescored = scored_components(context, components, codes, rubric).cache()
    gates = run_gates(context, rescored).cache()
    return TaskScoring(
        runs=run_scores(gates, rescored, codes, penalties.select(PENALTY_COLUMNS), rubric),
        components=component_scores(rescored, gates, codes, rubric),
    )
