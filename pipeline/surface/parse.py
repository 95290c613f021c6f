"""mcp-xray reports (CONTRACT 3) read into landed tables: an ingest step.

The JSON is read with DuckDB (``sql/ingest/surface_*.sql``, its columns generated from
``fields.py``): one bad value must quarantine one report, and Polars' ``json_decode``
would fail the whole column instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from pipeline.core.sql import connect, sql_text
from pipeline.surface.fields import (
    FIELDS_MARK,
    FINDING_FIELDS,
    RUN_FIELDS,
    Field,
    boolean,
    count,
    number,
    present,
    select_list,
    server_key,
    text,
    type_of,
    value_of,
)
from pipeline.surface.validate import finding_problems, reason, run_problems
from schemas import polars_schema
from schemas.surface import SurfaceFinding, SurfaceRun

# CONTRACT 3: a run_id made for a report whose server.version is null says so.
UNVERSIONED = "unversioned"
KEY = ["source", "line"]


@dataclass(frozen=True)
class SurfaceBatch:
    """Landed-shape tables of one batch of reports, and the reports that did not land.

    ``runs`` holds the first report of each run_id in the batch; ``repeats`` (the same
    columns) the later ones. A repeat is not judged here: whether it is a duplicate or a
    clash depends on the lake, which ingest's dedupe reads (pipeline/ingest/dedupe.py).
    """

    runs: pl.DataFrame
    findings: pl.DataFrame
    quarantine: pl.DataFrame
    repeats: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(schema=polars_schema(SurfaceRun)),
    )


def _landed_runs(fields: pl.DataFrame) -> pl.DataFrame:
    generated_text = pl.coalesce(text("generated_at"), text("server_generated_at"))
    version = pl.coalesce(text("server_version"), pl.lit(UNVERSIONED))
    run_id = pl.coalesce(
        text("run_id"), pl.format("{}@{}@{}", server_key(), version, generated_text)
    )
    return fields.select(
        run_id=run_id,
        server=server_key(),
        server_version=text("server_version"),
        fingerprint=text("server_fingerprint"),
        tool_count=count("server_tool_count"),
        generated_at=pl.col("generated_at_ts").dt.convert_time_zone("UTC").dt.cast_time_unit("us"),
        generated_at_text=generated_text,
        coverage_ran=pl.when(type_of("coverage_ran") == "ARRAY")
        .then(pl.col("coverage_ran_items"))
        .otherwise(pl.lit([], dtype=pl.List(pl.String))),
        finding_count=pl.col("finding_count").cast(pl.Int64),
        reported_overall=number("grade_overall"),
        reported_letter=text("grade_letter"),
        reported_subscores=pl.when(type_of("grade_subscores") == "OBJECT").then(
            value_of("grade_subscores")
        ),
        phased=boolean("headline_phased"),
        reported_worst_phase=text("headline_worst_phase"),
        phase_tokens=pl.when(type_of("headline_phase_tokens") == "OBJECT").then(
            value_of("headline_phase_tokens")
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
        probe=text("probe"),
        kind=text("kind"),
        target=pl.when(type_of("target") == "VARCHAR")
        .then(pl.concat_list(value_of("target")))
        .when(type_of("target") == "ARRAY")
        .then(pl.col("target_items"))
        .otherwise(pl.lit([], dtype=pl.List(pl.String))),
        target_is_list=(type_of("target") == "ARRAY").fill_null(False),
        measurement=pl.when(type_of("measurement") == "OBJECT")
        .then(value_of("measurement"))
        .otherwise(pl.lit("{}")),
        scope=text("m_scope"),
        tokens=number("m_tokens"),
        tool_count=count("m_tool_count"),
        tokens_per_tool_avg=number("m_tokens_per_tool_avg"),
        share=number("m_share"),
        smell=text("m_smell"),
        tokens_saved_est=number("m_tokens_saved_est"),
        wide_union=boolean("m_wide_union"),
        mixes_read_write=boolean("m_mixes_read_write"),
        pass_rate=number("m_pass_rate"),
        mode=text("m_mode"),
        fire_rate=number("m_fire_rate"),
        tokens_est=number("m_tokens_est"),
        injector_kind=text("m_injector_kind"),
        recommend_jit=boolean("m_recommend_jit"),
        phase=text("m_phase"),
        worst_phase=text("m_worst_phase"),
        reported_severity=number("severity"),
        confidence=number("confidence"),
        detail=pl.when(present("detail")).then(pl.col("detail_json")),
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


def _read(records: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The report fields (one row per record) and the finding fields (one per finding)."""
    queries: list[tuple[str, tuple[Field, ...], str]] = [
        ("ingest/surface_runs.sql", RUN_FIELDS, "raw"),
        ("ingest/surface_findings.sql", FINDING_FIELDS, "f.value"),
    ]
    con = connect()
    try:
        con.register("records", records)
        read = []
        for name, fields, source in queries:
            query = sql_text(name).replace(FIELDS_MARK, select_list(fields, source))
            relation = con.sql(query)
            if relation is None:
                raise ValueError(f"sql/{name} is not a query")
            read.append(relation.pl())
        return read[0], read[1]
    finally:
        con.close()


