"""Surface grades: mcp-xray reports parsed, validated, regraded, and diffed by version.

The stages: ``parse`` (report JSON to landed tables, checked by ``validate`` against the
``fields`` list), ``score`` (severities, dimensions, overall and letter under the typed
``rubric``), ``diff`` (what changed between two versions of a server, from the warehouse).

Names load on first use: ``pipeline.rubric`` imports ``surface.rubric`` on the way to
``pipeline --help``, which must not load the data stack this package's other modules need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.core.lazy import by_name, lazy_getattr

if TYPE_CHECKING:
    from pipeline.surface.diff import (
        DiffUsageError,
        SurfaceDiff,
        fetch_diff,
        parse_severity,
        write_sarif,
    )
    from pipeline.surface.dimensions import letter_grade, ordered_sum
    from pipeline.surface.parse import SurfaceBatch, parse_reports
    from pipeline.surface.rubric import SurfaceRubric
    from pipeline.surface.score import SurfaceScoring, score_surfaces
    from pipeline.surface.severity import finding_severity

_HOMES = by_name(
    {
        "parse": ("SurfaceBatch", "parse_reports"),
        "score": ("SurfaceScoring", "score_surfaces"),
        "severity": ("finding_severity",),
        "dimensions": ("letter_grade", "ordered_sum"),
        "rubric": ("SurfaceRubric",),
        "diff": ("DiffUsageError", "SurfaceDiff", "fetch_diff", "parse_severity", "write_sarif"),
    }
)

__all__ = [
    "DiffUsageError",
    "SurfaceBatch",
    "SurfaceDiff",
    "SurfaceRubric",
    "SurfaceScoring",
    "fetch_diff",
    "finding_severity",
    "letter_grade",
    "ordered_sum",
    "parse_reports",
    "parse_severity",
    "score_surfaces",
    "write_sarif",
]
__getattr__ = lazy_getattr(__name__, _HOMES)
