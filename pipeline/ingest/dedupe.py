"""What a batch holds that the lake (or an earlier chunk) holds already: runs landed
before are skipped, a run_id with other content is a clash, an attempt landed before
under another run_id is skipped, and a bad line quarantined before from the same place
is counted as seen.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from pipeline.ingest.batch import Batch
from pipeline.ingest.quarantine import line_rows, quarantined_lines

SKIPPED_SCHEMA = pl.Schema(
    {"row_nr": pl.UInt32, "source": pl.String, "line": pl.Int64, "run_id": pl.String}
)
# The lake's runs of a batch's attempts; the earliest batch's is the one a copy repeats.
LANDED_ATTEMPTS_SCHEMA = pl.Schema(
    {"attempt": pl.String, "run_id": pl.String, "batch_id": pl.String}
)


@dataclass(frozen=True)
class Attempts:
    """Which attempt each of a batch's task runs is, where its source says (row_nr,
    attempt: an Inspect sample's uuid), and the lake's runs of those attempts (attempt,
    run_id, batch_id). A run is one attempt; the same attempt under another run_id (a
    sample an Inspect retry carried over into its own log) lands once."""

    batch: pl.DataFrame
    landed: pl.DataFrame


@dataclass(frozen=True)
class Deduped:
    batch: Batch
    skipped_duplicates: int
    already_quarantined: int
    # The rows (row_nr, source, line, run_id) skipped as duplicates of runs landed before or
    # earlier in the batch, run_id naming the run each repeats: their file's runs are in the
    # lake, though none of its lines landed now.
    duplicate_rows: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(schema=SKIPPED_SCHEMA)
    )


# A carried-over run's own run_id, the run it repeats, and the attempt both are.
RENAMED_SCHEMA = pl.Schema({"run_id": pl.String, "original": pl.String, "attempt": pl.String})


def _carried_over(
    runs: pl.DataFrame, attempts: Attempts
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Split off the runs that are an attempt landed before, or landing earlier in the
    batch, under another run_id. They are skipped as duplicates of that run (row_nr,
    source, line, that run's id: of the earliest batch by its id, if an older lake holds
    two); the third frame maps each one's own run_id to that run's (run_id, original, attempt).

    ``runs`` are the ones the run_id checks keep (new run_ids, each once), so an attempt
    is never matched with a run that did not land.
    """
    if attempts.batch.is_empty():
        renamed = pl.DataFrame(schema=RENAMED_SCHEMA)
        return runs, pl.DataFrame(schema=SKIPPED_SCHEMA), renamed
    first_landed = (
        attempts.landed.sort("batch_id", "run_id")
        .unique("attempt", keep="first", maintain_order=True)
        .select("attempt", landed_run="run_id")
    )
    marked = (
        runs.join(attempts.batch.select("row_nr", "attempt"), on="row_nr", how="left")
        .sort("row_nr")
        .with_columns(first_run=pl.col("run_id").first().over("attempt"))
        .join(first_landed, on="attempt", how="left")
        .with_columns(original=pl.coalesce("landed_run", "first_run"))
    )
    carried = pl.col("attempt").is_not_null() & (pl.col("original") != pl.col("run_id"))
    skipped = marked.filter(carried).select("row_nr", "source", "line", run_id="original")
    renamed = marked.filter(carried).select("run_id", "original", "attempt")
    return marked.filter(~carried).select(runs.columns), skipped.cast(SKIPPED_SCHEMA), renamed


# A run_id that landed with other content, and what to do. An attempt (an Inspect sample)
# is one whose log changed since it was read: there is no new attempt to give a run_id.
LANDED_CLASH = "{} run_id '{}' already landed with different content (from {}); "
NEW_ATTEMPT = "give the new attempt its own run_id"
CHANGED_LOG = (
    "the same attempt (its sample uuid), so its log changed since it was read (scored again, "
    "or read while its eval ran by a version of the pipeline before 2026-12-05): the run "
    "landed first stands"
)


