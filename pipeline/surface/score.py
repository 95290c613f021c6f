"""Surface grades: mcp-xray reports landed as tables, then regraded from their findings.

CONTRACT.md section 3 (input, severity table) and section 5 (dimensions, overall,
letter). Seed 002: "Probes emit measurements (numbers); the grader assigns every
finding a severity, rolls findings into five weighted dimensions, and produces a
0–100 score and letter grade." The report's own severities and grade are kept as
``reported_*`` and compared with ours, never used for it.

Parsing reads the JSON with DuckDB (``sql/ingest/surface_*.sql``): one bad value must
quarantine one report, and Polars' ``json_decode`` would fail the whole column instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import polars as pl

from pipeline.expr import clamp, lerp, lerp01, true_div, with_py_round
from pipeline.rubric import Rubric
from pipeline.sql import run_sql
from pipeline.validate import repeated_keys
from schemas import polars_schema
from schemas.surface import (
    DIMENSIONS,
    SurfaceFinding,
    SurfaceFindingScore,
    SurfacePhaseScore,
    SurfaceRun,
    SurfaceScore,
)

# Probe names of CONTRACT 5 that decide whether a dimension is measured.
CONSOLIDATE_PROBE = "consolidate"
NOISE_PROBE = "noise"
# Contract 5: "F below" the lowest band.
FAIL_LETTER = "F"
# mcp-xray's own run-id length bound for task grades, applied to a report's own run_id.
MAX_RUN_ID_CHARS = 256
# A float-noise allowance on the agreement tolerance (|shown - reported| <= 0.1).
AGREEMENT_EPSILON = 1e-9
# Where mcp-xray rounds (CONTRACT 5): severities to 3 decimals, scores to 1.
SEVERITY_DECIMALS = 3
SCORE_DECIMALS = 1
# mcp-xray's order of the dimensions (its DIMENSIONS table): the overall's sums are taken
# in this order, so that the shown overall equals its own to the last bit.
XRAY_DIMENSION_ORDER = (
    "context_efficiency",
    "surface_redundancy",
    "schema_hygiene",
    "description_quality",
    "selection_robustness",
)
# The reason lists the first few problems of a report; the count says how many more.
MAX_REASONS = 8
# CONTRACT 3: a run_id made for a report whose server.version is null says so.
UNVERSIONED = "unversioned"
# CONTRACT 5: an unphased server's by_phase row is "named all".
ALL_PHASES = "all"
SHOWN_VALUE_CHARS = 80

_NUMERIC_TYPES = ("UBIGINT", "BIGINT", "HUGEINT", "UHUGEINT", "DOUBLE")


_SKIPPED_SCHEMA = pl.Schema(
    {
        "source": pl.String,
        "line": pl.Int64,
        "run_id": pl.String,
        "first_source": pl.String,
        "first_line": pl.Int64,
    }
)


@dataclass(frozen=True)
class SurfaceBatch:
    """Landed-shape tables of one batch of reports, and the reports that did not land.

    ``skipped``: later copies, in the same batch, of a report already in ``runs``
    (same run_id, same content_hash): source, line, run_id, first_source, first_line.
    """

    runs: pl.DataFrame
    findings: pl.DataFrame
    quarantine: pl.DataFrame
    skipped: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(schema=_SKIPPED_SCHEMA),
    )


@dataclass(frozen=True)
class SurfaceScoring:
    runs: pl.LazyFrame  # surface_scores
    findings: pl.LazyFrame  # surface_finding_scores
    phases: pl.LazyFrame  # surface_phase_scores


# --------------------------------------------------------------------------- validation


class Expect(Enum):
    """What a field must hold; the value is the phrase a reason uses."""

    STRING = "a string"
    NON_EMPTY = "a non-empty string"
    NUMBER = "a finite number"
    NON_NEGATIVE = "a finite number >= 0"
    COUNT = "a whole number >= 0"
    BOOL = "true or false"
    OBJECT = "an object"
    ARRAY = "a list"
    STRINGS = "a list of strings"
    TARGET = "a tool name or a list of tool names"


def _type(name: str) -> pl.Expr:
    return pl.col(f"{name}_t")


def _value(name: str) -> pl.Expr:
    return pl.col(f"{name}_v")


def _present(name: str) -> pl.Expr:
    """The key is there and not JSON null (null counts as absent for optional fields)."""
    return _type(name).is_not_null() & (_type(name) != "NULL")


def _number(name: str) -> pl.Expr:
    """The value as a finite float when its JSON type is a number, else null."""
    num = _value(name).cast(pl.Float64, strict=False)
    return pl.when(_type(name).is_in(_NUMERIC_TYPES) & num.is_finite()).then(num)


def _count(name: str) -> pl.Expr:
    num = _number(name)
    return pl.when(num == num.floor()).then(num).cast(pl.Int64)


def _text(name: str) -> pl.Expr:
    return pl.when(_type(name) == "VARCHAR").then(_value(name))


def _bool(name: str) -> pl.Expr:
    return pl.when(_type(name) == "BOOLEAN").then(_value(name) == "true")


def _valid(name: str, expect: Expect) -> pl.Expr:
    t = _type(name)
    num = _value(name).cast(pl.Float64, strict=False)
    is_number = t.is_in(_NUMERIC_TYPES) & num.is_finite()
    all_strings = (
        pl.col(f"{name}_item_types").list.eval(pl.element() != "VARCHAR").list.any().not_()
    )
    match expect:
        case Expect.STRING:
            return t == "VARCHAR"
        case Expect.NON_EMPTY:
            return (t == "VARCHAR") & (_value(name).str.len_chars() > 0)
        case Expect.NUMBER:
            return is_number
        case Expect.NON_NEGATIVE:
            return is_number & (num >= 0)
        case Expect.COUNT:
            return is_number & (num >= 0) & (num == num.floor())
        case Expect.BOOL:
            return t == "BOOLEAN"
        case Expect.OBJECT:
            return t == "OBJECT"
        case Expect.ARRAY:
            return t == "ARRAY"
        case Expect.STRINGS:
            return (t == "ARRAY") & all_strings
        case Expect.TARGET:
            return (t == "VARCHAR") | ((t == "ARRAY") & all_strings)


def _shown(name: str) -> pl.Expr:
    """The offending value as a person would read it in the file (strings quoted)."""
    text = _value(name).fill_null("null").str.slice(0, SHOWN_VALUE_CHARS)
    return pl.when(_type(name) == "VARCHAR").then(pl.format('"{}"', text)).otherwise(text)


@dataclass(frozen=True)
class Check:
    """One field of a report: ``name`` is its column prefix in the SQL output."""

    name: str
    path: str
    expect: Expect
    required: pl.Expr | bool = False
    # Only checked where this holds (its parent is an object, the finding has that kind...).
    applies: pl.Expr | bool = True


def _problem(check: Check, where: pl.Expr) -> pl.Expr:
    """A reason naming the field and its value, or null when the field is fine.

    ``where`` is the field's location as text (``server.name``, ``findings[3].kind``).
    """
    applies = pl.lit(check.applies) if isinstance(check.applies, bool) else check.applies
    required = pl.lit(check.required) if isinstance(check.required, bool) else check.required
    present = _present(check.name)
    return (
        pl.when(applies.fill_null(False) & ~present & required.fill_null(False))
        .then(
            pl.format(
                "{} is {}: expected {}", where, _absence(check.name), pl.lit(check.expect.value)
            )
        )
        .when(applies.fill_null(False) & present & ~_valid(check.name, check.expect))
        .then(
            pl.format("{} = {}: expected {}", where, _shown(check.name), pl.lit(check.expect.value))
        )
    )


def _absence(name: str) -> pl.Expr:
    """How a field is not there: "null" when the key holds JSON null, "missing" when absent."""
    return pl.when(_type(name) == "NULL").then(pl.lit("null")).otherwise(pl.lit("missing"))


def _problems(checks: Sequence[Check], where: Mapping[str, pl.Expr]) -> pl.Expr:
    return pl.concat_list([_problem(c, where[c.name]) for c in checks]).list.drop_nulls()


def _run_checks() -> list[Check]:
    server = _type("server") == "OBJECT"
    coverage = _type("coverage") == "OBJECT"
    grade = _type("grade") == "OBJECT"
    headline = _type("headline") == "OBJECT"
    return [
        Check("run_id", "run_id", Expect.NON_EMPTY),
        Check("server", "server", Expect.OBJECT, required=True),
        # CONTRACT 3: name and version may be null (a bare tool dump); the server key then
        # falls back to the fingerprint (``_server_key_problem``).
        Check("server_name", "server.name", Expect.NON_EMPTY, applies=server),
        Check("server_version", "server.version", Expect.NON_EMPTY, applies=server),
        Check("server_fingerprint", "server.fingerprint", Expect.STRING, applies=server),
        Check("server_tool_count", "server.tool_count", Expect.COUNT, applies=server),
        Check("findings", "findings", Expect.ARRAY, required=True),
        Check("coverage", "coverage", Expect.OBJECT),
        Check("coverage_ran", "coverage.ran", Expect.STRINGS, applies=coverage),
        Check("grade", "grade", Expect.OBJECT),
        Check("grade_overall", "grade.overall", Expect.NUMBER, applies=grade),
        Check("grade_letter", "grade.letter", Expect.STRING, applies=grade),
        Check("grade_subscores", "grade.subscores", Expect.OBJECT, applies=grade),
        Check("headline", "headline", Expect.OBJECT),
        Check("headline_phased", "headline.phased", Expect.BOOL, applies=headline),
        Check("headline_worst_phase", "headline.worst_phase", Expect.STRING, applies=headline),
        Check("headline_phase_tokens", "headline.phase_tokens", Expect.OBJECT, applies=headline),
    ]


def _server_key() -> pl.Expr:
    """CONTRACT 3: the server key is server.name, else server.fingerprint."""
    fingerprint = pl.when(_value("server_fingerprint").str.len_chars() > 0).then(
        _text("server_fingerprint")
    )
    return pl.coalesce(_text("server_name"), fingerprint)


def _server_key_problem() -> pl.Expr:
    """A server object without a name must have a fingerprint to be told apart by."""
    no_key = (_type("server") == "OBJECT") & ~_present("server_name") & _server_key().is_null()
    return pl.when(no_key).then(
        pl.format(
            "server.name is {} and server.fingerprint is {}: expected a non-empty string in "
            "one of them (the server key is server.name, else server.fingerprint)",
            _absence("server_name"),
            pl.when(_present("server_fingerprint"))
            .then(pl.format("{}", _shown("server_fingerprint")))
            .otherwise(_absence("server_fingerprint")),
        )
    )


def _generated_at_problem() -> pl.Expr:
    """generated_at (top level, as mcp-xray writes it, or under server) must be RFC 3339.

    It is required only when the report has no run_id of its own, since run_id is then
    made of it; an offset is required so that versions order the same in every zone.
    """
    top, nested = _present("generated_at"), _present("server_generated_at")
    name = pl.when(top).then(pl.lit("generated_at")).otherwise(pl.lit("server.generated_at"))
    type_ = pl.when(top).then(_type("generated_at")).otherwise(_type("server_generated_at"))
    text = pl.when(top).then(_value("generated_at")).otherwise(_value("server_generated_at"))
    has_offset = text.str.contains(r"(?i)(z|[+-]\d{2}:?\d{2})$")
    parsed = (type_ == "VARCHAR") & pl.col("generated_at_ts").is_not_null() & has_offset
    shown = pl.when(type_ == "VARCHAR").then(pl.format('"{}"', text)).otherwise(text)
    expected = "an RFC 3339 timestamp with offset"
    return (
        pl.when(~top & ~nested & ~_present("run_id"))
        .then(
            pl.format(
                "generated_at is {}: expected {} (the report has no run_id, so run_id is "
                '<server.name or server.fingerprint>@<server.version or "unversioned">'
                "@<generated_at>)",
                _absence("generated_at"),
                pl.lit(expected),
            )
        )
        .when((top | nested) & ~parsed.fill_null(False))
        .then(pl.format("{} = {}: expected {}", name, shown, pl.lit(expected)))
    )


def _run_id_length_problem() -> pl.Expr:
    too_long = _text("run_id").str.len_chars() > MAX_RUN_ID_CHARS
    return pl.when(too_long.fill_null(False)).then(
        pl.format(
            "run_id has {} characters: expected at most {}",
            _text("run_id").str.len_chars(),
            pl.lit(MAX_RUN_ID_CHARS),
        )
    )


# Which finding kinds read which measurement key (the formulas of CONTRACT 3 and 5). A key
# is checked only on the kinds that use it: elsewhere it is informational.
_TOKEN_COST = "token_cost"


def _finding_checks() -> list[Check]:
    is_object = _type("finding") == "OBJECT"
    # A measurement of the wrong type is one problem, not one per key.
    measured = is_object & (~_present("measurement") | (_type("measurement") == "OBJECT"))
    kind = _text("kind")
    token_cost = measured & (kind == _TOKEN_COST)
    scope = _text("m_scope")
    sized = scope.is_in(["surface", "phase"]).fill_null(False)

    def of(kind_name: str) -> pl.Expr:
        return measured & (kind == kind_name)

    return [
        Check("probe", "probe", Expect.STRING, applies=is_object),
        Check("kind", "kind", Expect.NON_EMPTY, required=True, applies=is_object),
        Check("target", "target", Expect.TARGET, applies=is_object),
        Check("measurement", "measurement", Expect.OBJECT, applies=is_object),
        Check("severity", "severity", Expect.NUMBER, applies=is_object),
        Check("confidence", "confidence", Expect.NUMBER, applies=is_object),
        Check("m_scope", "measurement.scope", Expect.STRING, applies=token_cost),
        Check("m_tokens", "measurement.tokens", Expect.NON_NEGATIVE, sized, token_cost),
        Check("m_tool_count", "measurement.tool_count", Expect.COUNT, sized, token_cost),
        Check(
            "m_tokens_per_tool_avg",
            "measurement.tokens_per_tool_avg",
            Expect.NON_NEGATIVE,
            sized,
            token_cost,
        ),
        Check("m_share", "measurement.share", Expect.NUMBER, applies=token_cost),
        Check(
            "m_phase",
            "measurement.phase",
            Expect.NON_EMPTY,
            required=(scope == "phase").fill_null(False),
            applies=token_cost,
        ),
        Check("m_worst_phase", "measurement.worst_phase", Expect.STRING, applies=token_cost),
        Check("m_smell", "measurement.smell", Expect.STRING, applies=of("schema_smell")),
        Check(
            "m_tokens_saved_est",
            "measurement.tokens_saved_est",
            Expect.NUMBER,
            applies=of("merge_candidate"),
        ),
        Check("m_wide_union", "measurement.wide_union", Expect.BOOL, applies=of("merge_candidate")),
        Check(
            "m_mixes_read_write",
            "measurement.mixes_read_write",
            Expect.BOOL,
            applies=of("merge_candidate"),
        ),
        Check("m_pass_rate", "measurement.pass_rate", Expect.NUMBER, applies=of("selection_error")),
        Check("m_mode", "measurement.mode", Expect.STRING, applies=of("selection_error")),
        Check("m_fire_rate", "measurement.fire_rate", Expect.NUMBER, applies=of("distraction")),
        Check(
            "m_tokens_est",
            "measurement.tokens_est",
            Expect.NON_NEGATIVE,
            applies=of("hidden_injector"),
        ),
        Check("m_injector_kind", "measurement.kind", Expect.STRING, applies=of("hidden_injector")),
        Check(
            "m_recommend_jit",
            "measurement.recommend_jit",
            Expect.BOOL,
            applies=of("jit_candidate"),
        ),
    ]


def _finding_problems() -> pl.Expr:
    checks = _finding_checks()
    where = {c.name: pl.format(f"findings[{{}}].{c.path}", pl.col("finding_index")) for c in checks}
    not_object = pl.when(_type("finding") != "OBJECT").then(
        pl.format(
            "findings[{}] = {}: expected an object",
            pl.col("finding_index"),
            _value("finding").str.slice(0, SHOWN_VALUE_CHARS),
        )
    )
    finding = pl.format("findings[{}]", pl.col("finding_index"))
    repeated = [
        repeated_keys("finding_keys", finding),
        repeated_keys("measurement_keys", pl.format("{}.measurement", finding)),
    ]
    return pl.concat_list([not_object, *repeated, _problems(checks, where)]).list.drop_nulls()


# ------------------------------------------------------------------------------ parsing


def _landed_runs(fields: pl.DataFrame) -> pl.DataFrame:
    generated_text = pl.coalesce(_text("generated_at"), _text("server_generated_at"))
    version = pl.coalesce(_text("server_version"), pl.lit(UNVERSIONED))
    run_id = pl.coalesce(
        _text("run_id"), pl.format("{}@{}@{}", _server_key(), version, generated_text)
    )
    return fields.select(
        run_id=run_id,
        server=_server_key(),
        server_version=_text("server_version"),
        fingerprint=_text("server_fingerprint"),
        tool_count=_count("server_tool_count"),
        generated_at=pl.col("generated_at_ts").dt.convert_time_zone("UTC").dt.cast_time_unit("us"),
        generated_at_text=generated_text,
        coverage_ran=pl.when(_type("coverage_ran") == "ARRAY")
        .then(pl.col("coverage_ran_items"))
        .otherwise(pl.lit([], dtype=pl.List(pl.String))),
        finding_count=pl.col("finding_count").cast(pl.Int64),
        reported_overall=_number("grade_overall"),
        reported_letter=_text("grade_letter"),
        reported_subscores=pl.when(_type("grade_subscores") == "OBJECT").then(
            _value("grade_subscores")
        ),
        phased=_bool("headline_phased"),
        reported_worst_phase=_text("headline_worst_phase"),
        phase_tokens=pl.when(_type("headline_phase_tokens") == "OBJECT").then(
            _value("headline_phase_tokens")
        ),
        record=pl.col("raw"),
        source=pl.col("source"),
        line=pl.col("line").cast(pl.Int64),
        batch_id=pl.col("batch_id"),
        content_hash=pl.col("content_hash"),
    )


def _landed_findings(fields: pl.DataFrame) -> pl.DataFrame:
    return fields.select(
        "source",
        "line",
        finding_index=pl.col("finding_index").cast(pl.Int64),
        probe=_text("probe"),
        kind=_text("kind"),
        target=pl.when(_type("target") == "VARCHAR")
        .then(pl.concat_list(_value("target")))
        .when(_type("target") == "ARRAY")
        .then(pl.col("target_items"))
        .otherwise(pl.lit([], dtype=pl.List(pl.String))),
        target_is_list=(_type("target") == "ARRAY").fill_null(False),
        measurement=pl.when(_type("measurement") == "OBJECT")
        .then(_value("measurement"))
        .otherwise(pl.lit("{}")),
        scope=_text("m_scope"),
        tokens=_number("m_tokens"),
        tool_count=_count("m_tool_count"),
        tokens_per_tool_avg=_number("m_tokens_per_tool_avg"),
        share=_number("m_share"),
        smell=_text("m_smell"),
        tokens_saved_est=_number("m_tokens_saved_est"),
        wide_union=_bool("m_wide_union"),
        mixes_read_write=_bool("m_mixes_read_write"),
        pass_rate=_number("m_pass_rate"),
        mode=_text("m_mode"),
        fire_rate=_number("m_fire_rate"),
        tokens_est=_number("m_tokens_est"),
        injector_kind=_text("m_injector_kind"),
        recommend_jit=_bool("m_recommend_jit"),
        phase=_text("m_phase"),
        worst_phase=_text("m_worst_phase"),
        reported_severity=_number("severity"),
        confidence=_number("confidence"),
        detail=pl.when(_present("detail")).then(pl.col("detail_json")),
    )


def _reason(problems: pl.Expr) -> pl.Expr:
    """Problems joined into one reason; past MAX_REASONS, a count of the rest."""
    more = problems.list.len().cast(pl.Int64) - MAX_REASONS
    head = problems.list.head(MAX_REASONS).list.join("; ")
    return (
        pl.when(more > 0).then(pl.format("{}; and {} more problem(s)", head, more)).otherwise(head)
    )


_RECORD_SCHEMA = pl.Schema(
    {
        "source": pl.String,
        "line": pl.Int64,
        "raw": pl.String,
        "content_hash": pl.String,
        "batch_id": pl.String,
    }
)
_QUARANTINE_SCHEMA = pl.Schema(
    {
        "source": pl.String,
        "line": pl.Int64,
        "line_end": pl.Int64,
        "reason": pl.String,
        "raw": pl.String,
        "record_kind": pl.String,
        "batch_id": pl.String,
    }
)


def parse_reports(records: pl.DataFrame) -> SurfaceBatch:
    """Surface records (source, line, raw, content_hash, batch_id) to landed tables.

    A report with any problem (its own fields or any finding's) is quarantined whole,
    with every problem in its reason: landing part of a report would grade a surface
    that was never measured. Within the batch, a second report with a run_id already
    seen is skipped when its content is the same and quarantined when it differs.
    """
    if records.is_empty():
        # Most ingest chunks hold task grades only: their empty tables cost no query (~0.2 s).
        return SurfaceBatch(
            runs=pl.DataFrame(schema=polars_schema(SurfaceRun)),
            findings=pl.DataFrame(schema=polars_schema(SurfaceFinding)),
            quarantine=pl.DataFrame(schema=_QUARANTINE_SCHEMA),
        )
    records = records.select(list(_RECORD_SCHEMA)).cast(_RECORD_SCHEMA)
    records = records.with_row_index("_order")
    key = ["source", "line"]
    fields = run_sql("ingest/surface_runs.sql", {"records": records.drop("_order")}).join(
        records.select(*key, "_order"), on=key
    )
    finding_fields = run_sql("ingest/surface_findings.sql", {"records": records.drop("_order")})

    finding_problems = (
        finding_fields.select(*key, problems=_finding_problems())
        .explode("problems")
        .drop_nulls("problems")
        .group_by(key, maintain_order=True)
        .agg(finding_problems=pl.col("problems"))
    )
    run_checks = _run_checks()
    run_problems = pl.concat_list(
        [
            _problems(run_checks, {c.name: pl.lit(c.path) for c in run_checks}),
            _server_key_problem(),
            _generated_at_problem(),
            _run_id_length_problem(),
        ]
    ).list.drop_nulls()
    checked = (
        fields.with_columns(run_problems=run_problems)
        .join(finding_problems, on=key, how="left", maintain_order="left")
        .with_columns(
            problems=pl.concat_list(
                "run_problems",
                pl.col("finding_problems").fill_null(pl.lit([], dtype=pl.List(pl.String))),
            )
        )
    )
    bad = checked.filter(pl.col("problems").list.len() > 0)
    good = checked.filter(pl.col("problems").list.len() == 0)
    runs = _landed_runs(good).with_columns(_order=good["_order"])

    # First occurrence of a run_id in the batch wins; later ones are judged against it.
    first = runs.sort("_order").group_by("run_id", maintain_order=True).first()
    later = runs.join(first.select("run_id", "_order"), on=["run_id", "_order"], how="anti")
    later = later.join(
        first.select(
            "run_id",
            first_source="source",
            first_line="line",
            first_hash="content_hash",
        ),
        on="run_id",
    )
    same = pl.col("content_hash") == pl.col("first_hash")
    skipped = later.filter(same).select(list(_SKIPPED_SCHEMA))
    conflicting = later.filter(~same).select(
        *key,
        reason=pl.format(
            'run_id = "{}" already appears in this batch at {} line {} with different '
            "content: give each report its own run_id",
            pl.col("run_id"),
            pl.col("first_source"),
            pl.col("first_line"),
        ),
    )
    landed = first.sort("_order").select(list(polars_schema(SurfaceRun)))

    findings = (
        _landed_findings(finding_fields)
        .join(landed.select(*key, "run_id", "batch_id"), on=key, maintain_order="left")
        .sort("run_id", "finding_index")
        .select(list(polars_schema(SurfaceFinding)))
    )

    quarantine = pl.concat(
        [
            bad.select(*key, reason=_reason(pl.col("problems")), _order="_order"),
            conflicting.join(records.select(*key, "_order"), on=key),
        ]
    ).join(records.select(*key, "raw", "batch_id"), on=key)
    quarantine = (
        quarantine.sort("_order")
        .select(
            *key,
            "reason",
            "raw",
            line_end=pl.lit(None, pl.Int64),
            record_kind=pl.lit("surface"),
            batch_id="batch_id",
        )
        .select(list(_QUARANTINE_SCHEMA))
        .cast(_QUARANTINE_SCHEMA)
    )
    return SurfaceBatch(runs=landed, findings=findings, quarantine=quarantine, skipped=skipped)


# ----------------------------------------------------------------------------- severity


def _div(x: pl.Expr, y: float, shown: bool) -> pl.Expr:
    """Shown values divide as Python does (one rounding); stored ones as Polars does."""
    return true_div(x, y) if shown else x / y


def with_shown_lerps(
    frame: pl.LazyFrame, tokens_per_tool_avg: str, tokens: str, s: Mapping[str, Any]
) -> pl.LazyFrame:
    """mcp-xray's two lerp scores of context efficiency, as columns ``per_tool_lerp`` and
    ``total_lerp``: 100 at or below good, 0 at or above bad, in between ``100 × (1 − (value
    − good) / (bad − good))`` rounded to one decimal."""
    anchors = {
        "per_tool_lerp": (tokens_per_tool_avg, s["tokens_per_tool_good"], s["tokens_per_tool_bad"]),
        "total_lerp": (tokens, s["surface_tokens_good"], s["surface_tokens_bad"]),
    }
    between = {
        name: 100.0 * (1.0 - true_div(pl.col(value) - good, pl.lit(bad) - good))
        for name, (value, good, bad) in anchors.items()
    }
    ends = {
        name: pl.when(pl.col(value) <= good)
        .then(pl.lit(100.0))
        .when(pl.col(value) >= bad)
        .then(pl.lit(0.0))
        .otherwise(pl.col(name))
        for name, (value, good, bad) in anchors.items()
    }
    return with_py_round(frame, SCORE_DECIMALS, **between).with_columns(**ends)


def token_cost_surface_severity(s: Mapping[str, Any], shown: bool = False) -> pl.Expr:
    """CONTRACT 3: token_cost, scope surface: "1 − lerp01(tokens_per_tool_avg, 150, 600)";
    shown, from the column ``per_tool_lerp`` (mcp-xray's lerp score, see ``with_shown_lerps``)."""
    good, bad = s["tokens_per_tool_good"], s["tokens_per_tool_bad"]
    if shown:
        return 1.0 - true_div(pl.col("per_tool_lerp"), 100.0)
    return 1.0 - lerp01(pl.col("tokens_per_tool_avg"), good, bad)


def token_cost_share_severity(s: Mapping[str, Any]) -> pl.Expr:
    """CONTRACT 3: token_cost, any other scope: "clamp(share × 3), share defaulting to 0"."""
    return clamp(pl.col("share").fill_null(0.0) * s["token_share_multiplier"])


def schema_smell_severity(s: Mapping[str, Any]) -> pl.Expr:
    """CONTRACT 3: "by smell: missing_description 0.9, tiny_description 0.7, ... any other
    smell 0.4" (a smell-less schema_smell is "any other smell", as in mcp-xray)."""
    table: dict[str, float] = dict(s["smell_severity"])
    other = float(s["other_smell_severity"])
    if not table:
        return pl.lit(other)
    return (
        pl.col("smell")
        .replace_strict(table, default=other, return_dtype=pl.Float64)
        .fill_null(other)
    )


def merge_candidate_severity(s: Mapping[str, Any], shown: bool = False) -> pl.Expr:
    """CONTRACT 3: "clamp((0.4 + clamp(tokens_saved_est/800) × 0.4) × 0.7 if wide_union
    × 0.6 if mixes_read_write)" (tokens_saved_est defaulting to 0, flags to false)."""
    saved = clamp(_div(pl.col("tokens_saved_est").fill_null(0.0), s["merge_saved_scale"], shown))
    base = s["merge_base"] + saved * s["merge_saved_points"]
    wide = (
        pl.when(pl.col("wide_union").fill_null(False))
        .then(pl.lit(s["merge_wide_union_factor"]))
        .otherwise(pl.lit(1.0))
    )
    mixes = (
        pl.when(pl.col("mixes_read_write").fill_null(False))
        .then(pl.lit(s["merge_mixes_read_write_factor"]))
        .otherwise(pl.lit(1.0))
    )
    return clamp(base * wide * mixes)


def selection_error_severity() -> pl.Expr:
    """CONTRACT 3: selection_error "clamp(1 − pass_rate)" (pass_rate defaulting to 1, as
    mcp-xray reads it)."""
    return clamp(1.0 - pl.col("pass_rate").fill_null(1.0))


def distraction_severity() -> pl.Expr:
    """CONTRACT 3: distraction "clamp(fire_rate)" (fire_rate defaulting to 0)."""
    return clamp(pl.col("fire_rate").fill_null(0.0))


def hidden_injector_severity(s: Mapping[str, Any], shown: bool = False) -> pl.Expr:
    """CONTRACT 3: hidden_injector "clamp(tokens_est / 1000)"."""
    return clamp(_div(pl.col("tokens_est").fill_null(0.0), s["hidden_injector_scale"], shown))


def jit_candidate_severity(s: Mapping[str, Any]) -> pl.Expr:
    """CONTRACT 3: jit_candidate "0.5 if recommend_jit else 0.1"."""
    return (
        pl.when(pl.col("recommend_jit").fill_null(False))
        .then(pl.lit(s["jit_recommended_severity"]))
        .otherwise(pl.lit(s["jit_not_recommended_severity"]))
    )


def finding_severity(rubric: Rubric, shown: bool = False) -> pl.Expr:
    """CONTRACT 3's severity table as one chain over ``kind`` (seed 002: "the grader assigns
    every finding a severity"); "anything else (result_size, a kind added later)" is 0.

    ``shown``: the severity mcp-xray shows before its rounding to 3 decimals (see
    ``severity_shown``), from its lerp score and Python's division.
    """
    s = rubric.surface
    kind = pl.col("kind")
    chain = (
        pl.when((kind == "token_cost") & (pl.col("scope") == "surface"))
        .then(token_cost_surface_severity(s, shown))
        .when(kind == "token_cost")
        .then(token_cost_share_severity(s))
        .when(kind == "schema_smell")
        .then(schema_smell_severity(s))
        .when(kind == "merge_candidate")
        .then(merge_candidate_severity(s, shown))
        .when(kind == "duplicate")
        .then(pl.lit(s["duplicate_severity"]))
        .when(kind == "selection_error")
        .then(selection_error_severity())
        .when(kind == "distraction")
        .then(distraction_severity())
        .when(kind == "hidden_injector")
        .then(hidden_injector_severity(s, shown))
        .when(kind == "resource_candidate")
        .then(pl.lit(s["resource_candidate_severity"]))
        .when(kind == "jit_candidate")
        .then(jit_candidate_severity(s))
        .otherwise(pl.lit(0.0))
    )
    # "severity (0–1)": a rubric constant above 1 must not make a severity above 1.
    return clamp(chain.cast(pl.Float64)).alias("severity")


def severity_shown(findings: pl.LazyFrame, rubric: Rubric) -> pl.LazyFrame:
    """``severity_display``: the severity mcp-xray shows, rounded to 3 decimals. Applied to
    every kind; a no-op on the fixed ones (0.9, 0.45, ... are 3-decimal already)."""
    lerps = with_shown_lerps(findings, "tokens_per_tool_avg", "tokens", rubric.surface)
    severity = finding_severity(rubric, shown=True).alias("severity_display")
    return with_py_round(lerps, SEVERITY_DECIMALS, severity_display=severity).drop(
        "per_tool_lerp", "total_lerp"
    )


# --------------------------------------------------------------------------- dimensions


def _not_below_zero(x: pl.Expr) -> pl.Expr:
    """CONTRACT 5: "each dimension 0–100, never below 0" (the top only binds under a rubric
    whose constants could push past 100, e.g. shares summing above 1)."""
    return x.clip(0.0, 100.0)


def context_efficiency_score(
    tokens_per_tool_avg: pl.Expr, tokens: pl.Expr, injector_tokens: pl.Expr, s: Mapping[str, Any]
) -> pl.Expr:
    """CONTRACT 5: "0.6 × lerp(tokens_per_tool_avg, 150, 600) + 0.4 × lerp(tokens, 1500,
    12000) − clamp(I / 2000) × 10"; null when there is no surface token_cost finding."""
    per_tool = lerp(tokens_per_tool_avg, s["tokens_per_tool_good"], s["tokens_per_tool_bad"])
    total = lerp(tokens, s["surface_tokens_good"], s["surface_tokens_bad"])
    shave = clamp(injector_tokens / s["injector_tokens_scale"]) * s["injector_points"]
    return _not_below_zero(s["per_tool_share"] * per_tool + s["surface_share"] * total - shave)


def surface_redundancy_score(
    consolidate_ran: pl.Expr, redundancy_severity: pl.Expr, s: Mapping[str, Any]
) -> pl.Expr:
    """CONTRACT 5: measured when consolidate ran: "100 − clamp(Σ severity of
    merge_candidate and duplicate / 4) × 100"."""
    score = 100.0 - clamp(redundancy_severity / s["redundancy_scale"]) * 100.0
    return pl.when(consolidate_ran).then(_not_below_zero(score))


def schema_hygiene_score(n_tools: pl.Expr, structural_severity: pl.Expr) -> pl.Expr:
    """CONTRACT 5: measured when n > 0: "100 − clamp(Σ severity of schema smells other than
    the four description smells / n) × 100"."""
    score = 100.0 - clamp(structural_severity / n_tools) * 100.0
    return pl.when(n_tools > 0).then(_not_below_zero(score))


def description_quality_score(
    n_tools: pl.Expr, description_severity: pl.Expr, proxy_severity: pl.Expr
) -> pl.Expr:
    """CONTRACT 5: measured when n > 0: "100 − clamp((Σ severity of the description smells +
    Σ severity of selection_error findings whose mode is confusability_proxy) / n) × 100"."""
    score = 100.0 - clamp((description_severity + proxy_severity) / n_tools) * 100.0
    return pl.when(n_tools > 0).then(_not_below_zero(score))


def selection_robustness_score(
    noise_ran: pl.Expr,
    labeled_count: pl.Expr,
    labeled_mean_pass_rate: pl.Expr,
    proxy_count: pl.Expr,
    n_tools: pl.Expr,
    fire_rate_sum: pl.Expr,
    s: Mapping[str, Any],
) -> pl.Expr:
    """CONTRACT 5: measured when noise ran: "with findings of mode labeled, mean(pass_rate)
    × 100; without, 100 − clamp(number of confusability_proxy findings / max(n, 1)) × 60;
    then − clamp(Σ fire_rate of distraction findings / 2) × 40"."""
    proxy_base = 100.0 - clamp(proxy_count / pl.max_horizontal(n_tools, 1)) * s["proxy_points"]
    base = (
        pl.when(labeled_count > 0)
        .then(labeled_mean_pass_rate * 100.0)
        .otherwise(_not_below_zero(proxy_base))
    )
    distraction = clamp(fire_rate_sum / s["distraction_scale"]) * s["distraction_points"]
    return pl.when(noise_ran).then(_not_below_zero(base - distraction))


def overall_score(weights: Mapping[str, float]) -> tuple[pl.Expr, pl.Expr]:
    """CONTRACT 5: "overall = Σ score × weight / Σ weight over measured dimensions ... null
    when none is measured". Returns (overall, Σ weight of the measured dimensions); when
    the measured weights sum to 0 there is nothing to average, so overall is null too."""
    numerator = pl.sum_horizontal([pl.col(d).fill_null(0.0) * float(w) for d, w in weights.items()])
    denominator = pl.sum_horizontal(
        [pl.when(pl.col(d).is_not_null()).then(float(w)).otherwise(0.0) for d, w in weights.items()]
    )
    return pl.when(denominator > 0).then(numerator / denominator), denominator


def letter_grade(overall_display: pl.Expr, bands: Mapping[str, float]) -> pl.Expr:
    """CONTRACT 5: "A+ ≥ 97, A ≥ 93, ... D- ≥ 60, F below", read off ``overall_display``
    (0.0, so F, when nothing is measured, as mcp-xray shows it)."""
    chain: Any = pl
    for letter, cutoff in sorted(bands.items(), key=lambda item: -item[1]):
        chain = chain.when(overall_display >= cutoff).then(pl.lit(letter))
    graded: pl.Expr = chain.otherwise(pl.lit(FAIL_LETTER)) if bands else pl.lit(FAIL_LETTER)
    return graded


# ------------------------------------------------------------------- shown (mcp-xray's way)
# CONTRACT 5: the display values are what mcp-xray shows: Python's round wherever it
# rounds (each lerp score and each dimension step to 1 decimal, severities to 3), sums
# taken in its order (``ordered_sum``), and Python's division (``true_div``), so that
# each equals mcp-xray's to the last bit, not merely within 0.05.


def _floored(x: pl.Expr) -> pl.Expr:
    """A dimension step as mcp-xray ends it, before its rounding: never below 0 (not
    max_horizontal, which would turn a null, not measured, into 0)."""
    return pl.when(x < 0.0).then(0.0).otherwise(x)


def ordered_sum(value: pl.Expr, where: pl.Expr, *order: str | pl.Expr) -> pl.Expr:
    """Σ value over the rows where ``where`` holds, added one by one in ``order`` (Python's
    ``sum`` over a list): a running sum's last value, since a plain sum may regroup terms."""
    terms = pl.when(where.fill_null(False)).then(value).otherwise(0.0)
    return terms.sort_by(list(order)).cum_sum().last()


def with_context_efficiency_shown(
    frame: pl.LazyFrame, injector_tokens: str, s: Mapping[str, Any]
) -> pl.LazyFrame:
    """``context_efficiency_display`` from the columns of ``with_shown_lerps``: ``0.6 ×
    per-tool + 0.4 × total`` rounded, then minus the instruction shave, floored, rounded
    again (mcp-xray shaves only when I > 0; a shave of 0 changes nothing)."""
    blended = s["per_tool_share"] * pl.col("per_tool_lerp") + s["surface_share"] * pl.col(
        "total_lerp"
    )
    shave = clamp(true_div(pl.col(injector_tokens), s["injector_tokens_scale"]))
    shaved = _floored(pl.col("context_efficiency_display") - shave * s["injector_points"])
    frame = with_py_round(frame, SCORE_DECIMALS, context_efficiency_display=blended)
    return with_py_round(frame, SCORE_DECIMALS, context_efficiency_display=shaved)


def surface_redundancy_display(
    consolidate_ran: pl.Expr, redundancy_severity: pl.Expr, s: Mapping[str, Any]
) -> pl.Expr:
    penalty = clamp(true_div(redundancy_severity, s["redundancy_scale"])) * 100.0
    return pl.when(consolidate_ran).then(_floored(100.0 - penalty))


def schema_hygiene_display(n_tools: pl.Expr, structural_severity: pl.Expr) -> pl.Expr:
    penalty = clamp(true_div(structural_severity, pl.max_horizontal(n_tools, 1))) * 100.0
    return pl.when(n_tools > 0).then(_floored(100.0 - penalty))


def description_quality_display(
    n_tools: pl.Expr, description_severity: pl.Expr, proxy_severity: pl.Expr
) -> pl.Expr:
    bad = description_severity + proxy_severity
    penalty = clamp(true_div(bad, pl.max_horizontal(n_tools, 1))) * 100.0
    return pl.when(n_tools > 0).then(_floored(100.0 - penalty))


def selection_robustness_display(
    noise_ran: pl.Expr,
    labeled_count: pl.Expr,
    labeled_pass_rate_sum: pl.Expr,
    proxy_count: pl.Expr,
    n_tools: pl.Expr,
    fire_rate_sum: pl.Expr,
    s: Mapping[str, Any],
) -> pl.Expr:
    """As mcp-xray shows it: the labeled mean is not capped at 100 there, only floored."""
    proxy_rate = clamp(true_div(proxy_count.cast(pl.Float64), pl.max_horizontal(n_tools, 1)))
    base = (
        pl.when(labeled_count > 0)
        .then(true_div(labeled_pass_rate_sum, labeled_count.cast(pl.Float64)) * 100.0)
        .otherwise(_floored(100.0 - proxy_rate * s["proxy_points"]))
    )
    distraction = clamp(true_div(fire_rate_sum, s["distraction_scale"])) * s["distraction_points"]
    return pl.when(noise_ran).then(_floored(base - distraction))


def overall_display_parts(weights: Mapping[str, float]) -> dict[str, pl.Expr]:
    """CONTRACT 5's overall as mcp-xray takes it, before its rounding (``overall_display``
    = ``shown_numerator / shown_denominator`` rounded to 1 decimal): its weights are fractions of 1
    (0.30, 0.25, 0.15...: the rubric's divided by their total, the same doubles), summed in
    its dimension order over the shown dimensions; when nothing is measured it divides by 1,
    showing 0.0."""
    total = sum(float(w) for w in weights.values())
    share = {d: float(w) / total if total > 0 else float(w) for d, w in weights.items()}
    order = [d for d in XRAY_DIMENSION_ORDER if d in share]
    order += [d for d in share if d not in order]
    numerator: pl.Expr = pl.lit(0.0)
    denominator: pl.Expr = pl.lit(0.0)
    for d in order:
        shown = pl.col(f"{d}_display")
        numerator = numerator + shown.fill_null(0.0) * share[d]
        denominator = denominator + pl.when(shown.is_not_null()).then(share[d]).otherwise(0.0)
    return {
        "shown_numerator": numerator,
        "shown_denominator": pl.when(denominator > 0).then(denominator).otherwise(1.0),
    }


# ------------------------------------------------------------------------------ scoring


def _run_stats(findings: pl.LazyFrame, desc_smells: Sequence[str]) -> pl.LazyFrame:
    """Per run, the sums and counts the dimensions are made of."""
    kind = pl.col("kind")
    desc = pl.col("smell").is_in(list(desc_smells)).fill_null(False)
    proxy = (kind == "selection_error") & (pl.col("mode") == "confusability_proxy").fill_null(False)
    labeled = (kind == "selection_error") & (pl.col("mode") == "labeled").fill_null(False)
    instructions = (kind == "hidden_injector") & (pl.col("injector_kind") == "instructions")
    return findings.group_by("run_id").agg(
        redundancy_severity=pl.col("severity")
        .filter(kind.is_in(["merge_candidate", "duplicate"]))
        .sum(),
        structural_severity=pl.col("severity").filter((kind == "schema_smell") & ~desc).sum(),
        description_severity=pl.col("severity").filter((kind == "schema_smell") & desc).sum(),
        proxy_severity=pl.col("severity").filter(proxy).sum(),
        proxy_count=proxy.sum().cast(pl.Int64),
        labeled_count=labeled.sum().cast(pl.Int64),
        labeled_mean_pass_rate=pl.col("pass_rate").fill_null(1.0).filter(labeled).mean(),
        fire_rate_sum=pl.col("fire_rate").fill_null(0.0).filter(kind == "distraction").sum(),
        injector_tokens=pl.col("tokens_est")
        .fill_null(0.0)
        .filter(instructions.fill_null(False))
        .sum(),
        **_shown_stats(desc, proxy, labeled, instructions),
    )


def _shown_stats(
    desc: pl.Expr, proxy: pl.Expr, labeled: pl.Expr, instructions: pl.Expr
) -> dict[str, pl.Expr]:
    """The sums of the shown dimensions, over shown severities, in mcp-xray's order:
    findings in report order, except redundancy (its merge candidates, then duplicates)."""
    kind, shown, at = pl.col("kind"), pl.col("severity_display"), "finding_index"
    sums = {
        "redundancy_shown": ordered_sum(
            shown, kind.is_in(["merge_candidate", "duplicate"]), kind == "duplicate", at
        ),
        "structural_shown": ordered_sum(shown, (kind == "schema_smell") & ~desc, at),
        "description_shown": ordered_sum(shown, (kind == "schema_smell") & desc, at),
        "proxy_shown": ordered_sum(shown, proxy, at),
        "labeled_pass_rate_sum": ordered_sum(pl.col("pass_rate").fill_null(1.0), labeled, at),
        "fire_rate_shown": ordered_sum(
            pl.col("fire_rate").fill_null(0.0), kind == "distraction", at
        ),
        "injector_tokens_shown": ordered_sum(pl.col("tokens_est").fill_null(0.0), instructions, at),
    }
    return sums


def _surface_rows(findings: pl.LazyFrame) -> pl.LazyFrame:
    """The first surface token_cost finding of each run (mcp-xray reads the first)."""
    is_surface = (pl.col("kind") == _TOKEN_COST) & (pl.col("scope") == "surface")
    return (
        findings.filter(is_surface)
        .sort("run_id", "finding_index")
        .group_by("run_id")
        .first()
        .select(
            "run_id",
            "finding_index",
            "tokens",
            "tokens_per_tool_avg",
            "worst_phase",
            surface_tool_count="tool_count",
        )
    )


def _tool_names(findings: pl.LazyFrame) -> pl.LazyFrame:
    """CONTRACT 5: without a surface finding, n is "the number of distinct string targets
    of token_cost findings of scope tool"."""
    per_tool = (
        (pl.col("kind") == _TOKEN_COST)
        & (pl.col("scope") == "tool")
        & ~pl.col("target_is_list")
        & (pl.col("target").list.len() == 1)
    )
    return (
        findings.filter(per_tool)
        .group_by("run_id")
        .agg(named_tools=pl.col("target").list.first().n_unique().cast(pl.Int64))
    )


def _inputs(runs: pl.LazyFrame, scored: pl.LazyFrame, s: Mapping[str, Any]) -> pl.LazyFrame:
    """Per run, what the dimensions read: sums, counts, the surface row, n, probes that ran."""
    stats = _run_stats(scored, s["description_smells"])
    # A run without findings has no stats row: its sums and counts are 0 (a mean stays null).
    counts = ["proxy_count", "labeled_count"]
    sums = [c for c in stats.collect_schema().names() if c not in (*counts, "run_id")]
    zero_filled = [c for c in sums if c != "labeled_mean_pass_rate"]
    return (
        runs.select("run_id", "coverage_ran", "reported_overall", "reported_letter")
        .join(stats, on="run_id", how="left")
        .join(_surface_rows(scored), on="run_id", how="left")
        .join(_tool_names(scored), on="run_id", how="left")
        .with_columns(
            [pl.col(c).fill_null(0.0) for c in zero_filled]
            + [pl.col(c).fill_null(0) for c in counts]
        )
        .with_columns(
            n_tools=pl.when(pl.col("finding_index").is_not_null())
            .then(pl.col("surface_tool_count"))
            .otherwise(pl.col("named_tools"))
            .fill_null(0)
            .cast(pl.Int64),
            consolidate_ran=pl.col("coverage_ran")
            .list.contains(CONSOLIDATE_PROBE)
            .fill_null(False),
            noise_ran=pl.col("coverage_ran").list.contains(NOISE_PROBE).fill_null(False),
        )
    )


def _dimensions(s: Mapping[str, Any]) -> dict[str, pl.Expr]:
    """The five dimensions, unrounded (CONTRACT 5)."""
    n, c = pl.col("n_tools"), pl.col
    return {
        "context_efficiency": context_efficiency_score(
            c("tokens_per_tool_avg"), c("tokens"), c("injector_tokens"), s
        ),
        "surface_redundancy": surface_redundancy_score(
            c("consolidate_ran"), c("redundancy_severity"), s
        ),
        "schema_hygiene": schema_hygiene_score(n, c("structural_severity")),
        "description_quality": description_quality_score(
            n, c("description_severity"), c("proxy_severity")
        ),
        "selection_robustness": selection_robustness_score(
            c("noise_ran"),
            c("labeled_count"),
            c("labeled_mean_pass_rate"),
            c("proxy_count"),
            n,
            c("fire_rate_sum"),
            s,
        ),
    }


def _with_dimensions_shown(table: pl.LazyFrame, s: Mapping[str, Any]) -> pl.LazyFrame:
    """The five dimensions as mcp-xray shows them (``<dimension>_display``)."""
    n, c = pl.col("n_tools"), pl.col
    table = with_shown_lerps(table, "tokens_per_tool_avg", "tokens", s)
    table = with_context_efficiency_shown(table, "injector_tokens_shown", s)
    return with_py_round(
        table,
        SCORE_DECIMALS,
        surface_redundancy_display=surface_redundancy_display(
            c("consolidate_ran"), c("redundancy_shown"), s
        ),
        schema_hygiene_display=schema_hygiene_display(n, c("structural_shown")),
        description_quality_display=description_quality_display(
            n, c("description_shown"), c("proxy_shown")
        ),
        selection_robustness_display=selection_robustness_display(
            c("noise_ran"),
            c("labeled_count"),
            c("labeled_pass_rate_sum"),
            c("proxy_count"),
            n,
            c("fire_rate_shown"),
            s,
        ),
    )


def _grade(table: pl.LazyFrame, rubric: Rubric) -> pl.LazyFrame:
    """Overall (unrounded and shown), letter, and the agreement with the report's own."""
    s = rubric.surface
    overall, measured_weight = overall_score(rubric.surface_weights)
    nothing = pl.all_horizontal([pl.col(d).is_null() for d in DIMENSIONS])
    table = table.with_columns(
        overall=overall,
        measured_weight=measured_weight,
        nothing_measured=nothing,
        **overall_display_parts(rubric.surface_weights),
    )
    shown = true_div(pl.col("shown_numerator"), pl.col("shown_denominator"))
    table = with_py_round(table, SCORE_DECIMALS, overall_display=shown).with_columns(
        letter=letter_grade(pl.col("overall_display"), s["letter_bands"])
    )
    # Judged on the shown values, the ones the report holds: equal for a genuine report.
    off = (pl.col("overall_display") - pl.col("reported_overall")).abs()
    tolerance = float(s["agreement_tolerance"]) + AGREEMENT_EPSILON
    checkable = rubric.is_default_surface
    unknown = pl.lit(None, pl.Boolean)
    return table.with_columns(
        overall_delta=pl.col("overall") - pl.col("reported_overall"),
        agrees_with_report=(off <= tolerance) if checkable else unknown,
        letter_agrees=(pl.col("letter") == pl.col("reported_letter")) if checkable else unknown,
    )


def score_surfaces(runs: pl.LazyFrame, findings: pl.LazyFrame, rubric: Rubric) -> SurfaceScoring:
    """Every report regraded under ``rubric``: severities, dimensions, overall, letter, phases."""
    s = rubric.surface
    rubric_id = pl.lit(rubric.rubric_id)
    scored = severity_shown(findings.with_columns(finding_severity(rubric)), rubric)
    finding_scores = scored.select(
        "run_id",
        "finding_index",
        rubric_id=rubric_id,
        kind="kind",
        severity="severity",
        severity_display="severity_display",
        reported_severity="reported_severity",
    )
    table = _with_dimensions_shown(_inputs(runs, scored, s).with_columns(**_dimensions(s)), s)
    table = _grade(table, rubric)
    run_scores = table.with_columns(rubric_id=rubric_id).select(list(polars_schema(SurfaceScore)))
    phases = _phase_scores(scored, table, s).with_columns(rubric_id=rubric_id)
    return SurfaceScoring(
        runs=run_scores.cast(polars_schema(SurfaceScore)),
        findings=finding_scores.cast(polars_schema(SurfaceFindingScore)),
        phases=phases.select(list(polars_schema(SurfacePhaseScore))).cast(
            polars_schema(SurfacePhaseScore)
        ),
    )


def _phase_scores(scored: pl.LazyFrame, table: pl.LazyFrame, s: Mapping[str, Any]) -> pl.LazyFrame:
    """CONTRACT 5 by_phase: "one row per scope phase token_cost finding ... or, for an
    unphased server, one row named all from the surface finding; its context_efficiency
    uses the same formula on that row".

    The instruction-injector shave applies to every phase row: server instructions are
    injected whatever phase is loaded, so the worst phase's row equals the dimension.
    """
    per_run = table.select("run_id", "injector_tokens", "injector_tokens_shown", "worst_phase")
    phase_rows = scored.filter(
        (pl.col("kind") == _TOKEN_COST) & (pl.col("scope") == "phase")
    ).select("run_id", "finding_index", "phase", "tool_count", "tokens", "tokens_per_tool_avg")
    surface = (
        scored.filter((pl.col("kind") == _TOKEN_COST) & (pl.col("scope") == "surface"))
        .sort("run_id", "finding_index")
        .group_by("run_id")
        .first()
    )
    unphased = surface.join(phase_rows, on="run_id", how="anti").select(
        "run_id",
        "finding_index",
        phase=pl.lit(ALL_PHASES),
        tool_count="tool_count",
        tokens="tokens",
        tokens_per_tool_avg="tokens_per_tool_avg",
    )
    rows = pl.concat([phase_rows, unphased]).join(per_run, on="run_id")
    row = pl.col("tokens_per_tool_avg"), pl.col("tokens")
    rows = with_shown_lerps(rows, "tokens_per_tool_avg", "tokens", s)
    rows = with_context_efficiency_shown(rows, "injector_tokens_shown", s)
    return rows.with_columns(
        context_efficiency=context_efficiency_score(*row, pl.col("injector_tokens"), s),
        is_worst_phase=(pl.col("phase") == ALL_PHASES)
        | (pl.col("phase") == pl.col("worst_phase")).fill_null(False),
    )
