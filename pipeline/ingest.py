"""Ingest: input files to lines, lines to records, records to landed tables.

Every input line ends in exactly one place (CONTRACT section 8): landed,
quarantined with a reason, or skipped (an exact duplicate, or a blank line).
The line frame carries a ``row_nr`` through every step so the three outcomes
can be counted against the lines read.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import polars as pl

from pipeline import surface
from pipeline.reader import Lines
from pipeline.sql import connect, in_batches, run_sql
from pipeline.validate import repeated_keys, validate_task_records
from schemas import checked, polars_schema
from schemas.tasks import Quarantine, RunMetadata, TaskComponent, TaskPenalty, TaskRun


@dataclass
class Batch:
    """What one ingest produces, before it is checked against the lake."""

    batch_id: str
    tables: dict[str, pl.DataFrame]
    quarantine: pl.DataFrame
    lines_read: int
    blank_lines: int
    files: list[str] = field(default_factory=list)
    # Exact copies of a report already earlier in the batch, found while parsing.
    parse_skipped: int = 0
    # The top-level keys of each task record (row_nr, top_keys), from the one parse.
    task_keys: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(
            schema={"row_nr": pl.UInt32, "top_keys": pl.List(pl.String)}
        )
    )
    # Those copies by place: source, line, run_id (the report they repeat).
    skipped_reports: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(
            schema={"source": pl.String, "line": pl.Int64, "run_id": pl.String}
        )
    )


# Only a line holding one of these can hold a non-finite number (DuckDB's reader takes
# nan, inf and infinity in any case, signed) or an integer past 64 bits (19 digits or
# more); only those lines pay for non_finite.sql's walk of the whole tree.
NON_FINITE_HINT = r"(?i)([:\[,]\s*-?(nan|inf)|[0-9]{19}|[0-9]e\+?[0-9]{3})"
# A JSON string literal, and a comma closing nothing: DuckDB's reader accepts
# trailing commas ({"a": 1,}), JSON does not.
STRING_LITERAL = r'"(?:[^"\\]|\\.)*"'
TRAILING_COMMA = r",\s*[\]}]"


# Plain JSON Lines files, whose every line ends in a newline when the writer is done.
LINE_FILE_SUFFIX = ".jsonl"


def unterminated_notes(files: Sequence[Path]) -> list[str]:
    """A note per plain JSON Lines file whose last byte is not a newline: its last line may
    have been cut by a writer still at work (if so it is quarantined now, and replaced when
    the file is read again whole)."""
    notes: list[str] = []
    for path in files:
        try:
            if path.suffix != LINE_FILE_SUFFIX or path.stat().st_size == 0:
                continue
            with open(path, "rb") as handle:
                handle.seek(-1, os.SEEK_END)
                last = handle.read(1)
        except OSError:
            continue  # the reader reports a file it cannot open
        if last != b"\n":
            notes.append(
                f"{path}: the last line has no newline; it may have been cut while the "
                "file was being written (read the file again once it is complete)"
            )
    return notes


@dataclass(frozen=True)
class Parsed:
    """Each line's kind, and the task-grade fields of every task record, from one parse."""

    kinds: pl.DataFrame  # row_nr, blank, problem, record_kind, content_hash (every line)
    fields: pl.DataFrame  # row_nr and parse_lines.sql's field columns (task records only)


