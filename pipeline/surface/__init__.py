"""Surface grades (mcp-xray reports): parsing, validation, scoring and the version diff."""

from pipeline.surface.score import (
    SurfaceBatch,
    SurfaceScoring,
    finding_severity,
    letter_grade,
    ordered_sum,
    parse_reports,
    score_surfaces,
)

__all__ = [
    "SurfaceBatch",
    "SurfaceScoring",
    "finding_severity",
    "letter_grade",
    "ordered_sum",
    "parse_reports",
    "score_surfaces",
]
