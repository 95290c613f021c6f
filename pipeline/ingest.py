"""Ingest: input files to lines, lines to records, records to landed tables.

Every input line ends in exactly one place (CONTRACT section 8): landed,
quarantined with a reason, or skipped (an exact duplicate, or a blank line).
The line frame carries a ``row_nr`` through every step so the three outcomes
can be counted against the lines read.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipeline import surface
from pipeline.lake import InputError
from pipeline.sql import run_sql
from pipeline.validate import validate_task_records
from schemas import checked, polars_schema
from schemas.tasks import Quarantine, RunMetadata, TaskComponent, TaskPenalty, TaskRun

INPUT_SUFFIXES = (".jsonl", ".jsonl.gz", ".json")
DEFAULT_MAX_RECORD_BYTES = 16 * 1024 * 1024
UTF8_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Lines:
    """Every line read: row_nr, source, line, raw (text or null), problem (a reason or null)."""

    frame: pl.DataFrame
    files: list[str]


@dataclass
class Batch:
    """What one ingest produces, before it is checked against the lake."""

    batch_id: str
    tables: dict[str, pl.DataFrame]
    quarantine: pl.DataFrame
    lines_read: int
    blank_lines: int
    files: list[str] = field(default_factory=list)


def is_input_file(path: Path) -> bool:
    return path.is_file() and path.name.endswith(INPUT_SUFFIXES)


def expand_inputs(inputs: Sequence[Path]) -> list[Path]:
    """Files as given; directories as every input file below them, in sorted order."""
    files: list[Path] = []
    for item in inputs:
        if item.is_dir():
            files.extend(sorted(p for p in item.rglob("*") if is_input_file(p)))
        elif item.is_file():
            files.append(item)
        else:
            raise InputError(f"no such input: {item}")
    return files


def _gunzip(data: bytes) -> tuple[bytes, str | None]:
    """Decompress what can be; a gzip that ends early keeps its readable lines."""
    inflater = zlib.decompressobj(wbits=31)
    try:
        out = inflater.decompress(data)
    except zlib.error as exc:
        return b"", f"not a readable gzip file ({exc})"
    if not inflater.eof:
        return out, "gzip stream ends early (file truncated): the last line may be cut"
    return out, None


LINE_SCHEMA = {
    "source": pl.String,
    "line": pl.Int64,
    "raw": pl.String,
    "not_utf8": pl.Boolean,
    "file_problem": pl.String,
}


def _split_text(data: bytes) -> pl.DataFrame:
    """Lines of a file as text; the happy path decodes once and splits in Polars."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        # Only a file with bad bytes pays for a decode per line, so that the
        # raw text in quarantine still shows a person which bytes were wrong.
        chunks = data.split(b"\n")
        if chunks and chunks[-1] == b"":
            chunks.pop()
        texts, flags = [], []
        for chunk in chunks:
            try:
                texts.append(chunk.decode("utf-8"))
                flags.append(False)
            except UnicodeDecodeError:
                texts.append(chunk.decode("utf-8", "backslashreplace"))
                flags.append(True)
        return pl.DataFrame(
            {"raw": texts, "not_utf8": flags}, schema={"raw": pl.String, "not_utf8": pl.Boolean}
        )
    lines = pl.Series("raw", [text], dtype=pl.String).str.split("\n").explode()
    if text.endswith("\n"):
        lines = lines.head(-1)  # the newline that ends the last line starts no line
    return pl.DataFrame({"raw": lines}).with_columns(not_utf8=pl.lit(False))


def _file_lines(path: Path) -> pl.DataFrame:
    data = path.read_bytes()
    problem: str | None = None
    if path.name.endswith(".gz"):
        data, problem = _gunzip(data)
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM) :]
    if problem is not None and not data:
        # Nothing readable: the file itself is one quarantined entry (line 0).
        return pl.DataFrame(
            {
                "source": [str(path)],
                "line": [0],
                "raw": [None],
                "not_utf8": [False],
                "file_problem": [problem],
            },
            schema=LINE_SCHEMA,
        )
    if path.name.endswith(".json"):
        # One report per file: the whole text is the record, at line 1.
        lines = _split_text(data.replace(b"\n", b" ")) if data.strip() else _split_text(b"")
    else:
        lines = _split_text(data)
    # Only a last line without its newline can have been cut by the truncation.
    cut = problem is not None and not data.endswith(b"\n")
    numbered = lines.with_row_index("line", offset=1)
    truncated_last = (pl.col("line") == pl.len()) & pl.lit(cut)
    return numbered.select(
        source=pl.lit(str(path)),
        line=pl.col("line").cast(pl.Int64),
        raw=pl.col("raw"),
        not_utf8=pl.col("not_utf8"),
        file_problem=pl.when(truncated_last).then(pl.lit(problem)),
    )