def classify(lines: pl.DataFrame, con: duckdb.DuckDBPyConnection | None = None) -> Parsed:
    """Lines to JSON kinds, content hashes and task-grade fields (sql/ingest/parse_lines.sql)."""
    blank = pl.col("raw").str.strip_chars().str.len_bytes() == 0
    candidates = lines.filter(pl.col("problem").is_null() & ~blank.fill_null(False)).select(
        "row_nr", "raw"
    )
    parsed = run_sql("ingest/parse_lines.sql", {"lines": in_batches(candidates)}, con=con)
    json_rows = parsed.filter("is_json").select("row_nr")
    suspects = candidates.filter(pl.col("raw").str.contains(NON_FINITE_HINT)).join(
        json_rows, on="row_nr", how="semi"
    )
    non_finite = (
        run_sql("ingest/non_finite.sql", {"suspects": suspects}, con=con)
        if suspects.height
        else pl.DataFrame(
            schema={
                "row_nr": pl.UInt32,
                "path": pl.String,
                "literal": pl.String,
                "number_problem": pl.String,
            }
        )
    )
    kinds = (
        lines.select("row_nr", "problem", blank=blank.fill_null(False))
        .join(
            parsed.select(
                "row_nr",
                "is_json",
                "json_kind",
                "record_kind",
                "content_hash",
                report_keys=pl.when(pl.col("record_kind") == "surface").then(
                    repeated_report_keys()
                ),
            ),
            on="row_nr",
            how="left",
        )
        .join(non_finite, on="row_nr", how="left")
        .join(trailing_commas(candidates, json_rows), on="row_nr", how="left")
        .with_columns(
            problem=pl.when(pl.col("problem").is_not_null())
            .then(pl.col("problem"))
            .when(pl.col("blank"))
            .then(None)
            .when(~pl.col("is_json").fill_null(False))
            .then(pl.lit("not valid JSON (the line does not parse)"))
            .when(pl.col("trailing_comma").fill_null(False))
            .then(pl.lit("not valid JSON: a comma before a closing } or ] (JSON allows none)"))
            .when(pl.col("json_kind") != "OBJECT")
            .then(pl.format("expected a JSON object, got {}", pl.col("json_kind")))
            .when(pl.col("number_problem") == "integer_range")
            .then(
                pl.format(
                    "integer {} at {} is outside the 64-bit range (-2^63 to 2^63-1)",
                    pl.col("literal"),
                    pl.col("path"),
                )
            )
            .when(pl.col("path").is_not_null())
            .then(pl.format("non-finite number {} at {}", pl.col("literal"), pl.col("path")))
            .when(pl.col("report_keys").list.len() > 0)
            .then(pl.col("report_keys").list.join("; "))
        )
        .select("row_nr", "blank", "problem", "record_kind", "content_hash")
    )
    # The task records: objects that are not reports and have no problem found so far.
    # One filter of the wide frame (each gather of it costs ~0.1 s per 200k lines).
    refused = kinds.filter(pl.col("problem").is_not_null()).get_column("row_nr").implode()
    fields = parsed.filter(
        (pl.col("record_kind") == "task") & ~pl.col("row_nr").is_in(refused)
    ).drop("is_json", "json_kind", "record_kind", "content_hash")
    return Parsed(kinds=kinds, fields=fields)


def trailing_commas(candidates: pl.DataFrame, json_rows: pl.DataFrame) -> pl.DataFrame:
    """The JSON lines holding a comma before a closing bracket outside every string
    (row_nr, trailing_comma); only lines with such a comma anywhere are looked at closer."""
    return (
        candidates.join(json_rows, on="row_nr", how="semi")
        .filter(pl.col("raw").str.contains(TRAILING_COMMA))
        .select(
            "row_nr",
            trailing_comma=pl.col("raw")
            .str.replace_all(STRING_LITERAL, '""')
            .str.contains(TRAILING_COMMA),
        )
        .filter("trailing_comma")
    )


# The report's objects whose keys scoring or identity reads (CONTRACT 3), by the column
# parse_lines.sql gives their key lists in.
REPORT_KEYED = {
    "top_keys": "the report",
    "server_keys": "server",
    "grade_keys": "grade",
    "coverage_keys": "coverage",
    "headline_keys": "headline",
}


def repeated_report_keys() -> pl.Expr:
    """Per report, a reason for each object that names a key twice (an empty list when none)."""
    return pl.concat_list(
        [repeated_keys(column, where) for column, where in REPORT_KEYED.items()]
    ).list.drop_nulls()


