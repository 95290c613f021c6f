"""What a rescore changed, on three runs scored under two rubrics (hand-computed)."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.jobs.lineage import (
    RescoreDiff,
    _coverage,
    diff_by_env_type,
    latest_versions,
    ranking_moves,
)
from tests.examples import examples

RUNS = pl.LazyFrame(
    {
        "run_id": ["r1", "r2", "r3", "r4"],
        "agent": ["a", "a", "b", "b"],
        "agent_version": ["1", "1", "1", "1"],
        "env_type": ["exploit", "exploit", "patch", "patch"],
    }
)


def scores(
    values: list[float | None], passed: list[bool | None], status: list[str]
) -> pl.LazyFrame:
    return pl.LazyFrame(
        {"run_id": ["r1", "r2", "r3", "r4"], "score": values, "passed": passed, "status": status},
        schema={
            "run_id": pl.String,
            "score": pl.Float64,
            "passed": pl.Boolean,
            "status": pl.String,
        },
    )


BEFORE = scores([0.9, 0.4, 0.6, None], [True, False, True, None], ["scored"] * 3 + ["error"])
AFTER = scores([0.9, 0.7, 0.2, 0.5], [True, True, False, False], ["scored"] * 4)


def test_per_env_type_counts_changes_and_flips() -> None:
    rows = {r["env_type"]: r for r in diff_by_env_type(RUNS, BEFORE, AFTER).collect().to_dicts()}
    exploit, patch = rows["exploit"], rows["patch"]
    assert (exploit["runs"], exploit["score_changed"], exploit["pass_flipped"]) == (2, 1, 1)
    assert (exploit["now_passing"], exploit["now_failing"]) == (1, 0)
    assert exploit["mean_change"] == pytest.approx((0.0 + 0.3) / 2)
    # r4 had no score before (a grader error): nothing to compare, so patch holds r3 alone
    assert (patch["runs"], patch["now_failing"]) == (1, 1)
    assert patch["mean_score_from"] == pytest.approx(0.6)
    assert patch["mean_change"] == pytest.approx(-0.4)


def test_ranking_moves_rank_by_mean_and_say_how_far() -> None:
    moves = ranking_moves(RUNS, BEFORE, AFTER).collect()
    # before: a (0.9+0.4)/2 = 0.65 > b 0.6; after: a 0.8 > b 0.2 -- nobody moves
    assert moves.select("agent", "rank_from", "rank_to", "moved").rows() == [
        ("a", 1, 1, 0),
        ("b", 2, 2, 0),
    ]
    flipped = ranking_moves(RUNS, AFTER, BEFORE).collect()
    assert flipped["mean_from"].to_list() == pytest.approx([0.8, 0.2])


def test_runs_without_a_score_under_a_rubric_are_counted_and_named() -> None:
    # r3 and r4 landed after the old rubric was replaced: the diff had compared the rest
    # without a word (267k of 281k runs, say).
    old = BEFORE.filter(pl.col("run_id").is_in(["r1", "r2"]))
    row = _coverage(RUNS, old, AFTER, "task_runs").collect().row(0, named=True)
    assert row == {"task_runs": 4, "task_runs_unscored_from": 2, "task_runs_unscored_to": 0}
    diff = RescoreDiff("old", "new", pl.DataFrame(), pl.DataFrame(), coverage=row)
    assert diff.unscored_notes() == [
        "2 of 4 landed task run(s) have no score under old (landed after it was replaced, or "
        "its score files removed): left out of the comparison"
    ]
    assert diff.to_dict()["coverage"] == row


@given(st.permutations(range(40)), st.permutations(range(40)))
@settings(max_examples=examples(30), deadline=None)
def test_means_and_ranks_do_not_depend_on_row_order(first: list[int], second: list[int]) -> None:
    """Two versions with the same scores (one a copy of the other) tie whatever order their
    rows arrive in: the same bits, the same rank, nobody moved."""
    values = [((i * 7919) % 1000) / 997 for i in range(20)]
    runs = pl.DataFrame(
        {
            "run_id": [f"{v}-{i}" for v in ("1", "2") for i in range(20)],
            "agent": "a",
            "agent_version": [v for v in ("1", "2") for _ in range(20)],
            "env_type": "exploit",
        }
    )
    graded = pl.DataFrame(
        {
            "run_id": runs["run_id"],
            "score": values * 2,
            "passed": [True] * 40,
            "status": ["scored"] * 40,
        }
    )
    before, after = graded[first].lazy(), graded[second].lazy()
    moves = ranking_moves(runs[second].lazy(), before, after).collect()
    assert moves["mean_from"].n_unique() == moves["mean_to"].n_unique() == 1
    assert moves.select("rank_from", "rank_to", "moved").rows() == [(1, 1, 0), (1, 1, 0)]
    by_env = diff_by_env_type(runs[first].lazy(), before, after).collect()
    again = diff_by_env_type(runs.lazy(), graded.lazy(), graded.lazy()).collect()
    assert by_env.equals(again)


def test_a_servers_latest_version_is_the_one_first_reported_last() -> None:
    # As by_server picks it (surface_versions.version_order): 1.0 probed again after 2.0
    # stays the older version, so the fleet a surface rubric change is judged on holds 2.0's
    # report. The newest report (1.0's re-probe) had stood for the server.
    at = [datetime(2026, 11, day, tzinfo=UTC) for day in (1, 2, 3)]
    reports = pl.LazyFrame(
        {
            "run_id": ["s-1.0-a", "s-2.0", "s-1.0-b", "t-u"],
            "server": ["s", "s", "s", "t"],
            "server_version": ["1.0", "2.0", "1.0", None],
            "generated_at": [at[0], at[1], at[2], at[0]],
            "batch_id": ["b1", "b1", "b2", "b1"],
        }
    )
    assert latest_versions(reports).sort("server").collect().rows() == [
        ("s-2.0", "s", "2.0"),
        ("t-u", "t", None),
    ]
