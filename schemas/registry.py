"""Every table the lake holds, by name, with the model that guards it.

The warehouse holds one table per model (``stg_<name>``), created from its
schema, so the views carry every column however few files the lake has.
"""

from __future__ import annotations

from schemas.model import Model
from schemas.surface import (
    SurfaceFinding,
    SurfaceFindingScore,
    SurfacePhaseScore,
    SurfaceRun,
    SurfaceScore,
)
from schemas.tasks import (
    Quarantine,
    QuarantineResolved,
    RunMetadata,
    TaskComponent,
    TaskComponentScore,
    TaskPenalty,
    TaskRun,
    TaskScore,
    VersionRegression,
)

LANDED: dict[str, type[Model]] = {
    "task_runs": TaskRun,
    "task_components": TaskComponent,
    "task_penalties": TaskPenalty,
    "run_metadata": RunMetadata,
    "quarantine": Quarantine,
    "quarantine_resolved": QuarantineResolved,
    "surface_runs": SurfaceRun,
    "surface_findings": SurfaceFinding,
}

SCORED: dict[str, type[Model]] = {
    "task_scores": TaskScore,
    "task_component_scores": TaskComponentScore,
    "surface_scores": SurfaceScore,
    "surface_finding_scores": SurfaceFindingScore,
    "surface_phase_scores": SurfacePhaseScore,
    # Not per part: one file per rubric, rebuilt whenever that rubric's scores change
    # (pipeline/compare/regressions.py).
    "version_regressions": VersionRegression,
}