def _task_tables(
    records: pl.DataFrame,
    fields: pl.DataFrame,
    env_types: Sequence[str],
    batch_id: str,
    con: duckdb.DuckDBPyConnection,
) -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
    """Validated task records as the four landed task tables, plus rejects (row_nr, reason).

    ``records`` are the task lines (row_nr, source, line, raw, content_hash), ``fields``
    their parsed fields (Parsed.fields: the same rows).
    """
    checked_records = validate_task_records(fields, env_types, con=con)
    fields = checked_records.fields.join(
        records.select("row_nr", "source", "line", "raw", "content_hash"), on="row_nr"
    )
    keys = fields.select("row_nr", "run_id")
    batch = pl.lit(batch_id)
    runs = fields.select(
        "row_nr",
        "run_id",
        "agent",
        "agent_version",
        "problem_id",
        "env_type",
        pl.col("graded_at").dt.convert_time_zone("UTC").dt.cast_time_unit("us"),
        pl.col("defect_id"),
        pl.col("cwe"),
        pl.col("project"),
        pl.col("trial").cast(pl.Int64).fill_null(0),
        pl.col("cost_usd"),
        pl.col("tokens"),
        pl.col("wall_seconds"),
        pl.col("env_internal_failure").fill_null(False),
        pl.col("allow_unbounded").fill_null(False),
        pl.col("failure_logs").cast(pl.List(pl.String)).fill_null([]),
        pl.col("minimization_final_size"),
        pl.col("minimization_minimal_size"),
        pl.col("audit_recall"),
        pl.col("audit_precision"),
        record=pl.col("raw"),
        source=pl.col("source"),
        line=pl.col("line"),
        batch_id=batch,
        content_hash=pl.col("content_hash"),
    )
    parts = checked_records.parts.join(keys, on="row_nr")
    subscores = parts.filter(pl.col("part") == "subscores").select(
        "row_nr", "run_id", component="name", stored_subscore="value"
    )
    weights = parts.filter(pl.col("part") == "weights").select(
        "row_nr", component="name", record_weight="value"
    )
    components = subscores.join(weights, on=["row_nr", "component"]).select(
        "row_nr", "run_id", "component", "stored_subscore", "record_weight", batch_id=batch
    )
    penalties = parts.filter(pl.col("part") == "penalties").select(
        "row_nr", "run_id", penalty="name", value="value", batch_id=batch
    )
    metadata = checked_records.metadata.join(keys, on="row_nr").select(
        "row_nr", "run_id", "key", "value", "value_num", batch_id=batch
    )
    tables = {
        "task_runs": runs,
        "task_components": components,
        "task_penalties": penalties,
        "run_metadata": metadata,
    }
    return tables, checked_records.rejected


def _task_keys(tables: dict[str, pl.DataFrame], fields: pl.DataFrame) -> pl.DataFrame:
    """Each accepted task record's top-level keys (row_nr, top_keys), as parsed."""
    return fields.join(tables["task_runs"].select("row_nr"), on="row_nr", how="semi").select(
        "row_nr", pl.col("top_keys").cast(pl.List(pl.String))
    )


TASK_MODELS = {
    "task_runs": TaskRun,
    "task_components": TaskComponent,
    "task_penalties": TaskPenalty,
    "run_metadata": RunMetadata,
}


