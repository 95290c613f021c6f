"""Component names a rubric and the landed runs do not share, on hand-made score rows."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.jobs.rubric_names import (
    NOTE_NAMES_MAX,
    USAGE_SCHEMA,
    component_usage,
    gap_notes,
    name_gaps,
    part_usage,
)
from tests.examples import examples


def rows(*values: tuple[str, str, bool, bool]) -> pl.LazyFrame:
    return pl.LazyFrame(list(values), schema=USAGE_SCHEMA, orient="row")


# A typo of number_of_attempts in [task.patch] weights, and a component the records carry
# that the rubric does not weigh.
TYPO = rows(
    ("patch", "number_of_attempt", False, True),
    ("patch", "number_of_attempts", True, True),
    ("patch", "crashes", True, False),
)


def test_a_typo_and_an_unweighted_component_are_found_with_the_closest_name() -> None:
    gaps = name_gaps(TYPO).collect()
    assert gaps.to_dicts() == [
        {
            "env_type": "patch",
            "component": "number_of_attempt",
            "in_rubric": True,
            "landed": ["crashes", "number_of_attempts"],
        },
        {
            "env_type": "patch",
            "component": "crashes",
            "in_rubric": False,
            "landed": ["crashes", "number_of_attempts"],
        },
    ]
    assert gap_notes("r1", gaps) == [
        "rubric r1: [task.patch] weights name number_of_attempt, which no landed patch run "
        "carries (the closest landed component: number_of_attempts); every patch run scores "
        "it 0 (anomaly missing_component)",
        "rubric r1: landed patch runs carry crashes, which [task.patch] weights give no "
        "weight; they count 0 in every score (anomaly unknown_component)",
    ]


def test_names_shared_by_rubric_and_records_give_no_note() -> None:
    clean = rows(
        ("patch", "patch_verified", True, True),
        # Missing from one run's record, carried by another's: landed.
        ("patch", "size_of_patch", False, True),
        ("patch", "size_of_patch", True, True),
    )
    assert name_gaps(clean).collect().is_empty()
    assert gap_notes("r1", name_gaps(clean).collect()) == []


def test_a_name_like_no_landed_one_has_no_closest_and_env_types_are_apart() -> None:
    gaps = name_gaps(
        rows(
            ("exploit", "zzz", False, True),
            ("exploit", "defect_matching", True, True),
            # Carried by detect runs only: exploit's weight of it still reaches no run.
            ("detect", "zzz", True, True),
        )
    ).collect()
    assert gap_notes("r1", gaps) == [
        "rubric r1: [task.exploit] weights name zzz, which no landed exploit run carries; "
        "every exploit run scores it 0 (anomaly missing_component)"
    ]


def test_an_env_type_the_rubric_does_not_weigh_is_not_named() -> None:
    # Its runs are flagged unknown_env_type: there is no [task.fuzz] table to fix.
    assert name_gaps(rows(("fuzz", "crashes", True, False))).collect().is_empty()


def test_a_long_list_of_unweighted_names_is_cut_and_counted() -> None:
    many = [("audit", f"c{i:02d}", True, False) for i in range(NOTE_NAMES_MAX + 3)]
    notes = gap_notes("r1", name_gaps(rows(("audit", "audit", True, True), *many)).collect())
    shown = ", ".join(f"c{i:02d}" for i in range(NOTE_NAMES_MAX))
    assert notes == [
        f"rubric r1: landed audit runs carry {shown} and 3 more, which [task.audit] weights "
        "give no weight; they count 0 in every score (anomaly unknown_component)"
    ]


def test_part_usage_gives_each_score_row_its_runs_env_type() -> None:
    runs = pl.LazyFrame({"run_id": ["a", "b"], "env_type": ["patch", "audit"]})
    scores = pl.LazyFrame(
        {
            "run_id": ["a", "a", "b"],
            "component": ["x", "y", "x"],
            "in_record": [True, False, False],
            "in_rubric": [False, True, True],
        }
    )
    usage = part_usage(runs, scores).collect().sort("env_type", "component")
    assert usage.rows() == [
        ("audit", "x", False, True),
        ("patch", "x", True, False),
        ("patch", "y", False, True),
    ]


@settings(max_examples=examples(50), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["patch", "audit"]),
            st.sampled_from(["a", "b", "c"]),
            st.booleans(),
            st.booleans(),
        ),
        max_size=12,
    ),
    st.integers(min_value=0, max_value=12),
)
def test_parts_reduced_apart_give_the_gaps_of_the_whole(
    values: list[tuple[str, str, bool, bool]], cut: int
) -> None:
    # In the score rows in_rubric is the same for every row of an env type and component.
    values = [(env, name, record, name != "c") for env, name, record, _ in values]
    whole = name_gaps(rows(*values)).collect()
    parts = pl.concat([component_usage(rows(*values[:cut])), component_usage(rows(*values[cut:]))])
    assert name_gaps(parts).collect().equals(whole)
