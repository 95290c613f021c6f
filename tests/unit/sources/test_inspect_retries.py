"""An entry counting the samples an Inspect log lacked, resolved by a retry: an eval of the
log's task id, another eval id, with a run graded after the log's last, none of whose files
has an open entry. By hand, on small tables."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl

from pipeline.sources.inspect.retries import TASK_RUNS, is_lacking, lacking_reason, retried_lacking

T0 = datetime(2026, 12, 5, 4, 0, 0, tzinfo=UTC)
ENTRY = pl.DataFrame(
    {"source": ["stopped.eval"], "line": [3], "raw": [None]},
    schema={"source": pl.String, "line": pl.Int64, "raw": pl.String},
)


def runs(*rows: tuple[str, str, str, int]) -> pl.DataFrame:
    """(task id, eval id, source, seconds after T0): one run each, named after its sample."""
    return pl.DataFrame(
        [
            (task, eval_id, f"inspect:{eval_id}/s{n}#1", source, T0 + timedelta(seconds=at))
            for n, (task, eval_id, source, at) in enumerate(rows)
        ],
        schema=TASK_RUNS,
        orient="row",
    )


def resolved(
    landed: pl.DataFrame, open_sources: tuple[str, ...] = ()
) -> list[tuple[str, int, str]]:
    rows = retried_lacking(ENTRY, landed, pl.Series(list(open_sources), dtype=pl.String))
    return [(s, line, run_id) for s, line, _, run_id in rows.iter_rows()]


def test_a_retry_that_landed_every_sample_resolves_the_entry_with_its_first_run() -> None:
    landed = runs(
        ("T", "E1", "stopped.eval", 5),
        ("T", "E2", "retry.eval", 9),
        ("T", "E2", "retry.eval", 7),
    )
    assert resolved(landed) == [("stopped.eval", 3, "inspect:E2/s2#1")]


def test_no_retry_resolves_it_while_it_lacks_samples_too_or_ran_before() -> None:
    landed = runs(("T", "E1", "stopped.eval", 5), ("T", "E2", "retry.eval", 9))
    assert resolved(landed, ("retry.eval", "stopped.eval")) == []  # the retry lacks some too
    earlier = runs(("T", "E1", "stopped.eval", 5), ("T", "E0", "first.eval", 5))
    assert resolved(earlier) == []  # graded no later than the log's last: not after it
    other = runs(("T", "E1", "stopped.eval", 5), ("U", "E2", "retry.eval", 9))
    assert resolved(other) == []  # another task
    assert resolved(runs(("T", "E2", "retry.eval", 9))) == []  # the log landed no run


def test_the_entry_is_told_by_its_reason() -> None:
    reasons = pl.DataFrame(
        {
            "reason": [
                lacking_reason(12, "an eval stopped early", "a (epoch 1), ..."),
                "sample a epoch 1 cannot be read (boom)",
                f"x {lacking_reason(1, 'why', 'a (epoch 1)')}",
            ]
        }
    )
    assert reasons.select(is_lacking()).to_series().to_list() == [True, False, False]