def build_batch(lines: Lines, env_types: Sequence[str], batch_id: str) -> Batch:
    """Lines to landed-shape tables (each keyed by row_nr) and quarantine rows."""
    frame = lines.frame
    # One DuckDB connection for the batch's queries: opening one costs ~30 ms.
    con = connect()
    try:
        lines_parsed = classify(frame, con)
        kinds = lines_parsed.kinds
        with_kind = frame.drop("problem").join(kinds, on="row_nr")
        task_records = with_kind.filter(
            pl.col("problem").is_null() & (pl.col("record_kind") == "task")
        )
        surface_records = with_kind.filter(
            pl.col("problem").is_null() & (pl.col("record_kind") == "surface")
        )
        tables, task_rejects = _task_tables(
            task_records, lines_parsed.fields, env_types, batch_id, con
        )
        task_keys = _task_keys(tables, lines_parsed.fields)
    finally:
        con.close()
    parsed = surface.parse_reports(
        surface_records.select("source", "line", "raw", "content_hash", batch_id=pl.lit(batch_id))
    )
    # The surface stage keys rows by (source, line); map them back to row_nr.
    locate = surface_records.select("row_nr", "source", "line")
    tables["surface_runs"] = parsed.runs.join(locate, on=["source", "line"])
    run_rows = tables["surface_runs"].select("row_nr", "run_id")
    tables["surface_findings"] = parsed.findings.join(run_rows, on="run_id")
    quarantined = pl.concat(
        [
            with_kind.filter(pl.col("problem").is_not_null()).select(
                "row_nr", reason="problem", record_kind="record_kind"
            ),
            task_rejects.select("row_nr", "reason", record_kind=pl.lit("task")),
            parsed.quarantine.join(locate, on=["source", "line"]).select(
                "row_nr", "reason", record_kind=pl.lit("surface")
            ),
        ]
    )
    return Batch(
        batch_id=batch_id,
        tables=tables,
        quarantine=quarantine_rows(frame, quarantined, batch_id),
        lines_read=frame.height,
        blank_lines=int(kinds["blank"].sum()),
        files=lines.files,
        parse_skipped=parsed.skipped.height,
        skipped_reports=parsed.skipped.select("source", "line", "run_id"),
        task_keys=task_keys,
    )


def quarantine_rows(lines: pl.DataFrame, reasons: pl.DataFrame, batch_id: str) -> pl.DataFrame:
    """Quarantine rows (row_nr + the Quarantine model's columns) for row_nr -> reason."""
    return reasons.join(lines.select("row_nr", "source", "line", "raw"), on="row_nr").select(
        "row_nr",
        "source",
        "line",
        "reason",
        "raw",
        pl.col("record_kind").cast(pl.String),
        batch_id=pl.lit(batch_id),
    )


def empty_quarantine() -> pl.DataFrame:
    return pl.DataFrame(schema={"row_nr": pl.UInt32, **polars_schema(Quarantine)})


def landed_frames(batch: Batch) -> dict[str, pl.DataFrame]:
    """The batch's tables without row_nr, each checked by its model."""
    from schemas.registry import LANDED

    out: dict[str, pl.DataFrame] = {}
    for name, frame in batch.tables.items():
        out[name] = checked(LANDED[name], frame.drop("row_nr"))
    out["quarantine"] = checked(Quarantine, batch.quarantine.drop("row_nr"))
    return out


@dataclass(frozen=True)
class Deduped:
    batch: Batch
    skipped_duplicates: int
    already_quarantined: int