def _checked(fields: pl.DataFrame, finding_fields: pl.DataFrame) -> pl.DataFrame:
    """``fields`` with ``problems``: every problem of the report and of its findings."""
    per_report = (
        finding_fields.select(*KEY, problems=finding_problems())
        .explode("problems")
        .drop_nulls("problems")
        .group_by(KEY, maintain_order=True)
        .agg(finding_problems=pl.col("problems"))
    )
    return (
        fields.with_columns(run_problems=run_problems())
        .join(per_report, on=KEY, how="left", maintain_order="left")
        .with_columns(
            problems=pl.concat_list(
                "run_problems",
                pl.col("finding_problems").fill_null(pl.lit([], dtype=pl.List(pl.String))),
            )
        )
    )


def _first_of_each(runs: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The first report of each run_id in the batch, and the later ones (the repeats)."""
    first = runs.sort("_order").unique("run_id", keep="first", maintain_order=True)
    repeats = runs.join(first.select("_order"), on="_order", how="anti")
    return first, repeats


def _quarantine(records: pl.DataFrame, refused: pl.DataFrame) -> pl.DataFrame:
    """The refused reports (source, line, _order, reason) in the quarantine's shape."""
    return (
        refused.join(records.select(*KEY, "raw", "batch_id"), on=KEY)
        .sort("_order")
        .select(
            *KEY,
            "reason",
            "raw",
            line_end=pl.lit(None, pl.Int64),
            record_kind=pl.lit("surface"),
            batch_id="batch_id",
        )
        .select(list(_QUARANTINE_SCHEMA))
        .cast(_QUARANTINE_SCHEMA)
    )


def parse_reports(records: pl.DataFrame) -> SurfaceBatch:
    """Surface records (source, line, raw, content_hash, batch_id) to landed tables.

    A report with any problem (its own fields or any finding's) is quarantined whole,
    with every problem in its reason: landing part of a report would grade a surface
    that was never measured. A second report with a run_id already seen in the batch is
    one of ``repeats``, with no findings: at most the first report of a run_id lands.
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
    fields, finding_fields = _read(records.drop("_order"))
    checked = _checked(fields.join(records.select(*KEY, "_order"), on=KEY), finding_fields)
    bad = checked.filter(pl.col("problems").list.len() > 0)
    good = checked.filter(pl.col("problems").list.len() == 0)
    runs = _landed_runs(good).with_columns(_order=good["_order"])
    first, repeats = _first_of_each(runs)
    landed = first.select(list(polars_schema(SurfaceRun)))
    findings = (
        _landed_findings(finding_fields)
        .join(landed.select(*KEY, "run_id", "batch_id"), on=KEY, maintain_order="left")
        .sort("run_id", "finding_index")
        .select(list(polars_schema(SurfaceFinding)))
    )
    refused = bad.select(*KEY, "_order", reason=reason(pl.col("problems")))
    return SurfaceBatch(
        runs=landed,
        findings=findings,
        quarantine=_quarantine(records, refused),
        repeats=repeats.sort("_order").select(list(polars_schema(SurfaceRun))),
    )
