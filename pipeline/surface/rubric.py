"""The surface rubric, typed: every constant the surface grade is made of (CONTRACT 6).

The defaults are mcp-xray 1.5.0's own grading constants. ``pipeline.rubric`` merges a
rubric file's ``[surface]`` table onto ``SURFACE_DEFAULTS`` and refuses what it must
before ``SurfaceRubric.from_table`` builds this object; scoring reads named fields only.

Only the standard library here: ``pipeline.rubric`` imports this module on the way to
``pipeline --help``, which must not load the data stack.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# CONTRACT 5's weights: fractions of their total, so only their ratios matter.
DEFAULT_WEIGHTS = {
    "context_efficiency": 30.0,
    "selection_robustness": 25.0,
    "surface_redundancy": 15.0,
    "schema_hygiene": 15.0,
    "description_quality": 15.0,
}
# CONTRACT 3's severity table, by smell.
DEFAULT_SMELL_SEVERITY = {
    "missing_description": 0.9,
    "tiny_description": 0.7,
    "vague_description": 0.45,
    "short_description": 0.4,
    "deep_nesting": 0.6,
    "enum_bloat": 0.55,
    "wide_schema": 0.5,
}
# The smells that count against description quality; any other, against schema hygiene.
DEFAULT_DESCRIPTION_SMELLS = (
    "missing_description",
    "tiny_description",
    "vague_description",
    "short_description",
)
# CONTRACT 5: "A+ ≥ 97, A ≥ 93, ... D- ≥ 60, F below".
DEFAULT_LETTER_BANDS = {
    "A+": 97.0,
    "A": 93.0,
    "A-": 90.0,
    "B+": 87.0,
    "B": 83.0,
    "B-": 80.0,
    "C+": 77.0,
    "C": 73.0,
    "C-": 70.0,
    "D+": 67.0,
    "D": 63.0,
    "D-": 60.0,
}


@dataclass(frozen=True)
class SurfaceRubric:
    """One field per key of the ``[surface]`` table, named as the key."""

    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    # Seed 002, "lerp(value, good, bad)": the anchors of each lerp.
    tokens_per_tool_good: float = 150.0
    tokens_per_tool_bad: float = 600.0
    surface_tokens_good: float = 1500.0
    surface_tokens_bad: float = 12000.0
    per_tool_share: float = 0.6
    surface_share: float = 0.4
    injector_tokens_scale: float = 2000.0
    injector_points: float = 10.0
    token_share_multiplier: float = 3.0
    smell_severity: Mapping[str, float] = field(
        default_factory=lambda: dict(DEFAULT_SMELL_SEVERITY)
    )
    other_smell_severity: float = 0.4
    description_smells: tuple[str, ...] = DEFAULT_DESCRIPTION_SMELLS
    merge_base: float = 0.4
    merge_saved_scale: float = 800.0
    merge_saved_points: float = 0.4
    merge_wide_union_factor: float = 0.7
    merge_mixes_read_write_factor: float = 0.6
    duplicate_severity: float = 0.6
    hidden_injector_scale: float = 1000.0
    resource_candidate_severity: float = 0.3
    jit_recommended_severity: float = 0.5
    jit_not_recommended_severity: float = 0.1
    redundancy_scale: float = 4.0
    proxy_points: float = 60.0
    distraction_scale: float = 2.0
    distraction_points: float = 40.0
    agreement_tolerance: float = 0.1
    letter_bands: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_LETTER_BANDS))

    @classmethod
    def from_table(cls, table: Mapping[str, Any]) -> SurfaceRubric:
        """From a merged, checked ``[surface]`` table (every key known, every value typed)."""
        given = dict(table)
        if "description_smells" in given:
            given["description_smells"] = tuple(given["description_smells"])
        return cls(**given)

    def table(self) -> dict[str, Any]:
        """As plain TOML-shaped data (lists and tables), the form rubric files merge onto."""
        plain = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {
            key: dict(value)
            if isinstance(value, Mapping)
            else list(value)
            if isinstance(value, tuple)
            else value
            for key, value in plain.items()
        }

    @property
    def is_default(self) -> bool:
        """mcp-xray's own grade can only be checked under its own constants."""
        return self == SurfaceRubric()


SURFACE_DEFAULTS: dict[str, Any] = SurfaceRubric().table()
