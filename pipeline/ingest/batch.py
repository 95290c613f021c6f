"""Ingest: input files to lines, lines to records, records to landed tables.

Every input line ends in exactly one place (CONTRACT section 8): landed,
quarantined with a reason, or skipped (an exact duplicate, or a blank line).
The line frame carries a ``row_nr`` through every step so the three outcomes
can be counted against the lines read.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ParamSpec, TypeVar

import duckdb
import polars as pl

from pipeline import surface
from pipeline.core.sql import connect, in_batches, run_sql
from pipeline.sources.files import Lines, limit_from_env
from pipeline.tasks.parse import PARSE_LINES_SQL, parse_marks
from pipeline.tasks.validate import repeated_keys, validate_task_records
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


# Bad lines of one file kept with their raw text; the rest become counted blocks.
DEFAULT_KEEP_BAD_LINES = 1000
KEEP_BAD_LINES_ENV = "PIPELINE_KEEP_BAD_LINES"

P = ParamSpec("P")
R = TypeVar("R")


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
    parsed = run_sql(
        PARSE_LINES_SQL, {"lines": in_batches(candidates)}, con=con, marks=parse_marks()
    )
    json_rows = parsed.filter("is_json").select("row_nr")
    suspects = candidates.filter(pl.col("raw").str.contains(NON_FINITE_HINT)).join(
        json_rows, on="row_nr", how="semi"
    )
    non_finite = _non_finite(suspects, con)
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


# A suspect longer than this is walked level by level (non_finite_large.sql): json_tree's
# memory grows with nodes x document size, fine for a record, not for a 20 MB report.
LARGE_SUSPECT_BYTES = 64 * 1024


def _non_finite(suspects: pl.DataFrame, con: duckdb.DuckDBPyConnection | None) -> pl.DataFrame:
    """row_nr, path, literal and number_problem of the first number of each suspect that no
    column can hold (non-finite, or an integer past 64 bits); both walks judge alike."""
    schema = pl.Schema(
        {
            "row_nr": pl.UInt32,
            "path": pl.String,
            "literal": pl.String,
            "number_problem": pl.String,
        }
    )
    found = [pl.DataFrame(schema=schema)]
    large = pl.col("raw").str.len_bytes() > LARGE_SUSPECT_BYTES
    for query, rows in (
        ("ingest/non_finite.sql", suspects.filter(~large)),
        ("ingest/non_finite_large.sql", suspects.filter(large)),
    ):
        if rows.height:
            hits = run_sql(query, {"suspects": rows}, con=con)
            found.append(hits.cast(schema).select(list(schema)))
    return pl.concat(found)


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
    """Lines to landed-shape tables (each keyed by row_nr) and quarantine rows.

    A line whose exact text came earlier in the chunk is not parsed again: it shares the
    first one's fate (quarantined with its reason, blank, or a duplicate of what landed).
    Millions of identical bad lines (``{}``) then cost a hash each, not a parse each.
    """
    frame = lines.frame
    first = pl.col("row_nr").min().over("raw")
    copy = (pl.col("row_nr") != first) & pl.col("problem").is_null() & pl.col("raw").is_not_null()
    marked = frame.with_columns(first_row=first, copy=copy)
    copies = marked.filter("copy").select("row_nr", "first_row", "raw")
    batch = _build_unique(
        marked.filter(~pl.col("copy")).drop("first_row", "copy"), lines.files, env_types, batch_id
    )
    if copies.is_empty():
        return batch
    held = batch.quarantine.select(first_row="row_nr", reason="reason", record_kind="record_kind")
    fated = copies.join(held, on="first_row", how="left")
    quarantined = fated.filter(pl.col("reason").is_not_null())
    blank = fated.filter(
        pl.col("reason").is_null() & (pl.col("raw").str.strip_chars().str.len_bytes() == 0)
    )
    batch.quarantine = pl.concat(
        [batch.quarantine, quarantine_rows(frame, quarantined.drop("raw", "first_row"), batch_id)]
    ).sort("row_nr")
    batch.lines_read = frame.height
    batch.blank_lines += blank.height
    batch.parse_skipped += copies.height - quarantined.height - blank.height
    return batch


def _build_unique(
    frame: pl.DataFrame, files: list[str], env_types: Sequence[str], batch_id: str
) -> Batch:
    """build_batch over lines that are each parsed."""
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
        files=files,
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
        pl.lit(None, pl.Int64).alias("line_end"),
        "reason",
        "raw",
        pl.col("record_kind").cast(pl.String),
        batch_id=pl.lit(batch_id),
    )


def row_lines() -> pl.Expr:
    """How many input lines a quarantine row stands for (a block: line..line_end)."""
    return pl.col("line_end").fill_null(pl.col("line")) - pl.col("line") + 1


def quarantined_lines(quarantine: pl.DataFrame) -> int:
    return int(quarantine.select(row_lines().sum()).item() or 0)


def empty_quarantine() -> pl.DataFrame:
    return pl.DataFrame(schema={"row_nr": pl.UInt32, **polars_schema(Quarantine)})


class FileFailure(Exception):
    """Reading or landing an input failed in a way no rule foresaw (the file's, not the lake's)."""

    def __init__(self, cause: BaseException) -> None:
        first = (str(cause).strip().splitlines() or [""])[0][:FAILURE_TEXT_CHARS]
        super().__init__(f"{type(cause).__name__}: {first}" if first else type(cause).__name__)


def keep_bad_lines_setting() -> int:
    """PIPELINE_KEEP_BAD_LINES, else 1000: bad lines per file kept with their raw text."""
    return limit_from_env(KEEP_BAD_LINES_ENV, DEFAULT_KEEP_BAD_LINES)


def compact_quarantine(
    quarantine: pl.DataFrame, kept_before: pl.DataFrame, keep: int
) -> pl.DataFrame:
    """The first ``keep`` bad lines of each file in full; the rest as counted blocks.

    ``kept_before`` (source, kept) counts the rows each file kept in full in earlier
    chunks. Past the first ``keep``, runs of adjacent lines with the same reason become
    one row (line..line_end) without raw text: replay reads them again from the source.
    Like DuckDB's rejects_limit, but nothing is dropped without a count.
    """
    ordered = (
        quarantine.sort("source", "line")
        .join(kept_before, on="source", how="left")
        .with_columns(
            rank=pl.int_range(pl.len()).over("source") + pl.col("kept").fill_null(0),
            end=pl.col("line_end").fill_null(pl.col("line")),
        )
    )
    full = ordered.filter(pl.col("rank") < keep).select(quarantine.columns)
    rest = ordered.filter(pl.col("rank") >= keep)
    same = ["source", "reason", "record_kind", "batch_id"]
    starts = ~pl.all_horizontal(pl.col(c).eq_missing(pl.col(c).shift()) for c in same) | (
        pl.col("line") != pl.col("end").shift() + 1
    ).fill_null(True)
    blocks = (
        rest.with_columns(block=starts.cum_sum())
        .group_by("block", maintain_order=True)
        .agg(
            pl.col("row_nr").first(),
            *(pl.col(c).first() for c in same),
            pl.col("line").first(),
            line_end=pl.col("end").last(),
            raw=pl.lit(None, pl.String),
        )
        .select(quarantine.columns)
    )
    return pl.concat([full, blocks.cast(quarantine.schema)])


# How much of an unforeseen error's message a quarantine reason keeps.
FAILURE_TEXT_CHARS = 300


def failed_block(lines: pl.DataFrame, failure: FileFailure, batch_id: str) -> pl.DataFrame:
    """One quarantine row per file of ``lines``: the block of its lines, with the failure."""
    return (
        lines.group_by("source", maintain_order=True)
        .agg(
            row_nr=pl.col("row_nr").min(),
            line=pl.col("line").min(),
            last=pl.col("line").max(),
        )
        .select(
            pl.col("row_nr").cast(pl.UInt32),
            "source",
            "line",
            line_end="last",
            reason=pl.format(
                "could not be read or landed, quarantined whole (lines {}-{}): {}",
                pl.col("line"),
                pl.col("last"),
                pl.lit(str(failure)),
            ),
            raw=pl.lit(None, pl.String),
            record_kind=pl.lit(None, pl.String),
            batch_id=pl.lit(batch_id),
        )
    )


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
        "row_nr",
        "source",
        "line",
        pl.lit(None, pl.Int64).alias("line_end"),
        "reason",
        "raw",
        "record_kind",
        batch_id=pl.lit(batch.batch_id),
    )
    every_reject = pl.concat([batch.quarantine, clash_rows.cast(batch.quarantine.schema)])
    place = ["source", "line", "raw"]
    after_seen = every_reject.join(
        _seen_rejects(every_reject, landed_quarantine), on="row_nr", how="anti"
    )
    seen = quarantined_lines(every_reject) - quarantined_lines(after_seen)
    fresh = after_seen
    if landed_lines is not None:
        fresh = fresh.join(landed_lines.select(place), on=place, how="anti", nulls_equal=True)
    landed_again = quarantined_lines(after_seen) - quarantined_lines(fresh)
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


def line_spans(batch: Batch) -> pl.DataFrame:
    """Per source file of ``batch``, the first and last line it read (source, first, last):
    every place a quarantine row of the batch, or a run it lands, can sit."""
    places = [batch.quarantine.select("source", "line", end=pl.col("line_end"))] + [
        batch.tables[table].select("source", "line", end=pl.col("line"))
        for table in ("task_runs", "surface_runs")
    ]
    return (
        pl.concat(places)
        .group_by("source")
        .agg(first=pl.col("line").min(), last=pl.col("end").fill_null(pl.col("line")).max())
    )


def touching(held: pl.LazyFrame, batch: Batch) -> pl.LazyFrame:
    """The quarantine rows of ``held`` (source, line, line_end, ...) that touch a line
    ``batch`` read: the only rows ``dedupe`` and superseded_quarantine can match for it.

    A row wholly before a chunk's first line of its file cannot be one of the chunk's
    places, so an ingest of one long file reads what touches each chunk, not every row
    staged for the file so far (which made each chunk cost more than the one before).
    The bounds are on ``line`` and ``line_end``, so a scan skips row groups outside them.
    """
    spans = line_spans(batch)
    if spans.is_empty():
        return held.head(0)
    first = spans["first"].min()
    # line_end >= line where given, so this is the row's last line >= first, in terms a
    # file's statistics can rule out (a fill_null of the two cannot be).
    ends_after = (pl.col("line_end") >= first) | (pl.col("line") >= first)
    pruned = held.filter(
        pl.col("source").is_in(spans["source"].implode())
        & (pl.col("line") <= spans["last"].max())
        & ends_after
    )
    end = pl.col("line_end").fill_null(pl.col("line"))
    # Several files share the bounds above; each file's own span decides.
    return (
        pruned.join(spans.lazy(), on="source")
        .filter((pl.col("line") <= pl.col("last")) & (end >= pl.col("first")))
        .drop("first", "last")
    )


def _seen_rejects(rejects: pl.DataFrame, held: pl.DataFrame) -> pl.DataFrame:
    """row_nr of the rejects already quarantined from the same place: the same line with the
    same raw text, or lines inside a block (kept without raw text) of the same source.

    An as-of join finds each reject's nearest held row at or before its line, so a source
    with many held rows costs a sort, not a product of the two.
    """
    ends = pl.col("line_end").fill_null(pl.col("line"))
    mine = rejects.select("row_nr", "source", "line", "raw", end=ends).sort("source", "line")
    theirs = held.select(
        "source",
        held_line="line",
        held_end=ends,
        held_raw="raw",
        block=pl.col("line_end").is_not_null(),
    ).sort("source", "held_line")
    matched = mine.join_asof(
        theirs,
        left_on="line",
        right_on="held_line",
        by="source",
        strategy="backward",
        check_sortedness=False,
    )
    same_text = pl.col("raw").eq_missing(pl.col("held_raw")) & (
        pl.col("line") == pl.col("held_line")
    )
    inside = pl.col("block") & (pl.col("end") <= pl.col("held_end"))
    return matched.filter((same_text | inside).fill_null(False)).select("row_nr")


def dedupe_failed(batch: Batch, landed_quarantine: pl.DataFrame) -> Deduped:
    """``dedupe`` for a batch of failed blocks only: a block quarantined before is seen."""
    fresh = batch.quarantine.join(
        _seen_rejects(batch.quarantine, landed_quarantine), on="row_nr", how="anti"
    )
    kept = Batch(batch.batch_id, batch.tables, fresh, batch.lines_read, 0, batch.files)
    seen = quarantined_lines(batch.quarantine) - quarantined_lines(fresh)
    return Deduped(batch=kept, skipped_duplicates=0, already_quarantined=seen)


def guarded(step: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """``step``, with any failure of it raised as the input's FileFailure.

    Only steps that compute over input lines go through here; the lake's reads
    and writes do not, so their failures stop the run instead.
    """
    try:
        return step(*args, **kwargs)
    except Exception as exc:  # every failure of one file stays with it
        raise FileFailure(exc) from exc
