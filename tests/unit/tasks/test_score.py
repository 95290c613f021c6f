"""Task scoring (CONTRACT section 4): hand-computed values for every rule.

Default rubric weights: exploit/detect defect_matching 0.6, pov_quality 0.2,
summary_quality 0.1, target_calls 0.1; patch 0.25 each; audit 1.0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import polars as pl
import pytest

from pipeline.rubric import Rubric, parse_rubric
from pipeline.tasks.formulas import minimization_subscore
from pipeline.tasks.keys import env_gates_frame, rubric_weights_frame
from pipeline.tasks.score import ScoringInputError, score_tasks
from schemas import checked, polars_schema
from schemas.tasks import TaskComponentScore, TaskScore

DEFAULT = parse_rubric({})
EXPLOIT_ALL = {
    "defect_matching": 1.0,
    "pov_quality": 1.0,
    "summary_quality": 1.0,
    "target_calls": 1.0,
}
EXPLOIT_WEIGHTS = {
    "defect_matching": 0.6,
    "pov_quality": 0.2,
    "summary_quality": 0.1,
    "target_calls": 0.1,
}
PATCH_ALL = {
    "patch_verified": 1.0,
    "number_of_attempts": 1.0,
    "size_of_patch": 1.0,
    "minimization": 1.0,
}

Record = dict[str, Any]
RecordFn = Callable[..., Record]
FramesFn = Callable[[Sequence[Mapping[str, Any]]], Any]


class Scored:
    """Collected, validated outputs indexed by run_id and (run_id, component)."""

    def __init__(self, runs: pl.DataFrame, components: pl.DataFrame) -> None:
        self.runs_frame = runs
        self.components_frame = components
        self.runs = {row["run_id"]: row for row in runs.to_dicts()}
        self.components = {(row["run_id"], row["component"]): row for row in components.to_dicts()}

    def run(self, run_id: str) -> dict[str, Any]:
        return self.runs[run_id]

    def component(self, run_id: str, component: str) -> dict[str, Any]:
        return self.components[(run_id, component)]


@pytest.fixture
def score(task_frames: FramesFn) -> Callable[..., Scored]:
    def run(records: Sequence[Record], rubric: Rubric = DEFAULT) -> Scored:
        frames = task_frames(records)
        result = score_tasks(frames.runs, frames.components, frames.penalties, rubric)
        runs = result.runs.collect()
        components = result.components.collect()
        assert runs.schema == polars_schema(TaskScore)
        assert components.schema == polars_schema(TaskComponentScore)
        return Scored(checked(TaskScore, runs), checked(TaskComponentScore, components))

    return run


def anomaly_codes(run: Mapping[str, Any]) -> list[str]:
    return [flag.split(":", 1)[0] for flag in run["anomalies"]]


# --- rubric frames and small formulas ---------------------------------------------------------


def test_rubric_weights_frame_lists_every_env_component_and_marks_the_gate() -> None:
    frame = rubric_weights_frame(DEFAULT).collect()
    # 4 exploit + 4 detect + 4 patch + 1 audit components.
    assert frame.height == 13
    gates = frame.filter(pl.col("is_gate")).sort("env_type")
    assert gates.select("env_type", "component").rows() == [
        ("detect", "defect_matching"),
        ("exploit", "defect_matching"),
        ("patch", "patch_verified"),
    ]
    audit = frame.filter(pl.col("env_type") == "audit").row(0, named=True)
    assert audit == {"env_type": "audit", "component": "audit", "weight": 1.0, "is_gate": False}


def test_env_gates_frame_has_no_gate_for_audit() -> None:
    gates = dict(env_gates_frame(DEFAULT).select("env_type", "gate_component").collect().rows())
    assert gates == {
        "exploit": "defect_matching",
        "detect": "defect_matching",
        "patch": "patch_verified",
        "audit": None,
    }


@pytest.mark.parametrize(
    ("final", "minimal", "multiple", "expected"),
    [
        # final/minimal = 2; lerp01(2, 1, 3) = 1 - (2-1)/(3-1) = 0.5
        (2.0, 1.0, 3.0, 0.5),
        # ratio 1 is the good anchor: 1.0
        (5.0, 5.0, 3.0, 1.0),
        # ratio 0.5 is below the good anchor: 1.0
        (1.0, 2.0, 3.0, 1.0),
        # ratio 3 is the bad anchor: 0.0; ratio 4 beyond it: 0.0
        (3.0, 1.0, 3.0, 0.0),
        (4.0, 1.0, 3.0, 0.0),
        # ratio 2 with multiple 5: 1 - (2-1)/(5-1) = 0.75
        (4.0, 2.0, 5.0, 0.75),
    ],
)
def test_minimization_subscore(
    final: float, minimal: float, multiple: float, expected: float
) -> None:
    frame = pl.DataFrame({"final": [final], "minimal": [minimal]})
    value = frame.select(minimization_subscore(pl.col("final"), pl.col("minimal"), multiple)).item()
    assert value == pytest.approx(expected, abs=1e-12)


# --- the seed's examples ----------------------------------------------------------------------


def test_failed_defect_match_zeroes_all_four_components(
    score: Callable[..., Scored], task_record: RecordFn
) -> None:
    # Seed 000: "an input that does not trigger the defect scores zero on all four,
    # however elegant it is": pov/summary/target all 1.0, defect_matching 0.
    subs = {**EXPLOIT_ALL, "defect_matching": 0.0}
    result = score([task_record("r1", "exploit", subs, EXPLOIT_WEIGHTS)])
    run = result.run("r1")
    # weighted = 0*0.6 (gate) + 0 + 0 + 0 (gated out) = 0
    assert run["weighted"] == 0.0
    assert run["score"] == 0.0
    assert run["gate_component"] == "defect_matching"
    assert run["gate_passed"] is False
    assert run["gated_out"] is True
    assert run["passed"] is False
    for name in EXPLOIT_ALL:
        assert result.component("r1", name)["contribution"] == 0.0
        assert result.component("r1", name)["gated_out"] is (name != "defect_matching")
    # the stored record is never fixed: the elegant subscores stay visible
    assert result.component("r1", "pov_quality")["subscore"] == 1.0
    # the record's own grading is gated too: score_as_graded = 0
    assert run["score_as_graded"] == 0.0
    assert run["anomalies"] == ["gate_failed_with_nonzero:pov_quality,summary_quality,target_calls"]


def test_detect_is_gated_like_exploit(score: Callable[..., Scored], task_record: RecordFn) -> None:
    subs = {**EXPLOIT_ALL, "defect_matching": 0.0}
    run = score([task_record("r1", "detect", subs, EXPLOIT_WEIGHTS)]).run("r1")
    # 0 on all four under the detect rubric as well
    assert (run["score"], run["gated_out"]) == (0.0, True)


def test_exploit_gate_passed_sums_subscore_times_weight(
    score: Callable[..., Scored], task_record: RecordFn
) -> None:
    subs = {"defect_matching": 1.0, "pov_quality": 0.5, "summary_quality": 0.5, "target_calls": 0.0}
    result = score([task_record("r1", "exploit", subs, EXPLOIT_WEIGHTS)])
    run = result.run("r1")
    # 1*0.6 + 0.5*0.2 + 0.5*0.1 + 0*0.1 = 0.6 + 0.1 + 0.05 + 0 = 0.75
    assert run["weighted"] == pytest.approx(0.75, abs=1e-12)
    assert run["score"] == pytest.approx(0.75, abs=1e-12)
    assert run["penalty_total"] == 0.0
    assert (run["gate_passed"], run["gated_out"], run["passed"]) == (True, False, True)
    assert result.component("r1", "pov_quality")["contribution"] == pytest.approx(0.1, abs=1e-12)
    assert run["anomalies"] == []


def test_patch_that_costs_functionality_is_penalised(
    score: Callable[..., Scored], task_record: RecordFn
) -> None:
    record = task_record("r1", "patch", PATCH_ALL, penalties={"functionality_loss": 0.2})
    run = score([record]).run("r1")
    # weighted = 4 * (1 * 0.25) = 1.0; penalty_total = 0.2 * 1.0 = 0.2; score = 1.0 - 0.2 = 0.8
    assert run["weighted"] == pytest.approx(1.0, abs=1e-12)
    assert run["penalty_total"] == pytest.approx(0.2, abs=1e-12)
    assert run["score"] == pytest.approx(0.8, abs=1e-12)
    assert run["score_as_graded"] == pytest.approx(0.8, abs=1e-12)


def test_penalties_sum_and_scale(score: Callable[..., Scored], task_record: RecordFn) -> None:
    rubric = parse_rubric({"task": {"penalty_scale": 0.5}})
    record = task_record("r1", "patch", PATCH_ALL, penalties={"a": 0.2, "b": 0.2})
    run = score([record], rubric).run("r1")
    # penalty_total = (0.2 + 0.2) * 0.5 = 0.2; score = 1.0 - 0.2 = 0.8
    assert run["penalty_total"] == pytest.approx(0.2, abs=1e-12)
    assert run["score"] == pytest.approx(0.8, abs=1e-12)


def test_audit_is_recall_times_precision(
    score: Callable[..., Scored], task_record: RecordFn
) -> None:
    metadata = {"recall": 0.5, "precision": 0.8, "found": ["d1"], "missed": ["d2"]}
    result = score([task_record("r1", "audit", {"audit": 0.4}, metadata=metadata)])
    run = result.run("r1")
    # recall * precision = 0.5 * 0.8 = 0.4 = the stored subscore: no anomaly; score = 0.4 * 1.0
    assert run["score"] == pytest.approx(0.4, abs=1e-12)
    assert run["anomalies"] == []
    # audit has no gate: gate_passed null, never gated out; passed = score > 0
    assert (run["gate_component"], run["gate_passed"], run["gated_out"]) == (None, None, False)
    assert run["passed"] is True


def test_audit_mismatch_is_flagged_not_fixed(
    score: Callable[..., Scored], task_record: RecordFn
) -> None:
    metadata = {"recall": 0.5, "precision": 0.8}
    run = score([task_record("r1", "audit", {"audit": 0.5}, metadata=metadata)]).run("r1")
    # |0.5 - 0.5*0.8| = |0.5 - 0.4| = 0.1 > 1e-6; the stored 0.5 still scores 0.5 * 1.0
    assert run["anomalies"] == ["audit_mismatch:0.5 vs 0.4"]
    assert run["score"] == pytest.approx(0.5, abs=1e-12)


def test_audit_without_recall_cannot_be_checked_and_says_so(
    score: Callable[..., Scored], task_record: RecordFn
) -> None:
    # Issue 13: an audit lacking recall or precision landed without a word; it is flagged,
    # naming what is missing, and still scores its stored subscore.
    run = score([task_record("r1", "audit", {"audit": 0.5}, metadata={"precision": 0.8})]).run("r1")
    assert run["anomalies"] == ["audit_unverified:recall"]
    assert run["score"] == pytest.approx(0.5, abs=1e-12)
    bare = score([task_record("r2", "audit", {"audit": 0.5})]).run("r2")
    assert bare["anomalies"] == ["audit_unverified:recall,precision"]


def test_audit_zero_does_not_pass(score: Callable[..., Scored], task_record: RecordFn) -> None:
    run = score([task_record("r1", "audit", {"audit": 0.0})]).run("r1")
    # score = 0 * 1.0 = 0; no threshold, so passed = (0 > 0) = false
    assert (run["score"], run["passed"]) == (0.0, False)


# --- minimization -----------------------------------------------------------------------------

MinimizedFn = Callable[..., Scored]


@pytest.fixture
def minimized(score: Callable[..., Scored], task_record: RecordFn) -> MinimizedFn:
    """Scores one patch run, r1, whose grade metadata gives these minimization sizes."""

    def run(
        sizes: Mapping[str, float], subs: Mapping[str, float] = PATCH_ALL, rubric: Rubric = DEFAULT
    ) -> Scored:
        metadata = {"minimization": dict(sizes)}
        return score([task_record("r1", "patch", subs, metadata=metadata)], rubric)

    return run


def test_minimization_recomputed_from_raw_sizes(minimized: MinimizedFn) -> None:
    sizes = {"final_size": 2, "minimal_size": 1}
    result = minimized(sizes, {**PATCH_ALL, "minimization": 0.9})
    minimization = result.component("r1", "minimization")
    # lerp01(2/1, 1, 3) = 1 - (2-1)/(3-1) = 0.5; the stored 0.9 is kept beside it
    assert minimization["subscore"] == pytest.approx(0.5, abs=1e-12)
    assert minimization["stored_subscore"] == 0.9
    run = result.run("r1")
    # weighted = 3 * 0.25 + 0.5 * 0.25 = 0.75 + 0.125 = 0.875
    assert run["score"] == pytest.approx(0.875, abs=1e-12)
    # as graded uses the stored 0.9: 0.75 + 0.9 * 0.25 = 0.75 + 0.225 = 0.975
    assert run["score_as_graded"] == pytest.approx(0.975, abs=1e-12)


def test_minimization_multiple_comes_from_the_rubric(minimized: MinimizedFn) -> None:
    rubric = parse_rubric({"task": {"minimization_multiple": 5.0}})
    result = minimized({"final_size": 2.0, "minimal_size": 1.0}, rubric=rubric)
    # lerp01(2, 1, 5) = 1 - (2-1)/(5-1) = 0.75; score = 0.75 + 0.75 * 0.25 = 0.9375
    assert result.component("r1", "minimization")["subscore"] == pytest.approx(0.75, abs=1e-12)
    assert result.run("r1")["score"] == pytest.approx(0.9375, abs=1e-12)


def test_minimization_needs_both_sizes(minimized: MinimizedFn) -> None:
    result = minimized({"final_size": 2.0}, {**PATCH_ALL, "minimization": 0.9})
    # only final_size: the stored 0.9 is used; 0.75 + 0.9 * 0.25 = 0.975
    assert result.component("r1", "minimization")["subscore"] == 0.9
    assert result.run("r1")["score"] == pytest.approx(0.975, abs=1e-12)


def test_minimization_gated_out_when_patch_fails(minimized: MinimizedFn) -> None:
    sizes = {"final_size": 1.0, "minimal_size": 1.0}
    result = minimized(sizes, {**PATCH_ALL, "patch_verified": 0.0})
    # Seed 000: "they are zero unless the patch verifies"; the gate contributes 0 * 0.25
    assert result.run("r1")["score"] == 0.0
    assert result.component("r1", "minimization")["subscore"] == 1.0
    assert result.component("r1", "minimization")["contribution"] == 0.0


# --- clamping ---------------------------------------------------------------------------------


def test_score_clamps_at_zero(score: Callable[..., Scored], task_record: RecordFn) -> None:
    record = task_record("r1", "patch", PATCH_ALL, penalties={"loss": 1.5})
    run = score([record]).run("r1")
    # 1.0 - 1.5 = -0.5 -> clamp -> 0.0 (penalty_total stays 1.5)
    assert (run["weighted"], run["penalty_total"], run["score"]) == (1.0, 1.5, 0.0)
    assert run["score_as_graded"] == 0.0


def test_unbounded_score_goes_negative(score: Callable[..., Scored], task_record: RecordFn) -> None:
    record = task_record("r1", "patch", PATCH_ALL, penalties={"loss": 1.5}, allow_unbounded=True)
    run = score([record]).run("r1")
    # 1.0 - 1.5 = -0.5, not clamped
    assert run["score"] == pytest.approx(-0.5, abs=1e-12)
    assert run["score_as_graded"] == pytest.approx(-0.5, abs=1e-12)


def test_score_clamps_at_one_unless_unbounded(
    score: Callable[..., Scored], task_record: RecordFn
) -> None:
    weights = dict.fromkeys(PATCH_ALL, 0.5)
    rubric = parse_rubric({"task": {"patch": {"weights": weights}}})
    bounded = task_record("r1", "patch", PATCH_ALL)
    unbounded = task_record("r2", "patch", PATCH_ALL, allow_unbounded=True)
    result = score([bounded, unbounded], rubric)
    # weighted = 4 * (1 * 0.5) = 2.0 -> clamp -> 1.0; unbounded keeps 2.0
    assert result.run("r1")["weighted"] == pytest.approx(2.0, abs=1e-12)
    assert result.run("r1")["score"] == 1.0
    assert result.run("r2")["score"] == pytest.approx(2.0, abs=1e-12)


def test_gated_run_keeps_only_its_penalty(
    score: Callable[..., Scored], task_record: RecordFn
) -> None:
    subs = {**EXPLOIT_ALL, "defect_matching": 0.0}
    record = task_record("r1", "exploit", subs, EXPLOIT_WEIGHTS, penalties={"p": 0.3})
    unbounded = {**record, "run_id": "r2", "grade": {**record["grade"], "allow_unbounded": True}}
    result = score([record, unbounded])
    # weighted = 0 (gate failed); 0 - 0.3 = -0.3 -> clamp 0.0; unbounded -0.3
    assert result.run("r1")["score"] == 0.0
    assert result.run("r2")["score"] == pytest.approx(-0.3, abs=1e-12)


# --- rubric weights vs record weights ---------------------------------------------------------


def test_rubric_weights_and_record_weights_differ(
    score: Callable[..., Scored], task_record: RecordFn
) -> None:
    subs = {"defect_matching": 1.0, "pov_quality": 0.5, "summary_quality": 0.0, "target_calls": 0.0}
    weights = {
        "defect_matching": 0.4,
        "pov_quality": 0.4,
        "summary_quality": 0.1,
        "target_calls": 0.1,
    }
    result = score([task_record("r1", "exploit", subs, weights)])
    run = result.run("r1")
    # rubric: 1*0.6 + 0.5*0.2 = 0.7; as graded: 1*0.4 + 0.5*0.4 = 0.6
    assert run["score"] == pytest.approx(0.7, abs=1e-12)
    assert run["score_as_graded"] == pytest.approx(0.6, abs=1e-12)
    assert run["weighted_as_graded"] == pytest.approx(0.6, abs=1e-12)
    pov = result.component("r1", "pov_quality")
    assert (pov["weight"], pov["weight_as_graded"]) == (0.2, 0.4)
    # 0.5 * 0.2 = 0.1 under the rubric; 0.5 * 0.4 = 0.2 as graded
    assert pov["contribution"] == pytest.approx(0.1, abs=1e-12)
    assert pov["contribution_as_graded"] == pytest.approx(0.2, abs=1e-12)


def test_rubric_weights_override(score: Callable[..., Scored], task_record: RecordFn) -> None:
    rubric = parse_rubric(
        {
            "rubric_id": "heavy-pov",
            "task": {"exploit": {"weights": {"defect_matching": 0.4, "pov_quality": 0.4}}},
        }
    )
    subs = {"defect_matching": 1.0, "pov_quality": 0.5, "summary_quality": 0.0, "target_calls": 0.0}
    result = score([task_record("r1", "exploit", subs, EXPLOIT_WEIGHTS)], rubric)
    # rubric: 1*0.4 + 0.5*0.4 = 0.6; as graded: 1*0.6 + 0.5*0.2 = 0.7
    assert result.run("r1")["score"] == pytest.approx(0.6, abs=1e-12)
    assert result.run("r1")["score_as_graded"] == pytest.approx(0.7, abs=1e-12)
    assert result.run("r1")["rubric_id"] == "heavy-pov"
    assert set(result.components_frame["rubric_id"]) == {"heavy-pov"}


# --- missing and unknown components -----------------------------------------------------------


def test_missing_rubric_component_counts_as_zero(
    score: Callable[..., Scored], task_record: RecordFn
) -> None:
    subs = {"defect_matching": 1.0, "pov_quality": 1.0}
    weights = {"defect_matching": 0.6, "pov_quality": 0.4}
    result = score([task_record("r1", "exploit", subs, weights)])
    run = result.run("r1")
    # rubric: 1*0.6 + 1*0.2 + 0*0.1 + 0*0.1 = 0.8; as graded: 1*0.6 + 1*0.4 = 1.0
    assert run["score"] == pytest.approx(0.8, abs=1e-12)
    assert run["score_as_graded"] == pytest.approx(1.0, abs=1e-12)
    assert run["anomalies"] == [
        "missing_component:summary_quality",
        "missing_component:target_calls",
    ]
    missing = result.component("r1", "summary_quality")
    assert missing["subscore"] == 0.0
    assert missing["stored_subscore"] is None
    assert missing["weight_as_graded"] is None
    assert (missing["in_record"], missing["in_rubric"]) == (False, True)
    assert (missing["contribution"], missing["contribution_as_graded"]) == (0.0, 0.0)


def test_missing_gate_fails_the_gate(score: Callable[..., Scored], task_record: RecordFn) -> None:
    subs = {"pov_quality": 1.0, "summary_quality": 1.0, "target_calls": 1.0}
    weights = {"pov_quality": 0.4, "summary_quality": 0.3, "target_calls": 0.3}
    result = score([task_record("r1", "exploit", subs, weights)])
    run = result.run("r1")
    # no defect_matching: subscore 0 -> gate fails -> everything 0
    assert (run["score"], run["score_as_graded"], run["gate_passed"]) == (0.0, 0.0, False)
    assert run["anomalies"] == [
        "gate_failed_with_nonzero:pov_quality,summary_quality,target_calls",
        "missing_component:defect_matching",
    ]
    assert result.component("r1", "defect_matching")["is_gate"] is True


def test_unknown_record_component_gets_weight_zero(
    score: Callable[..., Scored], task_record: RecordFn
) -> None:
    subs = {**EXPLOIT_ALL, "speed": 1.0}
    weights = {**EXPLOIT_WEIGHTS, "defect_matching": 0.5, "speed": 0.1}
    result = score([task_record("r1", "exploit", subs, weights)])
    run = result.run("r1")
    # rubric: 0.6 + 0.2 + 0.1 + 0.1 + 1*0 = 1.0; as graded 0.5 + 0.2 + 0.1 + 0.1 + 0.1 = 1.0
    assert run["score"] == pytest.approx(1.0, abs=1e-12)
    assert run["score_as_graded"] == pytest.approx(1.0, abs=1e-12)
    assert run["anomalies"] == ["unknown_component:speed"]
    speed = result.component("r1", "speed")
    assert (speed["weight"], speed["weight_as_graded"], speed["in_rubric"]) == (0.0, 0.1, False)
    assert speed["contribution"] == 0.0
    assert speed["contribution_as_graded"] == pytest.approx(0.1, abs=1e-12)


def test_unknown_env_type_scores_zero_without_crashing(
    score: Callable[..., Scored], task_record: RecordFn
) -> None:
    result = score([task_record("r1", "fuzz", {"x": 1.0})])
    run = result.run("r1")
    # weight 0 for every component: 1*0 = 0; ungated, no threshold: passed = (0 > 0) = false
    assert (run["score"], run["gate_component"], run["passed"]) == (0.0, None, False)
    # as graded the record's weight 1.0 still applies: 1*1 = 1
    assert run["score_as_graded"] == 1.0
    assert run["anomalies"] == ["unknown_component:x", "unknown_env_type:fuzz"]


# --- gate anomalies and weight sums -----------------------------------------------------------


def test_non_binary_gate_passes_but_is_flagged(
    score: Callable[..., Scored], task_record: RecordFn
) -> None:
    subs = {**EXPLOIT_ALL, "defect_matching": 0.5}
    run = score([task_record("r1", "exploit", subs, EXPLOIT_WEIGHTS)]).run("r1")
    # 0.5 > 0 passes; 0.5*0.6 + 0.2 + 0.1 + 0.1 = 0.3 + 0.4 = 0.7
    assert run["gate_passed"] is True
    assert run["score"] == pytest.approx(0.7, abs=1e-12)
    assert run["anomalies"] == ["non_binary_gate:0.5"]


def test_weights_not_summing_to_one_are_flagged(
    score: Callable[..., Scored], task_record: RecordFn
) -> None:
    off = {**EXPLOIT_WEIGHTS, "defect_matching": 0.5}
    close = {**EXPLOIT_WEIGHTS, "target_calls": 0.1000005}
    result = score(
        [
            task_record("r1", "exploit", EXPLOIT_ALL, off),
            task_record("r2", "exploit", EXPLOIT_ALL, close),
        ]
    )
    # 0.5 + 0.2 + 0.1 + 0.1 = 0.9, off by 0.1 > 1e-6
    (flag,) = result.run("r1")["anomalies"]
    assert flag.startswith("weights_sum:")
    assert float(flag.split(":", 1)[1]) == pytest.approx(0.9, abs=1e-12)
    # 1.0000005 is within 1e-6 of 1
    assert result.run("r2")["anomalies"] == []


# --- passed -----------------------------------------------------------------------------------


def test_passed_with_failure_threshold(score: Callable[..., Scored], task_record: RecordFn) -> None:
    rubric = parse_rubric({"task": {"failure_threshold": 0.7}})
    high = {"defect_matching": 1.0, "pov_quality": 0.5, "summary_quality": 0.5, "target_calls": 0.0}
    low = {"defect_matching": 1.0, "pov_quality": 0.25, "summary_quality": 0.0, "target_calls": 0.0}
    result = score(
        [
            task_record("high", "exploit", high, EXPLOIT_WEIGHTS),
            task_record("low", "exploit", low, EXPLOIT_WEIGHTS),
            task_record("exact", "audit", {"audit": 0.7}),
            task_record("audit-low", "audit", {"audit": 0.5}),
        ],
        rubric,
    )
    # 0.6 + 0.1 + 0.05 = 0.75 >= 0.7
    assert result.run("high")["passed"] is True
    # 0.6 + 0.25*0.2 = 0.65 < 0.7 although the gate passed
    assert result.run("low")["passed"] is False
    assert result.run("low")["gate_passed"] is True
    # audit 0.7 * 1.0 = 0.7 >= 0.7; 0.5 < 0.7
    assert result.run("exact")["passed"] is True
    assert result.run("audit-low")["passed"] is False


def test_passed_without_threshold_is_the_gate_alone(
    score: Callable[..., Scored], task_record: RecordFn
) -> None:
    subs = {"defect_matching": 1.0, "pov_quality": 0.0, "summary_quality": 0.0, "target_calls": 0.0}
    run = score([task_record("r1", "exploit", subs, EXPLOIT_WEIGHTS, penalties={"p": 1.0})]).run(
        "r1"
    )
    # 0.6 - 1.0 -> clamp 0.0, yet the gate passed and there is no threshold: passed
    assert (run["score"], run["passed"]) == (0.0, True)


def test_threshold_needs_the_gate_too(score: Callable[..., Scored], task_record: RecordFn) -> None:
    rubric = parse_rubric({"task": {"failure_threshold": 0.0}})
    subs = {**EXPLOIT_ALL, "defect_matching": 0.0}
    run = score([task_record("r1", "exploit", subs, EXPLOIT_WEIGHTS)], rubric).run("r1")
    # score 0 >= 0 holds, but the gate failed
    assert run["passed"] is False


# --- grader errors ----------------------------------------------------------------------------


def test_grader_error_has_no_score(score: Callable[..., Scored], task_record: RecordFn) -> None:
    weights = {**EXPLOIT_WEIGHTS, "defect_matching": 0.5}
    record = task_record(
        "r1",
        "exploit",
        EXPLOIT_ALL,
        weights,
        penalties={"p": 0.1},
        env_internal_failure=True,
        env_internal_failure_logs=["sandbox died"],
    )
    result = score([record, task_record("r2", "exploit", EXPLOIT_ALL, EXPLOIT_WEIGHTS)])
    run = result.run("r1")
    assert run["status"] == "grader_error"
    for column in (
        "score",
        "weighted",
        "penalty_total",
        "score_as_graded",
        "weighted_as_graded",
        "passed",
        "gate_passed",
        "gated_out",
    ):
        assert run[column] is None, column
    # flags still describe the record: 0.5 + 0.2 + 0.1 + 0.1 = 0.9
    assert anomaly_codes(run) == ["weights_sum"]
    rows = result.components_frame.filter(pl.col("run_id") == "r1")
    assert rows.height == 4
    assert rows["contribution"].null_count() == 4
    assert rows["contribution_as_graded"].null_count() == 4
    # the other run is unaffected: 1.0
    assert result.run("r2")["status"] == "scored"
    assert result.run("r2")["score"] == pytest.approx(1.0, abs=1e-12)


# --- frame-level behaviour --------------------------------------------------------------------


def test_outputs_sorted_and_streaming_agrees(task_frames: FramesFn, task_record: RecordFn) -> None:
    records = [
        task_record("b", "patch", PATCH_ALL, penalties={"p": 0.2}),
        task_record("a", "audit", {"audit": 0.3}, metadata={"recall": 0.5, "precision": 0.5}),
        task_record("c", "exploit", {**EXPLOIT_ALL, "defect_matching": 0.0}, EXPLOIT_WEIGHTS),
    ]
    frames = task_frames(records)
    result = score_tasks(frames.runs, frames.components, frames.penalties, DEFAULT)
    runs = result.runs.collect()
    assert runs["run_id"].to_list() == ["a", "b", "c"]
    assert runs.equals(result.runs.collect(engine="streaming"))
    assert result.components.collect().equals(result.components.collect(engine="streaming"))


def test_empty_input_gives_empty_typed_frames(task_frames: FramesFn) -> None:
    frames = task_frames([])
    result = score_tasks(frames.runs, frames.components, frames.penalties, DEFAULT)
    runs = result.runs.collect()
    components = result.components.collect()
    assert (runs.height, components.height) == (0, 0)
    assert runs.schema == polars_schema(TaskScore)
    assert components.schema == polars_schema(TaskComponentScore)


def test_missing_input_column_is_named(task_frames: FramesFn, task_record: RecordFn) -> None:
    frames = task_frames([task_record("r1", "audit", {"audit": 1.0})])
    with pytest.raises(ScoringInputError, match=r"runs frame lacks column.*allow_unbounded"):
        score_tasks(
            frames.runs.drop("allow_unbounded"), frames.components, frames.penalties, DEFAULT
        )


def test_components_sorted_by_name_within_run(
    score: Callable[..., Scored], task_record: RecordFn
) -> None:
    # names outside the rubric sort among the rubric's: "aaa" < "defect_matching" < "zzz"
    subs = {**EXPLOIT_ALL, "zzz": 0.5, "aaa": 0.5}
    weights = {**EXPLOIT_WEIGHTS, "zzz": 0.0, "aaa": 0.0}
    result = score(
        [task_record("r2", "exploit", subs, weights), task_record("r1", "audit", {"audit": 1.0})]
    )
    rows = result.components_frame.select("run_id", "component").rows()
    assert rows == [
        ("r1", "audit"),
        ("r2", "aaa"),
        ("r2", "defect_matching"),
        ("r2", "pov_quality"),
        ("r2", "summary_quality"),
        ("r2", "target_calls"),
        ("r2", "zzz"),
    ]