def _dedupe_runs(
    runs: pl.DataFrame, landed: pl.DataFrame, what: str
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Split a batch's runs into kept, skipped (exact duplicates) and clashes (row_nr, reason).

    A run_id seen before with the same content hash is a duplicate; with other
    content it is a clash, quarantined with where the first one came from.
    """
    ordered = runs.sort("row_nr").with_columns(
        first_row=pl.col("row_nr").first().over("run_id"),
        first_hash=pl.col("content_hash").first().over("run_id"),
        first_at=pl.format("{}:{}", pl.col("source"), pl.col("line")).first().over("run_id"),
    )
    earlier = landed.select(
        "run_id",
        landed_hash="content_hash",
        landed_at=pl.format("{}:{}", pl.col("source"), pl.col("line")),
    ).unique("run_id", keep="first")
    marked = ordered.join(earlier, on="run_id", how="left").with_columns(
        clash=pl.when(
            pl.col("landed_hash").is_not_null() & (pl.col("landed_hash") != pl.col("content_hash"))
        )
        .then(
            pl.format(
                "{} run_id '{}' already landed with different content (from {}); "
                "give the new attempt its own run_id",
                pl.lit(what),
                pl.col("run_id"),
                pl.col("landed_at"),
            )
        )
        .when(
            (pl.col("row_nr") != pl.col("first_row"))
            & (pl.col("first_hash") != pl.col("content_hash"))
        )
        .then(
            pl.format(
                "{} run_id '{}' appears again with different content (first at {}); "
                "give each attempt its own run_id",
                pl.lit(what),
                pl.col("run_id"),
                pl.col("first_at"),
            )
        ),
        duplicate=(pl.col("landed_hash") == pl.col("content_hash")).fill_null(False)
        | (pl.col("row_nr") != pl.col("first_row")),
    )
    clashes = marked.filter(pl.col("clash").is_not_null()).select(
        "row_nr", "source", "line", reason="clash", raw="record"
    )
    skipped = marked.filter(pl.col("clash").is_null() & pl.col("duplicate")).select("row_nr")
    kept = marked.filter(pl.col("clash").is_null() & ~pl.col("duplicate")).select(runs.columns)
    return kept, skipped, clashes


def dedupe(
    batch: Batch,
    landed_tasks: pl.DataFrame,
    landed_surfaces: pl.DataFrame,
    landed_quarantine: pl.DataFrame,
    landed_lines: pl.DataFrame | None = None,
) -> Deduped:
    """Drop exact duplicates (of the lake or earlier in the batch); quarantine clashes.

    A bad line read again from the same place (a file ingested twice) is
    counted as already quarantined instead of filling the quarantine twice.
    ``landed_lines`` (source, line, raw) are lines that landed before: one of
    them that fails now (say, its env type left the rubric) is a duplicate of
    what landed, never quarantined beside it.
    """
    task_runs, task_skipped, task_clash = _dedupe_runs(
        batch.tables["task_runs"], landed_tasks, "task"
    )
    surface_runs, surface_skipped, surface_clash = _dedupe_runs(
        batch.tables["surface_runs"], landed_surfaces, "surface"
    )
    task_rows = task_runs.select("row_nr")
    surface_rows = surface_runs.select("row_nr")
    tables = {
        "task_runs": task_runs,
        "surface_runs": surface_runs,
        **{
            name: batch.tables[name].join(task_rows, on="row_nr", how="semi")
            for name in ("task_components", "task_penalties", "run_metadata")
        },
        "surface_findings": batch.tables["surface_findings"].join(
            surface_rows, on="row_nr", how="semi"
        ),
    }
    clash_rows = pl.concat(
        [
            task_clash.with_columns(record_kind=pl.lit("task")),
            surface_clash.with_columns(record_kind=pl.lit("surface")),
        ]
    ).select(
        "row_nr", "source", "line", "reason", "raw", "record_kind", batch_id=pl.lit(batch.batch_id)
    )
    every_reject = pl.concat([batch.quarantine, clash_rows])
    place = ["source", "line", "raw"]
    fresh = every_reject.join(
        landed_quarantine.select(place), on=place, how="anti", nulls_equal=True
    )
    seen = every_reject.height - fresh.height
    if landed_lines is not None:
        fresh = fresh.join(landed_lines.select(place), on=place, how="anti", nulls_equal=True)
    landed_again = every_reject.height - seen - fresh.height
    deduped = Batch(
        batch_id=batch.batch_id,
        tables=tables,
        quarantine=fresh,
        lines_read=batch.lines_read,
        blank_lines=batch.blank_lines,
        files=batch.files,
        task_keys=batch.task_keys.join(task_rows, on="row_nr", how="semi"),
    )
    return Deduped(
        batch=deduped,
        skipped_duplicates=task_skipped.height
        + surface_skipped.height
        + batch.parse_skipped
        + landed_again,
        already_quarantined=seen,
    )
