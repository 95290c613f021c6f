"""pipeline.compare on in-memory frames: pairing, verdicts, the component split, reasons."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.compare import (
    CompareSettings,
    compare_versions,
    failure_reasons,
    gate,
    metrics,
    stats,
    version_history,
)
from pipeline.storage.lake import InputError
from pipeline.warehouse import create_views
from tests.compare_sim import empty_metadata, simulate
from tests.examples import examples

T0 = datetime(2026, 3, 1, tzinfo=UTC)
T1 = T0 + timedelta(days=1)


def run_rows(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Runs from short dicts; unspecified columns take harmless defaults."""
    full = []
    for i, row in enumerate(rows):
        score = row.get("score")
        full.append(
            {
                "run_id": row.get("run_id", f"r{i}"),
                "agent": row.get("agent", "a"),
                "agent_version": row["v"],
                "problem_id": row["p"],
                "env_type": row.get("env", "exploit"),
                "graded_at": row.get("at", T0),
                "status": row.get("status", "scored"),
                "score": score,
                "weighted": row.get("weighted", score),
                "penalty_total": row.get("penalty", 0.0 if score is not None else None),
                "gate_passed": row.get("gate", True if score is not None else None),
                "passed": row.get("passed", None if score is None else score >= 0.5),
                "cost_usd": row.get("cost", 0.1),
                "tokens": row.get("tokens", 1000.0),
                "wall_seconds": row.get("wall", 10.0),
            }
        )
    return pl.DataFrame(
        full,
        schema={
            "run_id": pl.String,
            "agent": pl.String,
            "agent_version": pl.String,
            "problem_id": pl.String,
            "env_type": pl.String,
            "graded_at": pl.Datetime("us", "UTC"),
            "status": pl.String,
            "score": pl.Float64,
            "weighted": pl.Float64,
            "penalty_total": pl.Float64,
            "gate_passed": pl.Boolean,
            "passed": pl.Boolean,
            "cost_usd": pl.Float64,
            "tokens": pl.Float64,
            "wall_seconds": pl.Float64,
        },
    )


def comps_from(runs: pl.DataFrame, component: str = "defect_matching") -> pl.DataFrame:
    return runs.filter(pl.col("status") == "scored").select(
        "run_id",
        component=pl.lit(component),
        contribution=pl.col("weighted"),
        is_gate=pl.lit(True),
    )


def trials(version: str, **scores: list[float]) -> list[dict[str, Any]]:
    """Rows (for ``run_rows``) of ``version``'s scored runs: each problem's trial scores."""
    return [{"v": version, "p": p, "score": x} for p, xs in scores.items() for x in xs]