def _same_attempt_clashes(
    clashes: pl.DataFrame, runs: pl.DataFrame, attempts: Attempts, renamed: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The clashes left, and the ones that are a carried-over attempt again (row_nr, source,
    line, the run it repeats). A run_id's later copy with other content clashed with its
    first copy; when that copy is carried over (its attempt landed under another run_id)
    it lands nowhere, and the later copy, the same attempt, repeats that run as it does."""
    again = (
        clashes.join(runs.select("row_nr", "run_id"), on="row_nr")
        .join(attempts.batch.select("row_nr", "attempt"), on="row_nr")
        .join(renamed, on=["run_id", "attempt"])
    )
    moved = again.select("row_nr", "source", "line", run_id="original").cast(SKIPPED_SCHEMA)
    return clashes.join(again.select("row_nr"), on="row_nr", how="anti"), moved


def _landed_as_itself(runs: pl.DataFrame, attempts: Attempts) -> pl.Series:
    """The rows (row_nr) of runs whose run_id the lake holds as the same attempt."""
    return (
        attempts.batch.filter(pl.col("attempt").is_not_null())
        .join(runs.select("row_nr", "run_id"), on="row_nr")
        .join(attempts.landed.select("run_id", landed="attempt"), on="run_id")
        .filter(pl.col("attempt") == pl.col("landed"))
        .get_column("row_nr")
    )


def _dedupe_runs(
    runs: pl.DataFrame, landed: pl.DataFrame, what: str, same_attempt: pl.Series | None = None
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Split a batch's runs into kept, skipped (exact duplicates) and clashes (row_nr, reason).

    Each copy of a run_id is judged against one reference: the run the lake holds under it,
    else the batch's first copy of it (the one that lands). The same content hash is a
    duplicate; other content is a clash, quarantined with where the reference came from
    (and, for a row of ``same_attempt``, whose run_id the lake holds as the same attempt,
    that its log changed since).
    """
    changed_log = (
        pl.lit(False) if same_attempt is None else pl.col("row_nr").is_in(same_attempt.implode())
    )
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
                LANDED_CLASH + "{}",
                pl.lit(what),
                pl.col("run_id"),
                pl.col("landed_at"),
                pl.when(changed_log).then(pl.lit(CHANGED_LOG)).otherwise(pl.lit(NEW_ATTEMPT)),
            )
        )
        # A copy of a run_id the lake holds is judged against the lake's run alone: the
        # batch's first copy does not land (it clashes with that run or repeats it), so it
        # is no reference for the copies after it.
        .when(pl.col("landed_hash").is_null() & (pl.col("first_hash") != pl.col("content_hash")))
        .then(
            pl.format(
                "{} run_id '{}' appears again with different content (first at {}); "
                "give each attempt its own run_id",
                pl.lit(what),
                pl.col("run_id"),
                pl.col("first_at"),
            )
        ),
        # Among the rows that do not clash: each copy of a landed run_id, and each copy after
        # the first of a new one.
        duplicate=pl.col("landed_hash").is_not_null() | (pl.col("row_nr") != pl.col("first_row")),
    )
    clashes = marked.filter(pl.col("clash").is_not_null()).select(
        "row_nr", "source", "line", reason="clash", raw="record"
    )
    skipped = marked.filter(pl.col("clash").is_null() & pl.col("duplicate")).select(
        "row_nr", "source", "line", "run_id"
    )
    kept = marked.filter(pl.col("clash").is_null() & ~pl.col("duplicate")).select(runs.columns)
    return kept, skipped, clashes


OTHER_KIND_CLASH = "{} run_id '{}' is already a {}'s (from {}); give each run its own run_id"
OTHER_KIND_SCHEMA = pl.Schema(
    {
        "row_nr": pl.UInt32,
        "source": pl.String,
        "line": pl.Int64,
        "reason": pl.String,
        "raw": pl.String,
        "record_kind": pl.String,
    }
)


