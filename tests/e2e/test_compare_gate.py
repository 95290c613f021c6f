"""The release gate from the user's side: a regression hidden in one env type, the A/A
pair, Holm by hand, the version_regressions view against compare --json, and one pass
rate per name across by_agent, compare and history."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.compare import gate
from pipeline.jobs import commands as jobs
from pipeline.rubric import parse_rubric
from pipeline.warehouse import connect_read_only

runner = CliRunner()
N_PROBLEMS = 50
PATCH_WEIGHTS = {
    "patch_verified": 0.25,
    "number_of_attempts": 0.25,
    "size_of_patch": 0.25,
    "minimization": 0.25,
}
DETECT_WEIGHTS = {
    "defect_matching": 0.6,
    "pov_quality": 0.2,
    "summary_quality": 0.1,
    "target_calls": 0.1,
}
# patch score = 0.25 + 0.75 q: q falls by 0.2933 -> score falls by 0.22.
PATCH_Q = (0.70, 0.70 - 0.22 / 0.75)
# detect score = 0.6 + 0.4 q: q rises by 0.6 -> score rises by 0.24.
DETECT_Q = (0.20, 0.80)


def _grades(
    version: str, day: int, env: str, q_mean: float, seed: int, trials: int = 2
) -> pl.DataFrame:
    """Gate passed; the other subscores share one quality q per trial (noise sd 0.03)."""
    rng = np.random.default_rng(seed)
    q = np.clip(q_mean + rng.normal(0, 0.03, (N_PROBLEMS, trials)), 0, 1)
    problem, trial = np.indices(q.shape)
    weights = PATCH_WEIGHTS if env == "patch" else DETECT_WEIGHTS
    gate_name = "patch_verified" if env == "patch" else "defect_matching"
    others = [c for c in weights if c != gate_name]
    return pl.DataFrame(
        {"problem": problem.ravel(), "trial": trial.ravel(), "q": q.ravel()}
    ).select(
        run_id=pl.format("{}-{}-{}-{}", pl.lit(version), pl.lit(env), "problem", "trial"),
        agent=pl.lit("gate-agent"),
        agent_version=pl.lit(version),
        problem_id=pl.format("{}-{}", pl.lit(env), "problem"),
        env_type=pl.lit(env),
        graded_at=pl.lit(f"2026-04-{day:02d}T10:00:00+00:00"),
        trial=pl.col("trial"),
        grade=pl.struct(
            subscores=pl.struct(
                pl.lit(1.0).alias(gate_name), *(pl.col("q").alias(c) for c in others)
            ),
            weights=pl.struct(**{k: pl.lit(v) for k, v in weights.items()}),
        ),
    )


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gate")
    inputs = root / "in"
    inputs.mkdir()
    frames = [
        _grades("1.0", 1, "patch", PATCH_Q[0], 1),
        _grades("1.0", 1, "detect", DETECT_Q[0], 2),
        _grades("1.0-rerun", 2, "patch", PATCH_Q[0], 3),
        _grades("1.0-rerun", 2, "detect", DETECT_Q[0], 4),
        _grades("2.0", 3, "patch", PATCH_Q[1], 5),
        _grades("2.0", 3, "detect", DETECT_Q[1], 6),
    ]
    for i, frame in enumerate(frames):  # patch and detect grades have different subscores
        frame.write_ndjson(inputs / f"grades-{i}.jsonl")
    out = root / "lake"
    done = runner.invoke(app, ["run", str(inputs), "--lake", str(out)])
    assert done.exit_code == 0, done.output
    return out


def _strict_json(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise AssertionError(f"non-finite number {constant} in JSON")

    return json.loads(text, parse_constant=refuse)


def _compare(lake: Path, baseline: str, candidate: str, *extra: str) -> Any:
    args = ["compare", "--agent", "gate-agent", "--baseline", baseline]
    return runner.invoke(app, [*args, "--candidate", candidate, "--lake", str(lake), *extra])


@pytest.mark.slow
def test_regression_hidden_in_one_env_type_fails_the_gate(lake: Path, tmp_path: Path) -> None:
    done = _compare(lake, "1.0", "2.0", "--json")
    assert done.exit_code == 0, done.output
    report = _strict_json(done.stdout)
    assert report["paired_problems"] == 2 * N_PROBLEMS
    assert report["verdict"] == "no_change"  # +0.24 and -0.22 cancel out overall
    per_env = {row["env_type"]: row for row in report["per_env_type"]}
    assert per_env["patch"]["delta"] == pytest.approx(-0.22, abs=0.02)
    assert per_env["patch"]["p_value"] < 0.001
    assert per_env["detect"]["delta"] > 0.2
    # Holm over 2 env types: the smaller p doubled, the larger kept (or raised to it).
    ps = sorted((row["p_value"], env) for env, row in per_env.items())
    assert per_env[ps[0][1]]["p_value_holm"] == pytest.approx(min(1.0, 2 * ps[0][0]))
    assert per_env[ps[1][1]]["p_value_holm"] == pytest.approx(max(min(1.0, 2 * ps[0][0]), ps[1][0]))
    assert report["regressed_env_types"] == ["patch"]
    assert per_env["patch"]["gate_verdict"] == "regression"
    assert per_env["detect"]["gate_verdict"] == "improvement"
    assert report["gate"]["fails"] is True
    assert report["gate"]["correction"] == "holm" and report["gate"]["holm_env_types"] == 2

    page = tmp_path / "cmp.html"
    gated = _compare(lake, "1.0", "2.0", "--fail-on-regression", "--html", str(page))
    assert gated.exit_code == 1
    flat = " ".join(gated.stdout.split())
    assert "gate FAILS" in flat and "patch" in flat and "Holm over 2 env types" in flat
    headline = page.read_text().split("</h1>")[0]
    assert "no_change" in headline and "patch: regression" in headline


@pytest.mark.slow
def test_aa_pair_passes_the_whole_gate(lake: Path) -> None:
    done = _compare(lake, "1.0", "1.0-rerun", "--json", "--fail-on-regression")
    assert done.exit_code == 0, done.output
    report = _strict_json(done.stdout)
    assert report["regressed_env_types"] == []
    assert report["gate"]["fails"] is False


@pytest.mark.slow
def test_history_shows_env_regressions_beside_the_verdict(lake: Path) -> None:
    done = runner.invoke(app, ["history", "--agent", "gate-agent", "--lake", str(lake), "--json"])
    assert done.exit_code == 0, done.output
    versions = _strict_json(done.stdout)["versions"]
    assert [v["agent_version"] for v in versions] == ["1.0", "1.0-rerun", "2.0"]
    step = versions[2]["step"]
    assert step["previous_version"] == "1.0-rerun"
    assert step["verdict"] == "no_change" and step["regressed_env_types"] == ["patch"]
    assert step["gate"]["fails"] is True
    table = runner.invoke(app, ["history", "--agent", "gate-agent", "--lake", str(lake)])
    assert table.exit_code == 0
    assert "patch" in table.stdout and "Holm" in " ".join(table.stdout.split())


@pytest.mark.slow
def test_version_regressions_view_holds_compare_numbers(lake: Path) -> None:
    report = _strict_json(_compare(lake, "1.0-rerun", "2.0", "--json").stdout)
    con = connect_read_only(lake)
    try:
        frame = con.sql(
            "select * from version_regressions where agent = 'gate-agent' "
            "and baseline = '1.0-rerun' and candidate = '2.0'"
        ).pl()
        pairs = con.sql(
            "select distinct baseline, candidate from version_regressions order by baseline"
        ).fetchall()
    finally:
        con.close()
    assert pairs == [("1.0", "1.0-rerun"), ("1.0-rerun", "2.0")]  # consecutive only
    rows = {row["env_type"]: row for row in frame.to_dicts()}
    assert set(rows) == {"all", "patch", "detect"}
    expected = {"all": report, **{row["env_type"]: row for row in report["per_env_type"]}}
    for env, want in expected.items():
        got = rows[env]
        assert got["paired_problems"] == want["paired_problems"]
        assert got["verdict"] == want["verdict"]
        for column in ("delta", "ci_low", "ci_high", "p_value"):
            assert got[column] == pytest.approx(want[column], rel=1e-12, abs=1e-15), (env, column)
        # the overall row is its own family: not corrected
        holm = want["p_value"] if env == "all" else want["p_value_holm"]
        assert got["p_value_holm"] == pytest.approx(holm, rel=1e-12, abs=1e-15), env
        assert got["gate_fails"] is report["gate"]["fails"]
    assert rows["patch"]["gate_verdict"] == "regression"


@pytest.mark.slow
def test_version_regressions_follow_a_rubric_change(lake: Path, tmp_path: Path) -> None:
    # A rubric that weighs only the gate: every patch run scores 0.25 + 0 alike, so the
    # patch regression disappears from compare and from the view in the same commit.
    copy = tmp_path / "lake"
    done = runner.invoke(app, ["run", str(lake.parent / "in"), "--lake", str(copy)])
    assert done.exit_code == 0, done.output
    rubric = tmp_path / "gate-only.toml"
    rubric.write_text(
        "[task.patch]\nweights = { patch_verified = 1.0, number_of_attempts = 0.0, "
        "size_of_patch = 0.0, minimization = 0.0 }\n"
    )
    done = runner.invoke(app, ["score", "--lake", str(copy), "--rubric", str(rubric)])
    assert done.exit_code == 0, done.output
    report = _strict_json(_compare(copy, "1.0-rerun", "2.0", "--json").stdout)
    assert report["regressed_env_types"] == []
    con = connect_read_only(copy)
    try:
        row = con.execute(
            "select delta, verdict from version_regressions where env_type = 'patch' "
            "and baseline = '1.0-rerun'"
        ).fetchone()
    finally:
        con.close()
    assert row is not None
    assert row[0] == pytest.approx(0.0, abs=1e-12) and row[1] == "no_change"


def test_holm_by_hand() -> None:
    # Family a (k = 4): sorted 0.005, 0.01, 0.03, 0.04 -> 4·0.005 = 0.02, 3·0.01 = 0.03,
    # 2·0.03 = 0.06, max(0.06, 1·0.04) = 0.06. Family b: one p-value and one null.
    frame = pl.DataFrame(
        {
            "family": ["a", "a", "a", "a", "b", "b"],
            "p": [0.01, 0.04, 0.03, 0.005, 0.2, None],
        }
    ).sort(["family", "p"], nulls_last=True)
    got = frame.with_columns(gate.holm_adjusted("p", ["family"]))
    by_p = dict(zip(got["p"].to_list(), got["p_value_holm"].to_list(), strict=True))
    assert by_p[0.005] == pytest.approx(0.02)
    assert by_p[0.01] == pytest.approx(0.03)
    assert by_p[0.03] == pytest.approx(0.06)
    assert by_p[0.04] == pytest.approx(0.06)
    assert by_p[0.2] == pytest.approx(0.2)
    assert by_p[None] is None
    assert got["holm_family"].to_list() == [4, 4, 4, 4, 1, 1]


@pytest.mark.slow
def test_one_pass_rate_per_name_on_the_sample(sample_lake: Path) -> None:
    # The session's lake is `run` over data/sample, what `make run` (no INPUT) reads.
    lake = sample_lake
    pair = ["--baseline", "1.3.0", "--candidate", "1.4.0"]
    cmp_ = runner.invoke(app, ["compare", "--agent", "atlas", *pair, "--lake", str(lake), "--json"])
    report = _strict_json(cmp_.stdout)
    hist = runner.invoke(app, ["history", "--agent", "atlas", "--lake", str(lake), "--json"])
    history = {v["agent_version"]: v for v in _strict_json(hist.stdout)["versions"]}
    con = connect_read_only(lake)
    try:
        by_agent = con.sql("select * from by_agent where agent = 'atlas'").pl()
        version_history = con.sql("select * from version_history where agent = 'atlas'").pl()
    finally:
        con.close()
    names = [
        f"{m}{suffix}"
        for m in ("pass_rate_runs", "pass_rate_problems", "mean_score_runs", "mean_score_problems")
        for suffix in ("", "_ci_low", "_ci_high")
    ]
    for side, version in (("baseline", "1.3.0"), ("candidate", "1.4.0")):
        whole = report["versions"][side]
        view = version_history.filter(pl.col("agent_version") == version).row(0, named=True)
        for name in names:
            tol = 1e-5 if name.startswith("mean_score_problems_ci") else 1e-12  # SQL t table
            assert whole[name] == pytest.approx(history[version][name], abs=1e-15), name
            assert whole[name] == pytest.approx(view[name], abs=tol), name
        per_env = {row["env_type"]: row for row in whole["per_env_type"]}
        hist_env = {row["env_type"]: row for row in history[version]["per_env_type"]}
        for row in by_agent.filter(pl.col("agent_version") == version).to_dicts():
            env = row["env_type"]
            for name in names:
                tol = 1e-5 if name.startswith("mean_score_problems_ci") else 1e-12
                assert per_env[env][name] == pytest.approx(row[name], abs=tol), (env, name)
                assert per_env[env][name] == pytest.approx(hist_env[env][name], abs=1e-15)
            # the contract's columns are the run-level ones
            assert row["pass_rate"] == row["pass_rate_runs"]
            assert row["mean_score"] == row["mean_score_runs"]
    # 68.4 % of atlas 1.3.0's scored runs passed (the `make run` summary's number too)
    assert report["versions"]["baseline"]["pass_rate_runs"] == pytest.approx(54 / 79)


@pytest.mark.slow
def test_rate_intervals_stay_in_unit_range_with_two_problems(tmp_path: Path) -> None:
    rows = []
    for version, day, passes in (("1", 1, (1.0, 1.0)), ("2", 2, (0.0, 1.0))):
        for i, q in enumerate(passes):
            rows.append(
                {
                    "run_id": f"two-{version}-{i}",
                    "agent": "two",
                    "agent_version": version,
                    "problem_id": f"p{i}",
                    "env_type": "detect",
                    "graded_at": f"2026-04-{day:02d}T10:00:00+00:00",
                    "grade": {
                        "subscores": {**dict.fromkeys(DETECT_WEIGHTS, 0.5), "defect_matching": q},
                        "weights": DETECT_WEIGHTS,
                    },
                }
            )
    source = tmp_path / "two.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    lake = tmp_path / "lake"
    jobs.run([source], lake, parse_rubric({}))
    hist = runner.invoke(app, ["history", "--agent", "two", "--lake", str(lake), "--json"])
    assert hist.exit_code == 0, hist.output
    versions = _strict_json(hist.stdout)["versions"]
    con = connect_read_only(lake)
    try:
        views = [
            con.sql(f"select * from {view} where agent = 'two'").pl().to_dicts()  # noqa: S608
            for view in ("by_agent", "version_history")
        ]
    finally:
        con.close()
    for row in [*versions, *views[0], *views[1]]:
        assert row["problems"] == 2
        for rate in ("pass_rate_runs", "pass_rate_problems"):
            low, high = row[f"{rate}_ci_low"], row[f"{rate}_ci_high"]
            assert 0.0 <= low <= row[rate] <= high <= 1.0, (rate, low, high)
    assert math.isclose(versions[1]["pass_rate_problems"], 0.5)


@pytest.mark.slow
def test_a_bare_ingest_keeps_the_view_in_history_order(lake: Path, tmp_path: Path) -> None:
    # 1.0 and 2.0 first; then `ingest` lands (and scores) 1.0-rerun, graded between them.
    # history now steps 1.0 -> 1.0-rerun -> 2.0, and so does the view, at once.
    inputs = lake.parent / "in"
    first, later = tmp_path / "first", tmp_path / "later"
    first.mkdir()
    later.mkdir()
    for path in sorted(inputs.glob("*.jsonl")):
        rerun = "1.0-rerun" in path.read_text()
        (later if rerun else first).joinpath(path.name).write_bytes(path.read_bytes())
    copy = tmp_path / "lake"
    assert runner.invoke(app, ["run", str(first), "--lake", str(copy)]).exit_code == 0

    def steps() -> list[tuple[str, str]]:
        con = connect_read_only(copy)
        try:
            rows = con.execute(
                "select distinct baseline, candidate from version_regressions order by 1"
            ).fetchall()
        finally:
            con.close()
        return [(str(b), str(c)) for b, c in rows]

    assert steps() == [("1.0", "2.0")]
    done = runner.invoke(app, ["ingest", str(later), "--lake", str(copy)])
    assert done.exit_code == 0, done.output
    # ingest scores what it lands under the lake's rubric: the view steps through it at once
    assert steps() == [("1.0", "1.0-rerun"), ("1.0-rerun", "2.0")]
    assert runner.invoke(app, ["score", "--lake", str(copy)]).exit_code == 0
    assert steps() == [("1.0", "1.0-rerun"), ("1.0-rerun", "2.0")]


@pytest.mark.slow
def test_a_gate_does_not_pass_what_it_could_not_measure(tmp_path: Path) -> None:
    """A candidate whose every run was a grader error pairs no problem, and one that ran a
    single problem of the baseline's pairs one: both verdicts are the contract's no_change,
    and both gates fail (compare exits 1; the view's gate_fails says so)."""
    inputs = tmp_path / "in"
    inputs.mkdir()
    base = _grades("1.0", 1, "detect", DETECT_Q[0], 1)
    broken = _grades("1.1", 2, "detect", DETECT_Q[0], 2).with_columns(
        grade=pl.col("grade").struct.with_fields(env_internal_failure=pl.lit(True))
    )
    one = _grades("1.2", 3, "detect", DETECT_Q[0], 3).filter(pl.col("problem_id") == "detect-0")
    other = {"agent": pl.lit("one-pair-agent"), "run_id": pl.format("o-{}", "run_id")}
    frames = (base, broken, base.with_columns(**other), one.with_columns(**other))
    for i, frame in enumerate(frames):
        frame.write_ndjson(inputs / f"grades-{i}.jsonl")
    lake = tmp_path / "lake"
    assert runner.invoke(app, ["run", str(inputs), "--lake", str(lake)]).exit_code == 0
    for agent, candidate, paired in (("gate-agent", "1.1", 0), ("one-pair-agent", "1.2", 1)):
        args = ["compare", "--agent", agent, "--baseline", "1.0", "--candidate", candidate]
        done = runner.invoke(app, [*args, "--lake", str(lake), "--json", "--fail-on-regression"])
        assert done.exit_code == 1, done.output
        report = _strict_json(done.stdout)
        assert (report["paired_problems"], report["verdict"]) == (paired, "no_change")
        assert report["gate"]["fails"] is True
        assert "nothing measured" in report["gate"]["message"]
    con = connect_read_only(lake)
    try:
        rows = con.execute(
            "select agent, candidate, paired_problems, verdict, gate_fails "
            "from version_regressions where env_type = 'all' order by agent"
        ).fetchall()
    finally:
        con.close()
    # Both steps are in the table with a failing gate, the unpaired one with 0 pairs: a scan
    # for failing gates (`where gate_fails`) passes over neither.
    assert rows == [
        ("gate-agent", "1.1", 0, "no_change", True),
        ("one-pair-agent", "1.2", 1, "no_change", True),
    ]


def test_no_env_type_may_be_named_as_the_row_over_every_env_type(tmp_path: Path) -> None:
    """A rubric's [task.all] made an env type named as version_regressions' row over every
    env type: once two versions had its runs, the table held two rows (agent, baseline,
    candidate, 'all'), its model refused it, and every `run`, `score` and `nightly` of the
    lake exited 1 with pandera's dump, the warehouse unbuilt. The rubric is refused now,
    before any work."""
    rubric = tmp_path / "all.toml"
    rubric.write_text("[task.all]\nweights = { crash = 1.0 }\n")
    grades = tmp_path / "in" / "grades.jsonl"
    grades.parent.mkdir()
    _grades("1.0", 1, "detect", DETECT_Q[0], 1).write_ndjson(grades)
    lake = tmp_path / "lake"
    done = runner.invoke(app, ["run", str(grades), "--lake", str(lake), "--rubric", str(rubric)])
    assert done.exit_code == 2, done.output
    assert done.stderr == (
        "refused rubric: rubric key task.all = {'weights': {'crash': 1.0}}: 'all' names every "
        "env type together (compare, history, version_regressions): give this env type "
        "another name\n"
    )
    assert not lake.exists()
