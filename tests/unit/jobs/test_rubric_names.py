"""Component names a rubric and the landed runs do not share, on hand-made score rows."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.jobs.rubric_names import (
    NOTE_NAMES_MAX,
    OUTSIDE_SCHEMA,
    RUNS_SCHEMA,
    gap_notes,
    name_gaps,
    part_counts,
)
from tests.examples import examples

PATCH_WEIGHTS = ["patch_verified", "number_of_attempts", "size_of_patch", "number_of_attempt"]


def weights(**names: list[str]) -> pl.LazyFrame:
    rows = [(env, name) for env, components in names.items() for name in components]
    return pl.LazyFrame(rows, schema={"env_type": pl.String, "component": pl.String}, orient="row")


def runs(**counts: int) -> pl.LazyFrame:
    return pl.LazyFrame(list(counts.items()), schema=RUNS_SCHEMA, orient="row")


def outside(*rows: tuple[str, str, bool, int]) -> pl.LazyFrame:
    return pl.LazyFrame(list(rows), schema=OUTSIDE_SCHEMA, orient="row")


# Two patch runs under a rubric with a typo of number_of_attempts in [task.patch] weights:
# neither carries it; one carries crashes, which the rubric does not weigh; one lacks
# size_of_patch, which the other carries.
TYPO = outside(
    ("patch", "number_of_attempt", True, 2),
    ("patch", "crashes", False, 1),
    ("patch", "size_of_patch", True, 1),
)


def test_a_typo_and_an_unweighted_component_are_found_with_the_closest_name() -> None:
    gaps = name_gaps(runs(patch=2), TYPO, weights(patch=PATCH_WEIGHTS)).collect()
    landed = ["crashes", "number_of_attempts", "patch_verified", "size_of_patch"]
    assert gaps.to_dicts() == [
        {
            "env_type": "patch",
            "component": "number_of_attempt",
            "in_rubric": True,
            "landed": landed,
        },
        {"env_type": "patch", "component": "crashes", "in_rubric": False, "landed": landed},
    ]
    assert gap_notes("r1", gaps) == [
        "rubric r1: [task.patch] weights name number_of_attempt, which no landed patch run "
        "carries (the closest landed component: number_of_attempts); every patch run scores "
        "it 0 (anomaly missing_component)",
        "rubric r1: landed patch runs carry crashes, which [task.patch] weights give no "
        "weight; they count 0 in every score (anomaly unknown_component)",
    ]


def test_names_shared_by_rubric_and_records_give_no_note() -> None:
    # size_of_patch is missing from one run's record of two: landed all the same.
    clean = outside(("patch", "size_of_patch", True, 1))
    gaps = name_gaps(runs(patch=2), clean, weights(patch=PATCH_WEIGHTS[:3])).collect()
    assert gaps.is_empty()
    assert gap_notes("r1", gaps) == []


def test_a_name_like_no_landed_one_has_no_closest_and_env_types_are_apart() -> None:
    gaps = name_gaps(
        runs(exploit=1, detect=3),
        # zzz: in no exploit record; the detect runs all carry it (no row outside).
        outside(("exploit", "zzz", True, 1)),
        weights(exploit=["defect_matching", "zzz"], detect=["defect_matching", "zzz"]),
    ).collect()
    assert gap_notes("r1", gaps) == [
        "rubric r1: [task.exploit] weights name zzz, which no landed exploit run carries; "
        "every exploit run scores it 0 (anomaly missing_component)"
    ]


def test_env_types_with_no_landed_run_or_no_weights_are_not_named() -> None:
    # audit has weights and no run; fuzz has runs and no [task.fuzz] (unknown_env_type).
    gaps = name_gaps(
        runs(fuzz=2), outside(("fuzz", "crashes", False, 2)), weights(audit=["audit"])
    ).collect()
    assert gaps.is_empty()


def test_a_long_list_of_unweighted_names_is_cut_and_counted() -> None:
    many = [("audit", f"c{i:02d}", False, 1) for i in range(NOTE_NAMES_MAX + 3)]
    gaps = name_gaps(runs(audit=1), outside(*many), weights(audit=["audit"])).collect()
    shown = ", ".join(f"c{i:02d}" for i in range(NOTE_NAMES_MAX))
    assert gap_notes("r1", gaps) == [
        f"rubric r1: landed audit runs carry {shown} and 3 more, which [task.audit] weights "
        "give no weight; they count 0 in every score (anomaly unknown_component)"
    ]


def test_part_counts_count_runs_and_the_rows_outside_by_env_type() -> None:
    landed = pl.LazyFrame({"run_id": ["a", "b", "c"], "env_type": ["patch", "audit", "patch"]})
    scores = pl.LazyFrame(
        {
            "run_id": ["a", "a", "b", "c", "c"],
            "component": ["x", "y", "audit", "x", "y"],
            "in_record": [True, False, True, True, False],
            "in_rubric": [False, True, True, False, True],
        }
    )
    counted_runs, counted = (frame.collect() for frame in part_counts(landed, scores))
    assert sorted(counted_runs.rows()) == [("audit", 1), ("patch", 2)]
    assert sorted(counted.rows()) == [("patch", "x", False, 2), ("patch", "y", True, 2)]


@settings(max_examples=examples(50), deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["patch", "audit"]), st.sets(st.sampled_from("abc"))),
        min_size=1,
        max_size=8,
    ),
    st.integers(min_value=0, max_value=8),
)
def test_parts_counted_apart_give_the_gaps_of_the_whole_and_of_a_plain_reading(
    landed: list[tuple[str, set[str]]], cut: int
) -> None:
    # Runs with the components their records carry, scored under weights a and b for each
    # env type, as scoring writes its rows: one per component of the record or the weights.
    weighed = {"a", "b"}
    run_rows = [(f"r{i}", env) for i, (env, _) in enumerate(landed)]
    score_rows = [
        (f"r{i}", name, name in carried, name in weighed)
        for i, (_, carried) in enumerate(landed)
        for name in sorted(carried | weighed)
    ]
    run_schema = {"run_id": pl.String, "env_type": pl.String}
    score_schema = {
        "run_id": pl.String,
        "component": pl.String,
        "in_record": pl.Boolean,
        "in_rubric": pl.Boolean,
    }

    def counts(first: int, last: int) -> tuple[pl.LazyFrame, pl.LazyFrame]:
        ids = {run_id for run_id, _ in run_rows[first:last]}
        return part_counts(
            pl.LazyFrame(run_rows[first:last], schema=run_schema, orient="row"),
            pl.LazyFrame(
                [row for row in score_rows if row[0] in ids], schema=score_schema, orient="row"
            ),
        )

    rubric = weights(patch=sorted(weighed), audit=sorted(weighed))
    whole = name_gaps(*counts(0, len(landed)), rubric).collect()
    halves = [counts(0, cut), counts(cut, len(landed))]
    apart = name_gaps(
        pl.concat([h[0] for h in halves]), pl.concat([h[1] for h in halves]), rubric
    ).collect()
    assert apart.equals(whole)
    # The same gaps as read plainly, env type by env type, from the runs' components.
    expected = set()
    for env in {env for env, _ in landed}:
        carried = set().union(*(names for e, names in landed if e == env))
        expected |= {(env, name, True) for name in weighed - carried}
        expected |= {(env, name, False) for name in carried - weighed}
    assert set(whole.select("env_type", "component", "in_rubric").rows()) == expected
