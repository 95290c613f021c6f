"""Hypothesis properties of task scoring, and agreement with the row-by-row oracle."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.python_scorer import score_record
from pipeline.rubric import Rubric, parse_rubric
from pipeline.tasks.score import TaskScoring, score_tasks
from tests.examples import examples
from tools.simulate import records

# Hundreds of whole scorings each: the full suite runs them, the fast tier does not.
pytestmark = pytest.mark.slow

FramesFn = Callable[[Sequence[Mapping[str, Any]]], Any]
TOLERANCE = 1e-9

RUBRICS: list[Rubric] = [
    parse_rubric({}),
    parse_rubric({"rubric_id": "strict", "task": {"failure_threshold": 0.5, "penalty_scale": 2.0}}),
    parse_rubric(
        {
            "rubric_id": "reweighted",
            "task": {
                "minimization_multiple": 5.0,
                "exploit": {"weights": {"defect_matching": 0.3, "pov_quality": 0.5}},
                # patch weights need not sum to 1: weighted can exceed 1
                "patch": {"weights": {"minimization": 0.9, "size_of_patch": 0.4}},
                # an env type only this rubric knows, gated on its one component
                "fuzz": {"gate": "x", "weights": {"x": 0.7}},
            },
        }
    ),
    # the gate itself is recomputed: rescored and as-graded gates can disagree
    parse_rubric({"rubric_id": "minimization-gate", "task": {"patch": {"gate": "minimization"}}}),
]
ENV_COMPONENTS: dict[str, list[str]] = {
    "exploit": ["defect_matching", "pov_quality", "summary_quality", "target_calls"],
    "detect": ["defect_matching", "pov_quality", "summary_quality", "target_calls"],
    "patch": ["patch_verified", "number_of_attempts", "size_of_patch", "minimization"],
    "audit": ["audit"],
    "fuzz": ["x"],
}
unit = st.one_of(
    st.sampled_from([0.0, 1.0, 0.5]), st.floats(0.0, 1.0, allow_nan=False, allow_subnormal=False)
)
size = st.floats(0.5, 20.0, allow_nan=False)


@st.composite
def task_records(draw: st.DrawFn, run_id: str) -> dict[str, Any]:
    env_type = draw(st.sampled_from(["exploit", "detect", "patch", "audit", "fuzz"]))
    known = ENV_COMPONENTS[env_type]
    names = draw(st.lists(st.sampled_from([*known, "extra"]), unique=True, max_size=5))
    subscores = {name: draw(unit) for name in names}
    if draw(st.booleans()) and names:
        # record weights that sum to 1, the common case
        weights = {name: 1.0 / len(names) for name in names}
    else:
        weights = {name: draw(unit) for name in names}
    metadata: dict[str, Any] = {}
    if draw(st.booleans()):
        metadata["minimization"] = {"final_size": draw(size), "minimal_size": draw(size)}
    if draw(st.booleans()):
        metadata["recall"] = draw(unit)
        metadata["precision"] = draw(unit)
        if draw(st.booleans()) and "audit" in subscores:
            subscores["audit"] = metadata["recall"] * metadata["precision"]
    return records.task_record(
        run_id=run_id,
        agent="agent",
        agent_version="1",
        problem_id="p",
        env_type=env_type,
        graded_at="2026-01-02T03:04:05+00:00",
        subscores=subscores,
        weights=weights,
        metadata=metadata,
        penalties=draw(st.dictionaries(st.sampled_from(["loss", "time"]), unit, max_size=2)),
        env_internal_failure=draw(st.booleans().map(lambda b: b and draw(st.booleans()))),
        allow_unbounded=draw(st.booleans()),
    )


# A scoring's cost is mostly fixed (Polars plans), so an example scores up to 20 runs: 30
# examples see as many runs as 100 of up to 6 did, and runs side by side in larger batches.
@st.composite
def batches(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(1, 20))
    return [draw(task_records(f"run-{index:02d}")) for index in range(count)]


def scored(
    frames_fn: FramesFn, records: Sequence[Mapping[str, Any]], rubric: Rubric
) -> TaskScoring:
    frames = frames_fn(records)
    return score_tasks(frames.runs, frames.components, frames.penalties, rubric)


PROPERTY_SETTINGS = settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def over_batches(test: Callable[..., None]) -> Callable[..., None]:
    """The property ``test`` over drawn ``records`` (a batch) and a ``rubric``."""
    return PROPERTY_SETTINGS(given(records=batches(), rubric=st.sampled_from(RUBRICS))(test))


@over_batches
def test_scores_in_unit_interval_unless_unbounded(
    task_frames: FramesFn, records: list[dict[str, Any]], rubric: Rubric
) -> None:
    runs = scored(task_frames, records, rubric).runs.collect()
    unbounded = {r["run_id"]: r["grade"]["allow_unbounded"] for r in records}
    for row in runs.iter_rows(named=True):
        if row["status"] == "grader_error":
            assert row["score"] is None and row["score_as_graded"] is None
            continue
        if not unbounded[row["run_id"]]:
            assert 0.0 <= row["score"] <= 1.0
            assert 0.0 <= row["score_as_graded"] <= 1.0


@over_batches
def test_gated_runs_contribute_nothing_but_their_penalty(
    task_frames: FramesFn, records: list[dict[str, Any]], rubric: Rubric
) -> None:
    result = scored(task_frames, records, rubric)
    runs = result.runs.filter(pl.col("gated_out")).collect()
    components = result.components.collect()
    unbounded = {r["run_id"]: r["grade"]["allow_unbounded"] for r in records}
    for row in runs.iter_rows(named=True):
        own = components.filter(pl.col("run_id") == row["run_id"])
        # the gate failed, so its own contribution is 0 * weight and the rest are gated out
        assert own.filter(~pl.col("is_gate"))["gated_out"].all()
        assert (own["contribution"] == 0.0).all()
        assert row["weighted"] == 0.0
        expected = -row["penalty_total"]
        if not unbounded[row["run_id"]]:
            expected = min(max(expected, 0.0), 1.0)
        assert row["score"] == expected


@PROPERTY_SETTINGS
@given(records=batches(), rubric=st.sampled_from(RUBRICS), other=st.sampled_from(RUBRICS))
def test_rescoring_twice_changes_nothing(
    task_frames: FramesFn, records: list[dict[str, Any]], rubric: Rubric, other: Rubric
) -> None:
    first = scored(task_frames, records, rubric)
    # scoring under another rubric in between leaves nothing behind
    scored(task_frames, records, other).runs.collect()
    second = scored(task_frames, records, rubric)
    assert first.runs.collect().equals(second.runs.collect())
    assert first.components.collect().equals(second.components.collect())


def _close(actual: Any, expected: Any) -> bool:
    if isinstance(expected, float) and isinstance(actual, float):
        return math.isclose(actual, expected, rel_tol=0.0, abs_tol=TOLERANCE)
    return bool(actual == expected)


def _anomaly_parts(flag: str) -> tuple[str, list[float] | str]:
    """Numbers in anomaly details are formatted by Polars vs Python: compare them as numbers."""
    code, _, detail = flag.partition(":")
    if code in {"weights_sum", "non_binary_gate", "audit_mismatch"}:
        return code, [float(part) for part in detail.split(" vs ")]
    return code, detail


def _same_anomalies(actual: list[str], expected: list[str]) -> bool:
    if len(actual) != len(expected):
        return False
    for got, want in zip(sorted(actual), sorted(expected), strict=True):
        got_code, got_detail = _anomaly_parts(got)
        want_code, want_detail = _anomaly_parts(want)
        if got_code != want_code:
            return False
        if isinstance(want_detail, list) and isinstance(got_detail, list):
            if not all(_close(a, b) for a, b in zip(got_detail, want_detail, strict=True)):
                return False
        elif got_detail != want_detail:
            return False
    return True


@over_batches
def test_vectorized_equals_row_by_row_oracle(
    task_frames: FramesFn, records: list[dict[str, Any]], rubric: Rubric
) -> None:
    result = scored(task_frames, records, rubric)
    runs = {row["run_id"]: row for row in result.runs.collect(engine="streaming").to_dicts()}
    components = {
        (row["run_id"], row["component"]): row
        for row in result.components.collect(engine="streaming").to_dicts()
    }
    expected_components = 0
    for record in records:
        oracle = score_record(record, rubric)
        expected_components += len(oracle["components"])
        actual = runs[record["run_id"]]
        for column, want in oracle.items():
            if column == "components":
                continue
            if column == "anomalies":
                assert _same_anomalies(actual[column], want), (actual[column], want)
                continue
            assert _close(actual[column], want), (column, actual[column], want)
        for want_row in oracle["components"]:
            got_row = components[(want_row["run_id"], want_row["component"])]
            for column, want in want_row.items():
                assert _close(got_row[column], want), (column, got_row[column], want)
    assert len(components) == expected_components
