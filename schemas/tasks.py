"""Pandera models of the task-grade tables: what lands, and what scoring writes.

Each model is checked on a collected DataFrame right before its file is
written, so values are checked as well as the schema (on a LazyFrame pandera
would check the schema only).
"""

from __future__ import annotations

import polars as pl

from pipeline.tasks.fields import pandera_bounds as bounds
from pipeline.tasks.formulas import STATUS_GRADER_ERROR, STATUS_OUT_OF_RANGE, STATUS_SCORED
from schemas.model import Field, Model

ENV_TYPES = ("exploit", "detect", "patch", "audit")
STATUSES = (STATUS_SCORED, STATUS_GRADER_ERROR, STATUS_OUT_OF_RANGE)


class TaskRun(Model):
    """One landed graded attempt (CONTRACT section 2), its context and provenance.

    The bounds of the record's fields come from their declaration (pipeline/tasks/fields.py).
    """

    run_id: str = Field(unique=True, **bounds("run_id"))
    agent: str
    agent_version: str
    problem_id: str
    env_type: str
    graded_at: pl.Datetime(time_unit="us", time_zone="UTC") = Field()  # type: ignore[valid-type]
    defect_id: str = Field(nullable=True)
    cwe: str = Field(nullable=True)
    project: str = Field(nullable=True)
    trial: pl.Int64 = Field(**bounds("trial"))
    cost_usd: pl.Float64 = Field(nullable=True, **bounds("cost_usd"))
    tokens: pl.Float64 = Field(nullable=True, **bounds("tokens"))
    wall_seconds: pl.Float64 = Field(nullable=True, **bounds("wall_seconds"))
    env_internal_failure: bool
    allow_unbounded: bool
    failure_logs: pl.List(pl.String) = Field()  # type: ignore[valid-type]
    minimization_final_size: pl.Float64 = Field(nullable=True, **bounds("minimization_final_size"))
    minimization_minimal_size: pl.Float64 = Field(
        nullable=True, **bounds("minimization_minimal_size")
    )
    audit_recall: pl.Float64 = Field(nullable=True)
    audit_precision: pl.Float64 = Field(nullable=True)
    # The record exactly as it arrived (unknown fields at any depth included).
    record: str
    source: str
    line: pl.Int64 = Field(ge=1)
    batch_id: str
    content_hash: str

    class Config:
        strict = True
        coerce = False


class TaskComponent(Model):
    """One stored subscore and the weight the grader used, in long form."""

    run_id: str
    component: str
    stored_subscore: pl.Float64 = Field(ge=0, le=1)
    record_weight: pl.Float64 = Field(ge=0)
    batch_id: str

    class Config:
        strict = True
        unique = ["run_id", "component"]


class TaskPenalty(Model):
    run_id: str
    penalty: str
    value: pl.Float64 = Field(ge=0)
    batch_id: str

    class Config:
        strict = True
        unique = ["run_id", "penalty"]


class RunMetadata(Model):
    """grade.metadata flattened: dotted key paths, list items as ``[i]``."""

    run_id: str
    key: str
    value: str = Field(nullable=True)
    value_num: pl.Float64 = Field(nullable=True)
    batch_id: str

    class Config:
        strict = True


class Quarantine(Model):
    """A line that did not land, with what a person needs to fix it."""

    source: str
    line: pl.Int64 = Field(ge=0)
    # A row may stand for the block of lines line..line_end, all with this reason and no
    # raw text (past a file's first N bad lines, or a file that failed whole): replay
    # reads them again from the source. Null in lakes written before blocks existed.
    line_end: pl.Int64 = Field(nullable=True, ge=0)
    reason: str = Field(str_length={"min_value": 1})
    raw: str = Field(nullable=True)
    record_kind: str = Field(nullable=True)
    batch_id: str

    class Config:
        strict = True


