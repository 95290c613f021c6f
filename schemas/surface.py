"""Pandera models of the surface-grade tables (mcp-xray reports): what lands, what scoring writes.

Landed: ``surface_runs`` (one row per report) and ``surface_findings`` (one row per finding).
Scored, under one rubric: ``surface_scores`` (dimensions, overall, letter per report),
``surface_finding_scores`` (the severity the pipeline assigns) and ``surface_phase_scores``
(context efficiency per phase). CONTRACT.md sections 3 and 5.
"""

from __future__ import annotations

import polars as pl

from schemas.model import Field, Model

DIMENSIONS = (
    "context_efficiency",
    "selection_robustness",
    "surface_redundancy",
    "schema_hygiene",
    "description_quality",
)


class SurfaceRun(Model):
    """One landed mcp-xray report, the fields the grade uses, and its provenance."""

    # The report's own run_id, else <server>@<server.version or "unversioned">@<generated_at>.
    run_id: str = Field(unique=True, str_length={"min_value": 1})
    # The server key: server.name, else server.fingerprint (a bare tool dump has no name).
    server: str = Field(str_length={"min_value": 1})
    server_version: str = Field(nullable=True, str_length={"min_value": 1})
    fingerprint: str = Field(nullable=True)
    # server.tool_count as the report gives it (for a phased server: the union).
    tool_count: pl.Int64 = Field(nullable=True, ge=0)
    generated_at: pl.Datetime(time_unit="us", time_zone="UTC") = Field(nullable=True)  # type: ignore[valid-type]
    # generated_at exactly as written, the text that run_id is made of.
    generated_at_text: str = Field(nullable=True)
    coverage_ran: pl.List(pl.String) = Field()  # type: ignore[valid-type]
    finding_count: pl.Int64 = Field(ge=0)
    reported_overall: pl.Float64 = Field(nullable=True)
    reported_letter: str = Field(nullable=True)
    reported_subscores: str = Field(nullable=True)  # grade.subscores, JSON text
    phased: bool = Field(nullable=True)  # headline.phased
    reported_worst_phase: str = Field(nullable=True)  # headline.worst_phase
    phase_tokens: str = Field(nullable=True)  # headline.phase_tokens, JSON text
    # The report exactly as it arrived (unknown fields at any depth included).
    record: str
    source: str
    line: pl.Int64 = Field(ge=1)
    batch_id: str
    content_hash: str

    class Config:
        strict = True
        coerce = False


class SurfaceFinding(Model):
    """One finding of a landed report, long form: the measurement kept whole and typed."""

    run_id: str
    finding_index: pl.Int64 = Field(ge=0)  # position in the report's findings list
    probe: str = Field(nullable=True)
    kind: str = Field(str_length={"min_value": 1})
    target: pl.List(pl.String) = Field()  # type: ignore[valid-type]
    target_is_list: bool
    measurement: str  # the whole measurement object, JSON text ('{}' when absent)
    scope: str = Field(nullable=True)
    tokens: pl.Float64 = Field(nullable=True)
    tool_count: pl.Int64 = Field(nullable=True)
    tokens_per_tool_avg: pl.Float64 = Field(nullable=True)
    share: pl.Float64 = Field(nullable=True)
    smell: str = Field(nullable=True)
    tokens_saved_est: pl.Float64 = Field(nullable=True)
    wide_union: bool = Field(nullable=True)
    mixes_read_write: bool = Field(nullable=True)
    pass_rate: pl.Float64 = Field(nullable=True)
    mode: str = Field(nullable=True)
    fire_rate: pl.Float64 = Field(nullable=True)
    tokens_est: pl.Float64 = Field(nullable=True)
    injector_kind: str = Field(nullable=True)  # measurement.kind (hidden_injector)
    recommend_jit: bool = Field(nullable=True)
    phase: str = Field(nullable=True)
    worst_phase: str = Field(nullable=True)
    reported_severity: pl.Float64 = Field(nullable=True)  # kept, never used for scoring
    confidence: pl.Float64 = Field(nullable=True)
    detail: str = Field(nullable=True)  # JSON text
    batch_id: str

    class Config:
        strict = True
        coerce = False
        unique = ["run_id", "finding_index"]


class SurfaceScore(Model):
    """One report regraded under one rubric (CONTRACT section 5); null means not measured."""

    run_id: str = Field(unique=True)
    rubric_id: str
    n_tools: pl.Int64 = Field(ge=0)  # n of CONTRACT 5
    injector_tokens: pl.Float64 = Field(ge=0)  # I of CONTRACT 5
    context_efficiency: pl.Float64 = Field(nullable=True, ge=0, le=100)
    selection_robustness: pl.Float64 = Field(nullable=True, ge=0, le=100)
    surface_redundancy: pl.Float64 = Field(nullable=True, ge=0, le=100)
    schema_hygiene: pl.Float64 = Field(nullable=True, ge=0, le=100)
    description_quality: pl.Float64 = Field(nullable=True, ge=0, le=100)
    # What mcp-xray shows (CONTRACT 5): computed its way, rounding as it goes; null when
    # not measured. Not capped at 100: mcp-xray does not cap a labeled pass-rate mean.
    context_efficiency_display: pl.Float64 = Field(nullable=True, ge=0)
    selection_robustness_display: pl.Float64 = Field(nullable=True, ge=0)
    surface_redundancy_display: pl.Float64 = Field(nullable=True, ge=0)
    schema_hygiene_display: pl.Float64 = Field(nullable=True, ge=0)
    description_quality_display: pl.Float64 = Field(nullable=True, ge=0)
    measured_weight: pl.Float64 = Field(ge=0)
    overall: pl.Float64 = Field(nullable=True, ge=0, le=100)  # unrounded, null: none measured
    overall_display: pl.Float64 = Field(ge=0)  # one decimal; 0.0 when nothing is measured
    nothing_measured: bool
    letter: str  # from overall_display
    worst_phase: str = Field(nullable=True)
    reported_overall: pl.Float64 = Field(nullable=True)
    reported_letter: str = Field(nullable=True)
    overall_delta: pl.Float64 = Field(nullable=True)  # overall (unrounded) - reported
    # |overall_display - reported| <= 0.1 and letter = reported letter; null unless the
    # rubric is mcp-xray's own (rubric.is_default_surface) and the report has a grade.
    agrees_with_report: bool = Field(nullable=True)
    letter_agrees: bool = Field(nullable=True)

    class Config:
        strict = True
        coerce = False


class SurfaceFindingScore(Model):
    run_id: str
    finding_index: pl.Int64 = Field(ge=0)
    rubric_id: str
    kind: str
    severity: pl.Float64 = Field(ge=0, le=1)
    severity_display: pl.Float64 = Field(ge=0, le=1)  # mcp-xray's way, 3 decimals
    reported_severity: pl.Float64 = Field(nullable=True)

    class Config:
        strict = True
        coerce = False
        unique = ["run_id", "finding_index"]


class SurfacePhaseScore(Model):
    """Context efficiency of each phase (phase 'all' for an unphased server)."""

    run_id: str
    rubric_id: str
    finding_index: pl.Int64 = Field(ge=0)  # the token_cost finding the row comes from
    phase: str
    tool_count: pl.Int64 = Field(nullable=True, ge=0)
    tokens: pl.Float64 = Field(ge=0)
    tokens_per_tool_avg: pl.Float64 = Field(ge=0)
    context_efficiency: pl.Float64 = Field(ge=0, le=100)
    context_efficiency_display: pl.Float64 = Field(ge=0)
    is_worst_phase: bool

    class Config:
        strict = True
        coerce = False
        unique = ["run_id", "finding_index"]
