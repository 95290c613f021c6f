"""Every table the lake holds, by name, with the model that guards it.

The warehouse writes an empty file of each model's schema where a table has
none yet, so the views' globs always match and carry every column.
"""

from __future__ import annotations

import pandera.polars as pa

from schemas.surface import (
    SurfaceFinding,
    SurfaceFindingScore,
    SurfacePhaseScore,
    SurfaceRun,
    SurfaceScore,
)
from schemas.tasks import (
    Quarantine,
    RunMetadata,
    TaskComponent,
    TaskComponentScore,
    TaskPenalty,
    TaskRun,
    TaskScore,
    VersionRegression,
)

LANDED: dict[str, type[pa.DataFrameModel]] = {
    "task_runs": TaskRun,
    "task_components": TaskComponent,
    "task_penalties": TaskPenalty,
    "run_metadata": RunMetadata,
    "quarantine": Quarantine,
    "surface_runs": SurfaceRun,
    "surface_findings": SurfaceFinding,
}

SCORED: dict[str, type[pa.DataFrameModel]] = {
    "task_scores": TaskScore,
    "task_component_scores": TaskComponentScore,
    "surface_scores": SurfaceScore,
    "surface_finding_scores": SurfaceFindingScore,
    "surface_phase_scores": SurfacePhaseScore,
    # Not per part: one file per rubric, rebuilt whenever that rubric's scores change
    # (pipeline/version_regressions.py).
    "version_regressions": VersionRegression,
}