def _across_kinds(
    runs: dict[str, pl.DataFrame], landed: dict[str, pl.DataFrame]
) -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
    """The runs each kind keeps once a run_id held by a run of the other kind (landed, or
    on an earlier line of the batch) is refused, and those clashes (row_nr, source, line,
    reason, raw, record_kind). Each kind's own copies are judged after (``_dedupe_runs``)."""
    kinds = {"task_runs": "task", "surface_runs": "surface"}
    if any(runs[table].is_empty() and landed[table].is_empty() for table in kinds):
        # One kind only (nearly every chunk): nothing to clash with.
        return runs, pl.DataFrame(schema=OTHER_KIND_SCHEMA)
    held = pl.concat(
        [
            frame.select("run_id", "row_nr", "source", "line", kind=pl.lit(kinds[table]))
            for table, frame in runs.items()
        ]
        + [
            # Landed before the batch: before every row of it (a null row_nr sorts first).
            frame.select(
                "run_id",
                pl.lit(None, pl.UInt32).alias("row_nr"),
                "source",
                "line",
                kind=pl.lit(kinds[table]),
            )
            for table, frame in landed.items()
        ]
    )
    first = held.sort("row_nr", nulls_last=False).unique(
        "run_id", keep="first", maintain_order=True
    )
    kept: dict[str, pl.DataFrame] = {}
    clashes: list[pl.DataFrame] = []
    for table, frame in runs.items():
        marked = frame.join(
            first.select(
                "run_id",
                first_kind="kind",
                first_at=pl.format("{}:{}", pl.col("source"), pl.col("line")),
            ),
            on="run_id",
        )
        other = pl.col("first_kind") != kinds[table]
        kept[table] = marked.filter(~other).select(frame.columns)
        clashes.append(
            marked.filter(other).select(
                "row_nr",
                "source",
                "line",
                reason=pl.format(
                    OTHER_KIND_CLASH,
                    pl.lit(kinds[table]),
                    pl.col("run_id"),
                    pl.when(pl.col("first_kind") == "task")
                    .then(pl.lit("task grade"))
                    .otherwise(pl.lit("surface report")),
                    pl.col("first_at"),
                ),
                raw="record",
                record_kind=pl.lit(kinds[table]),
            )
        )
    return kept, pl.concat(clashes)


def dedupe(
    batch: Batch,
    landed_tasks: pl.DataFrame,
    landed_surfaces: pl.DataFrame,
    landed_quarantine: pl.DataFrame,
    landed_lines: pl.DataFrame | None = None,
    attempts: Attempts | None = None,
) -> Deduped:
    """Drop exact duplicates (of the lake or earlier in the batch); quarantine clashes.

    With ``attempts``, a task run that is an attempt landed before, or earlier in the
    batch, under another run_id is skipped as a duplicate of that run.

    A bad line read again from the same place (a file ingested twice) is
    counted as already quarantined instead of filling the quarantine twice.
    ``landed_lines`` (source, line, raw) are lines that landed before: one of
    them that fails now (say, its env type left the rubric) is a duplicate of
    what landed, never quarantined beside it.
    """
    # Which kind each run_id is (the landed run's, else its first line's) comes first: a line
    # of the other kind lands nowhere, so no copy after it is judged against it.
    kept, other_kind = _across_kinds(
        {"task_runs": batch.tables["task_runs"], "surface_runs": batch.tables["surface_runs"]},
        {"task_runs": landed_tasks, "surface_runs": landed_surfaces},
    )
    new_runs, task_skipped, task_clash = _dedupe_runs(
        kept["task_runs"],
        landed_tasks,
        "task",
        None if attempts is None else _landed_as_itself(kept["task_runs"], attempts),
    )
    task_runs, carried = new_runs, pl.DataFrame(schema=SKIPPED_SCHEMA)
    if attempts is not None:
        task_runs, carried, renamed = _carried_over(new_runs, attempts)
        # A copy of a carried-over line (same run_id and content) repeats what it repeats.
        task_skipped = (
            task_skipped.join(renamed.drop("attempt"), on="run_id", how="left")
            .with_columns(run_id=pl.coalesce("original", "run_id"))
            .drop("original")
        )
        task_clash, moved = _same_attempt_clashes(
            task_clash, batch.tables["task_runs"], attempts, renamed
        )
        carried = pl.concat([carried, moved])
    surface_runs, surface_skipped, surface_clash = _dedupe_runs(
        kept["surface_runs"], landed_surfaces, "surface"
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
            other_kind,
        ]
    ).select(line_rows(batch.batch_id))
    # An exact copy of a clashing line, later in the chunk, clashes as it does: it was
    # counted as a duplicate of a line that did not land.
    copy_clashes = batch.copies.join(
        clash_rows.select(first_row="row_nr", reason="reason", record_kind="record_kind"),
        on="first_row",
    ).select(line_rows(batch.batch_id))
    every_reject = pl.concat(
        [
            batch.quarantine,
            *(rows.cast(batch.quarantine.schema) for rows in (clash_rows, copy_clashes)),
        ]
    )
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
        duplicate_rows=pl.concat(
            [carried, *(rows.cast(SKIPPED_SCHEMA) for rows in (task_skipped, surface_skipped))]
        ),
        skipped_duplicates=carried.height
        + task_skipped.height
        + surface_skipped.height
        + batch.parse_skipped
        - copy_clashes.height
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