def compare_rows(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The report comparing agent a's versions 1 and 2 over ``run_rows(rows)``."""
    runs = run_rows(rows)
    return compare_versions(
        runs, comps_from(runs), empty_metadata(), agent="a", baseline="1", candidate="2"
    ).report


def compare_simulated(seed: int, versions: dict[str, Any], **sim: Any) -> dict[str, Any]:
    """The report comparing the simulated agent's first version (``versions``' first key)
    with its second; ``sim``: more options of ``simulate``."""
    runs, comps = simulate(seed=seed, versions=versions, **sim)
    baseline, candidate = list(versions)[:2]
    return compare_versions(
        runs, comps, empty_metadata(), agent="sim-agent", baseline=baseline, candidate=candidate
    ).report


def test_hand_computed_four_problem_comparison_with_trials_averaged() -> None:
    # Baseline trials (mean): p1 0.4,0.6 (0.5); p2 0.5; p3 0.7,0.9 (0.8); p4 0.2
    # Candidate trials (mean): p1 0.6 (0.6); p2 0.7 (0.7); p3 0.8,0.8 (0.8); p4 0.5
    # d = [0.1, 0.2, 0.0, 0.3] → the 4-problem example of test_stats:
    # mean 0.15, SE 0.0645497, t_{0.975,3} 3.182446, interval [-0.0554260, 0.3554260]
    r = compare_rows(
        [
            *trials("1", p1=[0.4, 0.6], p2=[0.5], p3=[0.7, 0.9], p4=[0.2]),
            *trials("2", p1=[0.6], p2=[0.7], p3=[0.8, 0.8], p4=[0.5]),
        ]
    )
    assert r["paired_problems"] == 4
    assert r["method"] == "paired_t"
    assert r["delta"] == pytest.approx(0.15)
    assert r["ci_low"] == pytest.approx(-0.0554260, abs=1e-6)
    assert r["ci_high"] == pytest.approx(0.3554260, abs=1e-6)
    assert r["p_value"] == pytest.approx(0.1027281, abs=1e-6)
    assert r["verdict"] == "no_change"
    assert r["insufficient_data"] is True  # 4 < 5 pairs
    assert "too few to conclude" in r["message"]
    # Pass (mean passed >= 0.5): baseline p1 (0.4 fail, 0.6 pass → 0.5 → passes), p2, p3 pass,
    # p4 fails; candidate all pass → discordant: p4 only (candidate only) → p = 1.0
    assert r["pass_rate_problems_paired"]["baseline"] == pytest.approx(0.75)
    assert r["pass_rate_problems_paired"]["candidate"] == pytest.approx(1.0)
    assert (
        r["pass_rate_problems_paired"]["candidate_only"] == 1
        and r["pass_rate_problems_paired"]["baseline_only"] == 0
    )
    assert r["pass_rate_problems_paired"]["p_value"] == pytest.approx(1.0)


def test_same_scores_over_more_trials_are_no_change() -> None:
    # Three trials of 0.7 average to 0.6999999999999998, one trial to 0.7: every problem's
    # difference is the same -1.1e-16, sd 0, which the t test's limit reads as certain
    # (p 0). It is rounding: the difference is 0, p 1, and the gate passes.
    assert sum([0.7, 0.7, 0.7]) / 3 != 0.7
    problems = {f"p{i}": 0.7 for i in range(6)} | {"q": 0.35}
    r = compare_rows(
        [
            *trials("1", **{p: [x] for p, x in problems.items()}),
            *trials("2", **{p: [x, x, x] for p, x in problems.items()}),
        ]
    )
    assert (r["delta"], r["p_value"], r["verdict"]) == (0.0, 1.0, "no_change")
    assert (r["ci_low"], r["ci_high"]) == (0.0, 0.0)
    assert r["gate"]["fails"] is False
    # the steps of version_regressions and history read the same differences
    table = gate.version_regressions(
        run_rows([*trials("1", p=[0.7]), *trials("2", p=[0.7] * 3)]).lazy(), 0.95
    )
    assert set(table["delta"].to_list()) == {0.0}
    assert set(table["verdict"].to_list()) == {"no_change"}


def test_score_difference_is_zero_only_within_rounding() -> None:
    frame = pl.DataFrame(
        {
            "b_score": [0.7, 0.7, 0.7, 5e12, -3.0, None],
            "c_score": [
                0.6999999999999998,
                0.7000000001,
                0.7 + 2e-12,
                5e12 + 1.0,
                -3.0 + 4e-12,
                0.1,
            ],
        }
    )
    diff = frame.select(metrics.score_difference().alias("d"))["d"].to_list()
    # 2e-16 and 4e-12 (against scale 3: tolerance 3e-12 -> kept) and 1 at 5e12 (tolerance 5):
    # rounding only within 1e-12 of the larger score, at least 1
    assert diff[0] == 0.0
    assert diff[1] == pytest.approx(1e-10)
    assert diff[2] == pytest.approx(2e-12)
    assert diff[3] == 0.0
    assert diff[4] == pytest.approx(4e-12)
    assert diff[5] is None


def test_pairing_ignores_unpaired_problems_and_counts_grader_errors() -> None:
    rows = [
        {"v": "1", "p": "p1", "score": 0.5},
        {"v": "2", "p": "p1", "score": 0.6},
        # a grader error on a paired problem: excluded, counted
        {"v": "2", "p": "p1", "status": "grader_error", "score": None},
        {"v": "1", "p": "p2", "score": 0.5},
        {"v": "2", "p": "p2", "score": 0.7},
        # only the baseline attempted p3; only the candidate p4 and p5
        {"v": "1", "p": "p3", "score": 0.0},
        {"v": "2", "p": "p4", "score": 1.0},
        {"v": "2", "p": "p5", "score": 1.0},
        # p6: the candidate's only trial was a grader error → unpaired, no score
        {"v": "1", "p": "p6", "score": 0.9},
        {"v": "2", "p": "p6", "status": "grader_error", "score": None},
        # same problem id, another env type: a different problem
        {"v": "1", "p": "p1", "env": "patch", "score": 0.1},
        # another agent's runs never count
        {"v": "1", "p": "p7", "agent": "other", "score": 0.0},
        {"v": "2", "p": "p7", "agent": "other", "score": 1.0},
    ]
    r = compare_rows(rows)
    # paired: p1/exploit (+0.1), p2 (+0.2) → delta 0.15
    assert r["paired_problems"] == 2
    assert r["delta"] == pytest.approx(0.15)
    assert r["n_unpaired_baseline"] == 3  # p3, p6, p1/patch
    assert r["n_unpaired_candidate"] == 2  # p4, p5
    assert r["grader_errors"] == {"baseline": 0, "candidate": 2}
    assert r["problems_without_score"] == {"baseline": 0, "candidate": 1}  # p6
    assert r["runs"] == {"baseline": 5, "candidate": 6}


def test_known_regression_found_and_true_difference_in_interval() -> None:
    r = compare_simulated(5, {"1.0": 0.0, "2.0": -0.08}, n_problems=80)
    assert r["verdict"] == "regression"
    assert r["ci_low"] <= -0.08 <= r["ci_high"]
    assert r["bootstrap"]["ci_low"] <= -0.08 <= r["bootstrap"]["ci_high"]
    assert r["p_value"] < 0.001
    assert r["insufficient_data"] is False


def test_env_specific_effects_found_per_env_type() -> None:
    effects = {"exploit": -0.1, "patch": 0.1}
    r = compare_simulated(9, {"1.0": 0.0, "1.1": effects}, n_problems=80)
    per_env = {row["env_type"]: row for row in r["per_env_type"]}
    assert per_env["exploit"]["verdict"] == "regression"
    assert per_env["patch"]["verdict"] == "improvement"
    assert per_env["detect"]["verdict"] == "no_change"
    assert per_env["audit"]["verdict"] == "no_change"
    for env, row in per_env.items():
        true = effects.get(env, 0.0)
        assert row["ci_low"] <= true <= row["ci_high"], env
        assert row["paired_problems"] == 20


def test_aa_comparison_is_no_change() -> None:
    r = compare_simulated(13, {"a": 0.0, "b": 0.0})
    assert r["verdict"] == "no_change"
    assert r["ci_low"] < 0 < r["ci_high"]


def test_aa_false_alarm_rate_of_the_whole_gate() -> None:
    # 400 seeded A/A data sets, stacked as 400 agents in one frame, 4 env types of 10
    # problems each: the gate (overall, and every env type after Holm) reads them all at once.
    reps, problems, trials = 400, 40, 2
    rng = np.random.default_rng(99)
    true = rng.uniform(0.2, 0.8, (reps, problems, 1))
    scores = true + rng.normal(0, 0.15, (2, reps, problems, trials))
    ver, rep, prob, trial = np.indices(scores.shape)
    envs = np.array(["exploit", "detect", "patch", "audit"])
    runs = pl.DataFrame(
        {
            "agent_version": np.where(ver.ravel() == 0, "A", "B"),
            "agent": rep.ravel().astype(str),
            "problem_id": prob.ravel().astype(str),
            "env_type": envs[prob.ravel() % 4],
            "trial": trial.ravel(),
            "score": scores.ravel(),
        }
    ).with_columns(
        graded_at=pl.when(pl.col("agent_version") == "A")
        .then(pl.lit(T0))
        .otherwise(pl.lit(T0 + timedelta(days=1))),
        status=pl.lit("scored"),
        passed=pl.col("score") >= 0.5,
    )
    table = gate.version_regressions(runs.lazy(), stats.DEFAULT_CONFIDENCE)
    assert table.filter(pl.col("env_type") == "all").height == reps
    assert set(table["holm_family"].unique().to_list()) == {1, 4}
    fails = gate.gate_fails(table)
    assert fails.height == reps
    overall = table.filter(pl.col("env_type") == "all")
    envs_only = table.filter(pl.col("env_type") != "all")
    overall_rate = float((overall["verdict"] == "regression").mean())  # type: ignore[arg-type]
    env_rate = float(
        envs_only.group_by("agent")
        .agg((pl.col("gate_verdict") == "regression").any())["gate_verdict"]
        .mean()  # type: ignore[arg-type]
    )
    whole = float(fails["fails"].mean())  # type: ignore[arg-type]
    # Each part alone is about 2.5% (one tail); the whole gate stays at or below 5%.
    assert overall_rate < 0.05 and env_rate < 0.05
    assert max(overall_rate, env_rate) <= whole <= 0.05
    # Without Holm the four env tests alone would alarm more often than with it.
    raw_rate = float(
        envs_only.group_by("agent").agg((pl.col("verdict") == "regression").any())["verdict"].mean()  # type: ignore[arg-type]
    )
    assert raw_rate >= env_rate


def test_component_split_adds_up_to_change_in_weighted() -> None:
    r = compare_simulated(21, {"1.0": 0.0, "1.1": {"detect": -0.2}})
    total = sum(c["delta"] for c in r["components"])
    assert total == pytest.approx(r["decomposition"]["delta_weighted"], abs=1e-12)
    assert r["decomposition"]["components_sum"] == pytest.approx(total, abs=1e-15)
    # no penalties, no clamping here: the split explains the whole score change
    assert r["decomposition"]["clamp_effect"] == pytest.approx(0.0, abs=1e-12)
    worst = min(r["components"], key=lambda c: c["delta"])
    assert worst["component"] in {"defect_matching", "summary_quality"}


@pytest.mark.slow
@settings(max_examples=examples(25), deadline=None)
@given(st.integers(0, 2**31), st.integers(2, 12), st.integers(1, 4))
def test_component_split_adds_up_exactly_for_ragged_components(
    seed: int, problems: int, trials: int
) -> None:
    """Components missing from some trials, uneven trial counts, grader errors: still exact."""
    rng = np.random.default_rng(seed)
    n = 2 * problems * trials
    runs = pl.DataFrame(
        {
            "run_id": [f"r{i}" for i in range(n)],
            "agent": "a",
            "agent_version": np.repeat(["b", "c"], problems * trials),
            "problem_id": np.tile(np.repeat([f"p{i}" for i in range(problems)], trials), 2),
            "env_type": "exploit",
            "graded_at": T0,
            "status": np.where(rng.uniform(size=n) < 0.15, "grader_error", "scored"),
            "penalty_total": 0.0,
            "gate_passed": True,
            "passed": True,
            "cost_usd": 0.1,
            "tokens": 1.0,
            "wall_seconds": 1.0,
        }
    )
    names = np.array(["defect_matching", "pov_quality", "summary_quality", "target_calls"])
    cells = pl.DataFrame(
        {
            "run_id": np.repeat(runs["run_id"].to_numpy(), len(names)),
            "component": np.tile(names, n),
            "contribution": rng.uniform(0, 0.3, n * len(names)),
            "keep": rng.uniform(size=n * len(names)) < 0.7,
            "is_gate": np.tile(names == "defect_matching", n),
        }
    ).filter("keep")
    weighted = cells.group_by("run_id").agg(weighted=pl.col("contribution").sum())
    runs = (
        runs.join(weighted, on="run_id", how="left")
        .with_columns(pl.col("weighted").fill_null(0.0))
        .with_columns(
            score=pl.when(pl.col("status") == "scored").then(pl.col("weighted")),
        )
    )
    r = compare_versions(
        runs, cells.drop("keep"), empty_metadata(), agent="a", baseline="b", candidate="c"
    ).report
    if r["paired_problems"] == 0:
        return
    total = sum(c["delta"] for c in r["components"])
    assert total == pytest.approx(r["decomposition"]["delta_weighted"], abs=1e-12)
    assert r["delta"] == pytest.approx(r["decomposition"]["delta_weighted"], abs=1e-12)


def _regression_fixture() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    rows = [
        # gate failed in the candidate
        {"v": "1", "p": "gate", "run_id": "b-gate", "score": 0.9, "weighted": 0.9},
        {"v": "2", "p": "gate", "run_id": "c-gate", "score": 0.0, "weighted": 0.0, "gate": False},
        # pov_quality dropped
        {"v": "1", "p": "pov", "run_id": "b-pov", "score": 0.8, "weighted": 0.8},
        {"v": "2", "p": "pov", "run_id": "c-pov", "score": 0.65, "weighted": 0.65},
        # nothing dropped but a penalty
        {"v": "1", "p": "pen", "run_id": "b-pen", "score": 0.7, "weighted": 0.7},
        {"v": "2", "p": "pen", "run_id": "c-pen", "score": 0.5, "weighted": 0.7, "penalty": 0.2},
        # audit: reasons are top-level metadata
        {"v": "1", "p": "aud", "env": "audit", "run_id": "b-aud", "score": 0.5},
        {"v": "2", "p": "aud", "env": "audit", "run_id": "c-aud", "score": 0.25},
        # improved: never listed
        {"v": "1", "p": "up", "run_id": "b-up", "score": 0.2},
        {"v": "2", "p": "up", "run_id": "c-up", "score": 0.9},
    ]
    runs = run_rows(rows)
    comps = pl.DataFrame(
        [
            ("b-gate", "defect_matching", 0.6, True),
            ("b-gate", "pov_quality", 0.3, False),
            ("c-gate", "defect_matching", 0.0, True),
            ("c-gate", "pov_quality", 0.0, False),
            ("b-pov", "defect_matching", 0.6, True),
            ("b-pov", "pov_quality", 0.2, False),
            ("c-pov", "defect_matching", 0.6, True),
            ("c-pov", "pov_quality", 0.05, False),
            ("b-pen", "defect_matching", 0.7, True),
            ("c-pen", "defect_matching", 0.7, True),
            ("b-aud", "audit", 0.5, False),
            ("c-aud", "audit", 0.25, False),
            ("b-up", "defect_matching", 0.2, True),
            ("c-up", "defect_matching", 0.9, True),
        ],
        schema={
            "run_id": pl.String,
            "component": pl.String,
            "contribution": pl.Float64,
            "is_gate": pl.Boolean,
        },
        orient="row",
    )
    meta = pl.DataFrame(
        [
            ("c-gate", "defect_matching.reason", '"crashed in parse_header, not the target"'),
            ("c-gate", "defect_matching.expected", '"CWE-787"'),
            ("c-gate", "pov_quality.skipped", '"gated: defect not matched"'),
            ("c-pov", "pov_quality.input_bytes", "4096"),
            ("c-pov", "pov_quality.reference_bytes", "512"),
            ("c-aud", "recall", "0.5"),
            ("c-aud", "precision", "0.5"),
            ("c-aud", "missed", '["D-12"]'),
            ("c-aud", "missed[0]", '"D-12"'),
            ("c-aud", "found[0]", '"D-3"'),
            ("c-aud", "nested.deep", '"not shown"'),
        ],
        schema={"run_id": pl.String, "key": pl.String, "value": pl.String},
        orient="row",
    )
    return runs, comps, meta


def test_regressed_problems_name_the_failing_component_and_its_reason() -> None:
    runs, comps, meta = _regression_fixture()
    r = compare_versions(runs, comps, meta, agent="a", baseline="1", candidate="2").report
    reg = {row["problem_id"]: row for row in r["regressed_problems"]}
    assert list(reg) == ["gate", "aud", "pen", "pov"]  # most regressed first
    assert reg["gate"]["failing_kind"] == "gate"
    assert reg["gate"]["failing_component"] == "defect_matching"
    assert reg["gate"]["failing_reason"] == "crashed in parse_header, not the target"
    assert reg["gate"]["baseline_contribution"] == pytest.approx(0.6)
    assert reg["gate"]["candidate_contribution"] == pytest.approx(0.0)
    assert reg["pov"]["failing_component"] == "pov_quality"
    assert reg["pov"]["failing_reason"] == "input_bytes=4096; reference_bytes=512"
    assert reg["pen"]["failing_kind"] == "penalty"
    assert reg["pen"]["failing_reason"] == "penalty_total rose from 0.0 to 0.2"
    assert reg["aud"]["failing_component"] == "audit"
    # seed order first; the whole list `missed` stands for its items; `nested.deep` is not top
    assert (
        reg["aud"]["failing_reason"] == 'recall=0.5; precision=0.5; missed=["D-12"]; found[0]=D-3'
    )
    assert "up" not in reg


def test_a_list_over_the_metadata_limit_is_told_by_its_items() -> None:
    # run_metadata keeps no text for a list over 1 MiB (null): the reason had read
    # "missed=null", as though nothing was missed; its items say what it held.
    runs, comps, meta = _regression_fixture()
    meta = meta.with_columns(
        value=pl.when((pl.col("run_id") == "c-aud") & (pl.col("key") == "missed"))
        .then(None)
        .otherwise(pl.col("value"))
    )
    r = compare_versions(runs, comps, meta, agent="a", baseline="1", candidate="2").report
    reg = {row["problem_id"]: row for row in r["regressed_problems"]}
    assert reg["aud"]["failing_reason"] == "recall=0.5; precision=0.5; missed[0]=D-12; found[0]=D-3"


def test_a_list_kept_whole_below_a_list_over_the_limit_is_told_once() -> None:
    # missed is over 1 MiB (no text), its item missed[0] a list kept whole: the reason had
    # said that list and its items again (missed[0][0]=D-12; missed[0][1]=D-13), each item
    # matched to the outermost list, which has no text, not to the list it is in.
    runs, comps, meta = _regression_fixture()
    nested = pl.DataFrame(
        [
            ("c-aud", "missed[0]", '["D-12","D-13"]'),
            ("c-aud", "missed[0][0]", '"D-12"'),
            ("c-aud", "missed[0][1]", '"D-13"'),
        ],
        schema=meta.schema,
        orient="row",
    )
    meta = pl.concat(
        [
            meta.filter((pl.col("run_id") != "c-aud") | ~pl.col("key").str.starts_with("missed")),
            pl.DataFrame([("c-aud", "missed", None)], schema=meta.schema, orient="row"),
            nested,
        ]
    )
    r = compare_versions(runs, comps, meta, agent="a", baseline="1", candidate="2").report
    reg = {row["problem_id"]: row for row in r["regressed_problems"]}
    assert reg["aud"]["failing_reason"] == (
        'recall=0.5; precision=0.5; missed[0]=["D-12","D-13"]; found[0]=D-3'
    )


def test_top_regressed_is_limited() -> None:
    runs, comps = simulate(seed=3, versions={"1": 0.0, "2": -0.2})
    result = compare_versions(
        runs,
        comps,
        empty_metadata(),
        agent="sim-agent",
        baseline="1",
        candidate="2",
        settings=CompareSettings(top_regressed=3, bootstrap_resamples=200),
    )
    deltas = [row["delta"] for row in result.report["regressed_problems"]]
    assert len(deltas) == 3 and deltas == sorted(deltas)
    assert deltas[0] == pytest.approx(result.pairs["delta"].min())


def test_failure_reasons_prefers_reason_like_keys() -> None:
    regressed = pl.DataFrame(
        {
            "candidate_run_id": ["x"],
            "failing_component": ["patch_verified"],
            "failing_kind": ["gate"],
            "baseline_penalty": [0.0],
            "candidate_penalty": [0.0],
            "delta": [-1.0],
        }
    )
    meta = pl.DataFrame(
        {
            "run_id": ["x", "x", "x", "x"],
            "key": [
                "patch_verified.tests_failed",
                "patch_verified.status",
                "patch_verified.reason",
                "patch_verified_extra.reason",
            ],
            "value": ["3", '"failed"', '"2 regression tests fail"', '"wrong prefix"'],
        }
    )
    out = failure_reasons(regressed, meta.lazy())
    assert out["failing_reason"].to_list() == ["2 regression tests fail"]


def test_cost_per_run_next_to_score() -> None:
    rows = [
        {"v": "1", "p": "p1", "score": 0.5, "cost": 0.10},
        {"v": "1", "p": "p1", "score": 0.5, "cost": 0.20},
        {"v": "1", "p": "p2", "score": 0.5, "cost": None},
        {"v": "2", "p": "p1", "score": 0.9, "cost": 0.50},
        {"v": "2", "p": "p2", "score": 0.9, "cost": 0.70},
    ]
    runs = run_rows(rows)
    cost = compare_versions(
        runs, comps_from(runs), None, agent="a", baseline="1", candidate="2"
    ).report["cost"]
    # baseline: (0.10 + 0.20) / 2 runs with a cost = 0.15; candidate (0.5 + 0.7) / 2 = 0.6
    assert cost["baseline"]["cost_usd"] == pytest.approx(0.15)
    assert cost["baseline"]["runs"] == 3 and cost["baseline"]["runs_with_cost"] == 2
    assert cost["candidate"]["cost_usd"] == pytest.approx(0.6)
    assert cost["delta_cost_usd"] == pytest.approx(0.45)
    assert cost["candidate"]["score_per_run"] == pytest.approx(0.9)


def test_nothing_paired_is_said_plainly() -> None:
    runs = run_rows([{"v": "1", "p": "p1", "score": 0.5}, {"v": "2", "p": "p2", "score": 0.5}])
    r = compare_versions(runs, comps_from(runs), None, agent="a", baseline="1", candidate="2")
    rep = r.report
    assert rep["paired_problems"] == 0 and rep["verdict"] == "no_change"
    assert rep["delta"] is None and rep["ci_low"] is None
    assert rep["insufficient_data"] is True
    assert "nothing to compare" in rep["message"]
    # The verdict is the contract's; the gate does not pass what it could not measure.
    assert rep["gate"]["fails"] is True
    assert "nothing measured: 0 paired problem(s), an interval needs 2" in rep["gate"]["message"]


def test_one_paired_problem_fails_the_gate_and_two_can_pass() -> None:
    one = run_rows([{"v": "1", "p": "p1", "score": 0.5}, {"v": "2", "p": "p1", "score": 0.5}])
    rep = compare_versions(
        one, comps_from(one), None, agent="a", baseline="1", candidate="2"
    ).report
    assert (rep["paired_problems"], rep["verdict"], rep["gate"]["fails"]) == (1, "no_change", True)
    two = run_rows(
        [{"v": v, "p": p, "score": s} for v in ("1", "2") for p, s in (("p1", 0.4), ("p2", 0.6))]
    )
    rep = compare_versions(
        two, comps_from(two), None, agent="a", baseline="1", candidate="2"
    ).report
    assert (rep["paired_problems"], rep["verdict"], rep["gate"]["fails"]) == (2, "no_change", False)


def test_missing_column_is_named() -> None:
    runs = run_rows([{"v": "1", "p": "p1", "score": 0.5}]).drop("weighted")
    with pytest.raises(InputError, match=r"task_runs is missing column.*weighted"):
        compare_versions(
            runs,
            comps_from(runs.with_columns(weighted=pl.lit(0.5))),
            None,
            agent="a",
            baseline="1",
            candidate="1",
        )


def test_history_orders_by_first_graded_run_with_paired_steps() -> None:
    # "10.0" sorts before "9.0" as text; graded order decides.
    runs, _ = simulate(seed=4, versions={"9.0": 0.0, "10.0": -0.1, "11.0": -0.1})
    rows = version_history(runs, agent="sim-agent")
    assert [r["agent_version"] for r in rows] == ["9.0", "10.0", "11.0"]
    assert rows[0]["step"] is None
    assert rows[1]["step"]["previous_version"] == "9.0"
    assert rows[1]["step"]["verdict"] == "regression"
    assert rows[2]["step"]["verdict"] == "no_change"
    for r in rows:
        assert r["mean_score_problems_ci_low"] < r["mean_score_problems"]
        assert r["mean_score_problems"] < r["mean_score_problems_ci_high"]
        assert r["problems"] == 60 and r["runs"] == 180
        assert r["ci_methods"]["mean_score_problems"] == "t_over_problems"
    # each step carries the gate: per env type, Holm over the 4 env types
    assert rows[1]["step"]["gate"]["holm_env_types"] == 4
    assert len(rows[1]["step"]["per_env_type"]) == 4


def _version_history_view(runs: pl.DataFrame) -> pl.DataFrame:
    con = duckdb.connect()
    try:
        con.register("task_runs", runs)
        create_views(con, ["version_history"], given=["task_runs"])
        frame = con.sql("select * from version_history order by agent, version_index").pl()
        assert isinstance(frame, pl.DataFrame)
        return frame
    finally:
        con.close()


def test_version_history_view_matches_the_python_history() -> None:
    runs, _ = simulate(seed=8, n_problems=40, versions={"b": 0.0, "a": 0.15, "c": 0.15})
    grader_error = runs.head(1).with_columns(
        status=pl.lit("grader_error"), score=None, run_id=pl.lit("err"), passed=None
    )
    runs = pl.concat([runs, grader_error])
    view = _version_history_view(runs)
    py = version_history(runs, agent="sim-agent")
    assert view["agent_version"].to_list() == ["b", "a", "c"]
    assert view["previous_version"].to_list() == [None, "b", "a"]
    assert view["grader_errors"].to_list() == [1, 0, 0]
    for i, row in enumerate(view.to_dicts()):
        for metric in ("mean_score_problems", "pass_rate_problems", "mean_score_runs"):
            assert row[metric] == pytest.approx(py[i][metric], abs=1e-12), metric
        for bound in ("pass_rate_problems_ci_high", "pass_rate_runs_ci_low"):
            assert row[bound] == pytest.approx(py[i][bound], abs=1e-12), bound
        low = "mean_score_problems_ci_low"
        assert row[low] == pytest.approx(py[i][low], abs=1e-12)
    assert view["step_verdict_approx"].to_list() == [None, "improvement", "no_change"]


def test_version_history_step_without_scores_has_no_verdict() -> None:
    # version 2's every run is a grader error: no mean, no step, so no verdict (not no_change);
    # its pass-rate intervals are null too, not [0, 1]
    rows = [
        *({"v": "1", "p": f"p{i}", "score": 0.5 + i / 10, "at": T0} for i in range(3)),
        *(
            {"v": "2", "p": f"p{i}", "status": "grader_error", "score": None, "at": T1}
            for i in range(3)
        ),
    ]
    view = _version_history_view(run_rows(rows)).to_dicts()
    assert [row["step_verdict_approx"] for row in view] == [None, None]
    assert view[1]["step_delta"] is None
    assert view[1]["pass_rate_runs_ci_low"] is None
    assert view[1]["pass_rate_problems_ci_high"] is None


@pytest.mark.slow
def test_version_history_view_t_critical_values() -> None:
    # n problems with scores 0 and 1 alternating: sd known, so ci width / se = t_{n-1}.
    from scipy import stats as sps

    for n in (2, 5, 31, 32, 200):
        rows = [
            {"v": "1", "p": f"p{i}", "score": float(i % 2), "at": T0 + timedelta(seconds=i)}
            for i in range(n)
        ]
        view = _version_history_view(run_rows(rows))
        row = view.row(0, named=True)
        crit = (row["mean_score_problems_ci_high"] - row["mean_score_problems"]) / row["score_se"]
        assert crit == pytest.approx(sps.t.ppf(0.975, n - 1), abs=1e-12), n


def test_t975_macro_is_scipys_quantile() -> None:
    # the table (df 1..100) and the expansion beyond it, against scipy.stats.t.ppf
    from scipy import stats as sps

    con = duckdb.connect()
    try:
        create_views(con, [], given=[])
        rows = con.execute(
            "select df, t975(df) from range(0, 5001) as r(df) order by df"
        ).fetchall()
        lows = con.execute("select wilson_low(null, 0), wilson_high(null, 0), wilson_low(0.5, 0)")
        assert lows.fetchone() == (None, None, None)
    finally:
        con.close()
    assert rows[0] == (0, None)
    for df, value in rows[1:]:
        assert value == pytest.approx(sps.t.ppf(0.975, df), abs=1e-12), df


def test_wilson_matches_hand_arithmetic() -> None:
    # 2 of 4, z = 1.96: centre 0.5 + 1.96²/8 = 0.9802, half 1.96·√(0.25/4 + 1.96²/64)
    # = 0.686070, scale 1 + 1.96²/4 = 1.9604: (0.150036, 0.849964). 0 of 10: the low end
    # is 0 and the high (1.96²/20 + 1.96·√(1.96²/400)) / (1 + 1.96²/10) = 0.277540.
    # No trial: no interval.
    low, high = metrics.wilson([0.5, 0.0, 0.5], [4, 10, 0], 1.96)
    assert low[:2] == pytest.approx([0.150036, 0.0], abs=1e-6)
    assert high[:2] == pytest.approx([0.849964, 0.277540], abs=1e-6)
    assert np.isnan(low[2]) and np.isnan(high[2])


@given(st.integers(1, 500), st.data())
@settings(max_examples=examples(200), deadline=None)
def test_wilson_holds_the_rate_inside_0_1(n: int, data: st.DataObject) -> None:
    k = data.draw(st.integers(0, n))
    p = k / n
    low, high = metrics.wilson([p], [n], metrics.z_value(0.95))
    assert 0.0 <= low[0] <= p <= high[0] <= 1.0
    if k == n:
        assert high[0] == 1.0
    if k == 0:
        assert low[0] == 0.0


def test_by_agent_view_matches_the_python_metrics() -> None:
    """The warehouse's by_agent and compare's version_metrics are the same metrics written
    twice (SQL for analysts, numpy for compare's bit-stable documents): every count, mean,
    rate and interval agrees, grader errors and a failing threshold included."""
    runs, _ = simulate(seed=5, n_problems=30, versions={"1.0": 0.0, "2.0": -0.1})
    grader_errors = runs.head(2).with_columns(
        status=pl.lit("grader_error"), score=None, passed=None, run_id=pl.Series(["e1", "e2"])
    )
    runs = pl.concat([runs, grader_errors])
    by = ["agent", "agent_version", "env_type"]
    con = duckdb.connect()
    try:
        con.register("task_runs", runs)
        create_views(con, ["by_agent"], given=["task_runs"])
        view = con.sql("select * from by_agent order by all").pl().sort(by)
    finally:
        con.close()
    py = metrics.version_metrics(runs, by)
    assert view.height == py.height > 1
    assert view["grader_errors"].sum() == 2
    for column in (c for c in py.columns if c not in by):
        if py[column].dtype.is_integer():
            assert view[column].to_list() == py[column].to_list(), column
        elif column.startswith("mean_score_") and column.endswith(("_ci_low", "_ci_high")):
            # the view's t table is rounded to 6 decimals
            assert view[column].to_list() == pytest.approx(py[column].to_list(), abs=1e-6), column
        else:
            assert view[column].to_list() == pytest.approx(py[column].to_list(), abs=1e-12), column
