"""The scoring stage every engine runs: one batch's landed tables in, its score tables out.

A batch is any set of whole runs with their children, as flat tables keyed by run_id
(``task_runs`` with its ``task_components`` and ``task_penalties``; ``surface_runs``
with its ``surface_findings``). The local engine hands the stage one landed part at a
time, as lazy scans of its files; the Spark adapter (``arrow_stages``) hands it each
Arrow batch, unnested. Scoring is per run (every join is on run_id), so how runs are
split into batches never changes a score, and both engines check every table by its
model in the same place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

import polars as pl

from pipeline import surface
from pipeline.core.stages import timed
from pipeline.rubric import Rubric
from pipeline.tasks import keys as task_keys
from pipeline.tasks import score as task_score
from schemas import checked, checked_by_plan, polars_schema
from schemas.registry import LANDED, SCORED

RUN_ID = "run_id"

Landed = Mapping[str, pl.LazyFrame]
Scorer = Callable[[Landed, Rubric], dict[str, pl.LazyFrame]]


@dataclass(frozen=True)
class Family:
    """One kind of grade as the stage sees it: the landed tables a batch of it holds, each
    with the columns scoring reads (the runs table first), and the score tables it gives
    (the per-run one first)."""

    landed: Mapping[str, tuple[str, ...]]
    scores: tuple[str, ...]
    score: Scorer

    @property
    def runs(self) -> str:
        return next(iter(self.landed))

    @property
    def children(self) -> tuple[str, ...]:
        return tuple(self.landed)[1:]


def _score_tasks(landed: Landed, rubric: Rubric) -> dict[str, pl.LazyFrame]:
    tasks = task_score.score_tasks(
        landed["task_runs"], landed["task_components"], landed["task_penalties"], rubric
    )
    return {"task_scores": tasks.runs, "task_component_scores": tasks.components}


def _score_surfaces(landed: Landed, rubric: Rubric) -> dict[str, pl.LazyFrame]:
    surfaces = surface.score_surfaces(landed["surface_runs"], landed["surface_findings"], rubric)
    return {
        "surface_scores": surfaces.runs,
        "surface_finding_scores": surfaces.findings,
        "surface_phase_scores": surfaces.phases,
    }


TASKS = Family(
    landed={
        "task_runs": task_keys.RUN_COLUMNS,
        "task_components": task_keys.COMPONENT_COLUMNS,
        "task_penalties": task_keys.PENALTY_COLUMNS,
    },
    scores=("task_scores", "task_component_scores"),
    score=_score_tasks,
)
SURFACES = Family(
    landed={
        # score_surfaces selects these from surface_runs; findings are used whole.
        "surface_runs": ("run_id", "coverage_ran", "reported_overall", "reported_letter"),
        "surface_findings": tuple(
            c for c in polars_schema(LANDED["surface_findings"]) if c != "batch_id"
        ),
    },
    scores=("surface_scores", "surface_finding_scores", "surface_phase_scores"),
    score=_score_surfaces,
)
FAMILIES = (TASKS, SURFACES)

# A batch is one landed part (a 64 MiB chunk of input, ~70k runs) or one Spark batch, so
# its plan fits in memory however large the lake: Polars' in-memory engine runs it with
# ~25% less CPU than the streaming one (one 71k-run part, one thread: 0.19 s against
# 0.26 s), and a full rescore of 300k runs took 1.44 s instead of 1.64 s (whole commands,
# alternating). Both write the same rows; the files' row groups follow the engine's chunks.
BATCH_ENGINE: Final = "in-memory"


def score_tables(
    landed: Landed, rubric: Rubric, seconds: dict[str, float] | None = None
) -> dict[str, pl.DataFrame]:
    """The score tables of one batch under ``rubric``, each checked by its model.

    Only the families whose runs table ``landed`` holds are scored: a batch of surface
    grades alone gives no task score tables, and the other way round. The plans are
    collected in one call, so the rows a family's tables share (the rescored components
    of tasks) are computed once; the seconds of the plans and of the checks are added
    to ``seconds``.
    """
    seconds = {} if seconds is None else seconds
    lazy: dict[str, pl.LazyFrame] = {}
    for family in FAMILIES:
        if family.runs in landed:
            lazy |= family.score(landed, rubric)
    with timed(seconds, "plan"):
        collected = pl.collect_all(list(lazy.values()), engine=BATCH_ENGINE)
    with timed(seconds, "checks"):
        return {
            name: (checked_by_plan if name in task_score.PLAN_CHECKED else checked)(
                SCORED[name], frame
            )
            for name, frame in zip(lazy, collected, strict=True)
        }
