"""Which landed Inspect runs are a retry's. eval_retry and eval_set run an eval again under
a new eval id with the same task id (``inspect_ai._eval.eval.eval_retry_async`` passes the
log's ``eval.task_id`` on; the eval id and run id are new), and name the log they retry
nowhere else: a retry of a log is runs of its task id, under another eval id, done after
the log. Polars over landed task_runs and run_metadata (the lake's, with what a
transaction staged).
"""

from __future__ import annotations

import re

import polars as pl

from pipeline.sources.inspect.columns import RUN_ID_PREFIX, TASK_ID_KEY

# The Inspect runs a retry is looked for among.
TASK_RUNS = pl.Schema(
    [
        ("task_id", pl.String()),
        ("eval_id", pl.String()),
        ("run_id", pl.String()),
        ("source", pl.String()),
        ("graded_at", pl.Datetime("us", "UTC")),
    ]
)

# The entry after a log's samples counting those its header lists and it lacks (an eval
# stopped early): "<n> sample(s) the log's header lists are not in it (...): <names>".
LACKING = "sample(s) the log's header lists are not in it"


def lacking_reason(count: int, why: str, shown: str) -> str:
    return f"{count} {LACKING} ({why}?): {shown}"


def is_lacking() -> pl.Expr:
    """A quarantine row is a log's entry counting the samples it lacks."""
    return pl.col("reason").str.contains(f"^[0-9]+ {re.escape(LACKING)} ")


def lacking_retried_note() -> pl.Expr:
    """The note on a log whose entry counting the samples it lacked a retry resolved, from
    the row resolving it (source, run_id: the retry's first run)."""
    return pl.format(
        "{}: the samples its header lists and it lacked (an eval stopped early) landed with "
        "eval {}, a retry of it (the same task id) that landed every sample it lists: the "
        "entry counting them is resolved (outcome 'retried')",
        pl.col("source"),
        run_eval_id(),
    )


def run_eval_id() -> pl.Expr:
    """The eval id an Inspect run_id (``inspect:<eval id>/<sample id>#<epoch>``) names."""
    return pl.col("run_id").str.strip_prefix(RUN_ID_PREFIX).str.split("/").list.first()


def inspect_task_runs(runs: pl.LazyFrame, run_metadata: pl.LazyFrame) -> pl.LazyFrame:
    """The Inspect runs among ``runs`` with the task id their metadata names, as TASK_RUNS
    (a .jsonl record of the reader's form counts too; a task id that is not a string
    names none)."""
    # Decoded once filtered: only the task ids' values are JSON strings (Polars merges
    # filters into one predicate, which would decode every value).
    ids = run_metadata.filter(
        (pl.col("key") == TASK_ID_KEY)
        & pl.col("run_id").str.starts_with(RUN_ID_PREFIX)
        & pl.col("value").str.starts_with('"')
    ).select("run_id", "value")
    return (
        runs.filter(pl.col("run_id").str.starts_with(RUN_ID_PREFIX))
        .select("run_id", "source", "graded_at")
        .join(ids, on="run_id")
        .select(
            task_id=pl.col("value").str.json_decode(pl.String),
            eval_id=run_eval_id(),
            run_id=pl.col("run_id"),
            source=pl.col("source"),
            graded_at=pl.col("graded_at"),
        )
    )


def first_runs(logs: pl.DataFrame, runs: pl.DataFrame, on: list[str]) -> pl.DataFrame:
    """Per log of ``logs`` (columns ``on``, ``task_id``, ``eval_id``, ``after``), the first
    run (by graded_at, then run_id) of ``runs`` (TASK_RUNS) of its task id, under another
    eval id, graded at or after ``after``: ``on`` and the run's run_id. A log none is
    found for is left out."""
    return (
        logs.select(*on, "task_id", log_eval="eval_id", after="after")
        .join(runs.select("task_id", "eval_id", "run_id", "graded_at"), on="task_id")
        .filter(
            (pl.col("eval_id") != pl.col("log_eval")) & (pl.col("graded_at") >= pl.col("after"))
        )
        .sort("graded_at", "run_id")
        .group_by(on, maintain_order=True)
        .agg(pl.col("run_id").first())
    )


def retried_lacking(
    lacking: pl.DataFrame, runs: pl.DataFrame, open_sources: pl.Series
) -> pl.DataFrame:
    """The entries ``lacking`` (source, line, raw: open rows counting the samples a log
    lacks) that a retry has made good, with the retry's first run (source, line, raw,
    run_id).

    The log's eval is its landed runs' (``runs``: TASK_RUNS); a retry is an eval of its task
    id, another eval id, with a run graded after the log's last one (eval_retry and
    eval_set begin a retry once the log has ended), that landed every sample it lists: none
    of its files (``open_sources``: those with an open quarantine row) has an entry still
    open, its own lacking samples included. A retry runs the samples the log listed (it
    takes sample ids, limit and epochs from the log), so it holds those the log lacked; one
    that lacks some too leaves the log's entry open until a retry of it lands them. A log
    none of whose samples landed under its own eval names no task: its entry stays open.
    """
    logs = (
        runs.join(lacking.select("source").unique(), on="source")
        .group_by("source", "task_id", "eval_id")
        .agg(pl.col("graded_at").max())
        # Strictly after: a run graded as the log's last is not taken for a retry's.
        .with_columns(after=pl.col("graded_at") + pl.duration(microseconds=1))
    )
    unfinished = runs.filter(pl.col("source").is_in(open_sources.implode())).select(
        "task_id", "eval_id"
    )
    finished = runs.join(unfinished.unique(), on=["task_id", "eval_id"], how="anti")
    found = first_runs(logs, finished, ["source"])
    return lacking.join(found, on="source").select("source", "line", "raw", "run_id")
