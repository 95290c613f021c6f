"""What a rescore changed, on three runs scored under two rubrics (hand-computed)."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.jobs.lineage import diff_by_env_type, ranking_moves

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