def read_lines(files: Sequence[Path], max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> Lines:
    """Every line of every file, numbered, with a problem where it cannot be a record."""
    parts = [_file_lines(path) for path in files]
    raw = pl.concat(parts) if parts else pl.DataFrame(schema=LINE_SCHEMA)
    frame = (
        raw.with_row_index("row_nr")
        # CRLF files: the carriage return belongs to the line ending, not the record.
        .with_columns(pl.col("raw").str.strip_suffix("\r"))
        .with_columns(size=pl.col("raw").str.len_bytes())
        .select(
            "row_nr",
            "source",
            "line",
            pl.when(pl.col("size") > max_record_bytes)
            .then(pl.col("raw").str.slice(0, 1024) + pl.lit("…"))
            .otherwise(pl.col("raw"))
            .alias("raw"),
            problem=pl.when(pl.col("file_problem").is_not_null())
            .then(pl.col("file_problem"))
            .when(pl.col("not_utf8"))
            .then(pl.lit("line is not valid UTF-8 (bad bytes shown as \\x escapes)"))
            .when(pl.col("size") > max_record_bytes)
            .then(
                pl.format(
                    "record is {} bytes, over the limit of {} bytes (raw text cut to 1 KiB)",
                    pl.col("size"),
                    pl.lit(max_record_bytes),
                )
            ),
        )
    )
    return Lines(frame=frame, files=[str(p) for p in files])


def classify(lines: pl.DataFrame) -> pl.DataFrame:
    """row_nr, record_kind ('task' | 'surface' | null), content_hash, problem, blank."""
    blank = pl.col("raw").str.strip_chars().str.len_bytes() == 0
    candidates = lines.filter(pl.col("problem").is_null() & ~blank.fill_null(False))
    valid = run_sql("ingest/json_valid.sql", {"lines": candidates.select("row_nr", "raw")})
    json_rows = candidates.join(valid.filter("is_json"), on="row_nr", how="semi")
    kinds = run_sql("ingest/classify.sql", {"valid_lines": json_rows.select("row_nr", "raw")})
    suspects = json_rows.join(kinds.filter("has_non_finite_hint"), on="row_nr", how="semi")
    non_finite = (
        run_sql("ingest/non_finite.sql", {"suspects": suspects.select("row_nr", "raw")})
        if suspects.height
        else pl.DataFrame(schema={"row_nr": pl.UInt32, "path": pl.String, "literal": pl.String})
    )
    return (
        lines.select("row_nr", "problem", blank=blank.fill_null(False))
        .join(valid, on="row_nr", how="left")
        .join(kinds.drop("has_non_finite_hint"), on="row_nr", how="left")
        .join(non_finite, on="row_nr", how="left")
        .with_columns(
            problem=pl.when(pl.col("problem").is_not_null())
            .then(pl.col("problem"))
            .when(pl.col("blank"))
            .then(None)
            .when(~pl.col("is_json").fill_null(False))
            .then(pl.lit("not valid JSON (the line does not parse)"))
            .when(pl.col("json_kind") != "OBJECT")
            .then(pl.format("expected a JSON object, got {}", pl.col("json_kind")))
            .when(pl.col("path").is_not_null())
            .then(pl.format("non-finite number {} at {}", pl.col("literal"), pl.col("path")))
        )
        .select("row_nr", "blank", "problem", "record_kind", "content_hash")
    )


def _task_tables(
    records: pl.DataFrame, env_types: Sequence[str], batch_id: str
) -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
    """Validated task records as the four landed task tables, plus rejects (row_nr, reason)."""
    checked_records = validate_task_records(records, env_types)
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


TASK_MODELS = {
    "task_runs": TaskRun,
    "task_components": TaskComponent,
    "task_penalties": TaskPenalty,
    "run_metadata": RunMetadata,
}


def build_batch(lines: Lines, env_types: Sequence[str], batch_id: str) -> Batch:
    """Lines to landed-shape tables (each keyed by row_nr) and quarantine rows."""
    frame = lines.frame
    kinds = classify(frame)
    with_kind = frame.drop("problem").join(kinds, on="row_nr")
    task_records = with_kind.filter(pl.col("problem").is_null() & (pl.col("record_kind") == "task"))
    surface_records = with_kind.filter(
        pl.col("problem").is_null() & (pl.col("record_kind") == "surface")
    )
    tables, task_rejects = _task_tables(task_records, env_types, batch_id)
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
) -> Deduped:
    """Drop exact duplicates (of the lake or earlier in the batch); quarantine clashes.

    A bad line read again from the same place (a file ingested twice) is
    counted as already quarantined instead of filling the quarantine twice.
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
    deduped = Batch(
        batch_id=batch.batch_id,
        tables=tables,
        quarantine=fresh,
        lines_read=batch.lines_read,
        blank_lines=batch.blank_lines,
        files=batch.files,
    )
    return Deduped(
        batch=deduped,
        skipped_duplicates=task_skipped.height + surface_skipped.height,
        already_quarantined=every_reject.height - fresh.height,
    )
