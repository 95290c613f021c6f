"""The local engine: each landed part scored in this process by the Polars plans,
one part in memory at a time."""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from pipeline import surface
from pipeline.core.stages import timed
from pipeline.rubric import Rubric
from pipeline.storage.store import LakeStore
from pipeline.tasks import score as task_score
from schemas import checked, checked_by_plan
from schemas.registry import SCORED


def score_part(
    store: LakeStore, part: str, rubric: Rubric, seconds: dict[str, float] | None = None
) -> dict[str, pl.DataFrame]:
    """One landed part scored under ``rubric``, each table checked by its model.

    Only the families the part holds are scored: a part of surface grades
    alone writes no (empty) task score files, and the other way round. The
    seconds of the plan and of the checks are added to ``seconds``.
    """
    seconds = {} if seconds is None else seconds
    lazy: dict[str, pl.LazyFrame] = {}
    if store.has_part("task_runs", part):
        tasks = task_score.score_tasks(
            store.part("task_runs", part),
            store.part("task_components", part),
            store.part("task_penalties", part),
            rubric,
        )
        lazy |= {"task_scores": tasks.runs, "task_component_scores": tasks.components}
    if store.has_part("surface_runs", part):
        surfaces = surface.score_surfaces(
            store.part("surface_runs", part), store.part("surface_findings", part), rubric
        )
        lazy |= {
            "surface_scores": surfaces.runs,
            "surface_finding_scores": surfaces.findings,
            "surface_phase_scores": surfaces.phases,
        }
    with timed(seconds, "plan"):
        collected = pl.collect_all(list(lazy.values()), engine="streaming")
    with timed(seconds, "checks"):
        return {
            name: (checked_by_plan if name in task_score.PLAN_CHECKED else checked)(
                SCORED[name], frame
            )
            for name, frame in zip(lazy, collected, strict=True)
        }


def score_parts(
    store: LakeStore, rubric: Rubric, parts: Iterable[str], seconds: dict[str, float]
) -> Iterable[tuple[str, dict[str, pl.DataFrame]]]:
    """Each part with its score tables, scored as it is asked for."""
    for part in parts:
        yield part, score_part(store, part, rubric, seconds)