# superseded: the same place was read again and quarantined with other text (no run).
# reread: a counted block (no text) was read again from its source; its lines are now runs
# or quarantine rows of the replay's batch (the row is at the block's first line).
# retried: an Inspect log left at "started" (line 0) whose eval was retried, or a log's
# entry counting the samples it lacked (an eval stopped early): the retry's log landed its
# samples; run_id is the retry's first run.
RESOLUTIONS = ("landed", "duplicate", "superseded", "reread", "retried")


class QuarantineResolved(Model):
    """A quarantined line that replay-quarantine released, and the run it became.

    Append-only: the quarantine row stays (so the same line read again is "seen")
    and the ``quarantine`` view leaves out every line listed here.
    """

    source: str
    # 0: a whole file the system would not let us read, read since (``superseded``).
    line: pl.Int64 = Field(ge=0)
    # Null for a block (``reread``) or a whole file, whose quarantine row has no text either.
    raw: str = Field(nullable=True)
    run_id: str = Field(nullable=True)
    # landed: the line is that run now; duplicate: a run of the same content had landed.
    outcome: str = Field(isin=list(RESOLUTIONS))
    batch_id: str

    class Config:
        strict = True


class TaskScore(Model):
    """One run scored under one rubric (CONTRACT section 4)."""

    run_id: str = Field(unique=True)
    rubric_id: str
    status: str = Field(isin=list(STATUSES))
    gate_component: str = Field(nullable=True)
    gate_passed: bool = Field(nullable=True)
    gated_out: bool = Field(nullable=True)
    weighted: pl.Float64 = Field(nullable=True)
    penalty_total: pl.Float64 = Field(nullable=True, ge=0)
    score: pl.Float64 = Field(nullable=True)
    weighted_as_graded: pl.Float64 = Field(nullable=True)
    score_as_graded: pl.Float64 = Field(nullable=True)
    passed: bool = Field(nullable=True)
    anomalies: pl.List(pl.String) = Field()  # type: ignore[valid-type]

    class Config:
        strict = True


class TaskComponentScore(Model):
    run_id: str
    rubric_id: str
    component: str
    subscore: pl.Float64 = Field(nullable=True)
    stored_subscore: pl.Float64 = Field(nullable=True)
    weight: pl.Float64 = Field(ge=0)
    weight_as_graded: pl.Float64 = Field(nullable=True, ge=0)
    is_gate: bool
    in_record: bool
    in_rubric: bool
    gated_out: bool
    contribution: pl.Float64 = Field(nullable=True)
    contribution_as_graded: pl.Float64 = Field(nullable=True)

    class Config:
        strict = True
        unique = ["run_id", "component"]


VERDICTS = ("regression", "improvement", "no_change")


class VersionRegression(Model):
    """The release gate for each consecutive pair of versions of an agent, under one rubric:
    one row per env type and one ``all`` row (pipeline.compare.gate.step_table)."""

    rubric_id: str
    agent: str
    env_type: str
    baseline: str
    candidate: str
    # 0 on the `all` row of a step with no paired problem (its gate fails: nothing measured).
    paired_problems: pl.Int64 = Field(ge=0)
    baseline_mean: pl.Float64 = Field(nullable=True)
    candidate_mean: pl.Float64 = Field(nullable=True)
    delta: pl.Float64 = Field(nullable=True)
    se: pl.Float64 = Field(nullable=True, ge=0)
    ci_low: pl.Float64 = Field(nullable=True)
    ci_high: pl.Float64 = Field(nullable=True)
    p_value: pl.Float64 = Field(nullable=True, ge=0, le=1)
    verdict: str = Field(isin=list(VERDICTS))
    insufficient_data: bool
    holm_family: pl.Int64 = Field(ge=0)
    p_value_holm: pl.Float64 = Field(nullable=True, ge=0, le=1)
    gate_verdict: str = Field(isin=list(VERDICTS))

    class Config:
        strict = True
        unique = ["rubric_id", "agent", "baseline", "candidate", "env_type"]
