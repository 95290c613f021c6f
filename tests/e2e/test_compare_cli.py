"""compare and history end to end: JSON Lines in, `pipeline run`, then the CLI (in-process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from pipeline.rubric import load_rubric
from tests.clirunner import Done, pipeline

N_PROBLEMS = 30
TRIALS = 2
EFFECT = -0.15  # on the three gated exploit components, weight 0.4 together
TRUE_DELTA = 0.4 * EFFECT  # score = 0.6 × 1 + 0.4 × q, so Δscore = 0.4 × Δq = -0.06
WEIGHTS = {"defect_matching": 0.6, "pov_quality": 0.2, "summary_quality": 0.1, "target_calls": 0.1}


def _records(version: str, effect: float, day: int, seed: int) -> pl.DataFrame:
    """Exploit grades: gate passed, the other three subscores share one quality q."""
    rng = np.random.default_rng(seed)
    true = np.random.default_rng(0).uniform(0.35, 0.65, N_PROBLEMS)  # same problems everywhere
    q = np.clip(true[:, None] + effect + rng.normal(0, 0.03, (N_PROBLEMS, TRIALS)), 0, 1)
    problem, trial = np.indices(q.shape)
    return pl.DataFrame(
        {"problem": problem.ravel(), "trial": trial.ravel(), "q": q.ravel()}
    ).select(
        run_id=pl.format("cli-{}-{}-{}", pl.lit(version), "problem", "trial"),
        agent=pl.lit("cli-agent"),
        agent_version=pl.lit(version),
        problem_id=pl.format("prob-{}", "problem"),
        env_type=pl.lit("exploit"),
        graded_at=pl.lit(f"2026-02-{day:02d}T10:00:00+00:00"),
        trial=pl.col("trial"),
        cost_usd=pl.lit(0.1 * day),
        grade=pl.struct(
            subscores=pl.struct(
                defect_matching=pl.lit(1.0),
                pov_quality="q",
                summary_quality="q",
                target_calls="q",
            ),
            weights=pl.struct(**{k: pl.lit(v) for k, v in WEIGHTS.items()}),
        ),
    )


def _gate_failure(version: str, day: int) -> dict[str, Any]:
    zero = dict.fromkeys(WEIGHTS, 0.0)
    return {
        "run_id": f"cli-{version}-gatefail",
        "agent": "cli-agent",
        "agent_version": version,
        "problem_id": "prob-gate",
        "env_type": "exploit",
        "graded_at": f"2026-02-{day:02d}T11:00:00+00:00",
        "grade": {
            "subscores": zero,
            "weights": WEIGHTS,
            "metadata": {
                "defect_matching": {"reason": "crash in parse_header, not the target defect"},
                "pov_quality": {"skipped": "gated"},
            },
        },
    }


def _gate_pass(version: str, day: int) -> dict[str, Any]:
    return {
        **_gate_failure(version, day),
        "grade": {"subscores": dict.fromkeys(WEIGHTS, 1.0), "weights": WEIGHTS},
    }


def _grader_error(version: str, day: int) -> dict[str, Any]:
    return {
        **_gate_pass(version, day),
        "run_id": f"cli-{version}-error",
        "problem_id": "prob-0",
        "trial": 7,
        "grade": {
            "subscores": dict.fromkeys(WEIGHTS, 1.0),
            "weights": WEIGHTS,
            "env_internal_failure": True,
        },
    }


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("compare_cli")
    inputs = root / "in"
    inputs.mkdir()
    _records("1.0", 0.0, 1, seed=1).write_ndjson(inputs / "v1.jsonl")
    _records("1.0-rerun", 0.0, 2, seed=2).write_ndjson(inputs / "v1rerun.jsonl")
    _records("2.0", EFFECT, 3, seed=3).write_ndjson(inputs / "v2.jsonl")
    extra = [
        _gate_pass("1.0", 1),
        _gate_pass("1.0-rerun", 2),
        _gate_failure("2.0", 3),
        _grader_error("2.0", 3),
    ]
    (inputs / "extra.jsonl").write_text("".join(json.dumps(r) + "\n" for r in extra))
    out = root / "lake"
    done = pipeline("run", str(inputs), "--lake", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def _compare(lake: Path, baseline: str, candidate: str, *extra: str) -> Done:
    done = pipeline(
        "compare",
        "--agent",
        "cli-agent",
        "--baseline",
        baseline,
        "--candidate",
        candidate,
        "--lake",
        str(lake),
        *extra,
    )
    return done


@pytest.mark.slow
def test_compare_json_finds_the_injected_regression_and_why(lake: Path) -> None:
    done = _compare(lake, "1.0", "2.0", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["paired_problems"] == N_PROBLEMS + 1  # + prob-gate
    assert report["verdict"] == "regression"
    assert report["method"] == "paired_t"
    assert report["ci_high"] < 0
    # the injected effect over 30 problems, plus prob-gate's drop from 1.0 to 0.0
    true = (N_PROBLEMS * TRUE_DELTA - 1.0) / (N_PROBLEMS + 1)
    assert report["ci_low"] <= true <= report["ci_high"]
    assert report["grader_errors"] == {"baseline": 0, "candidate": 1}
    assert report["n_unpaired_baseline"] == 0 and report["n_unpaired_candidate"] == 0
    worst = report["regressed_problems"][0]
    assert worst["problem_id"] == "prob-gate"
    assert worst["failing_kind"] == "gate"
    assert worst["failing_component"] == "defect_matching"
    assert worst["failing_reason"] == "crash in parse_header, not the target defect"
    total = sum(c["delta"] for c in report["components"])
    assert total == pytest.approx(report["decomposition"]["delta_weighted"], abs=1e-9)
    assert report["cost"]["candidate"]["cost_usd"] > report["cost"]["baseline"]["cost_usd"]


@pytest.mark.slow
def test_aa_rerun_is_no_change(lake: Path) -> None:
    done = _compare(lake, "1.0", "1.0-rerun", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["verdict"] == "no_change"


def test_fail_on_regression_and_html(lake: Path, tmp_path: Path) -> None:
    page = tmp_path / "cmp.html"
    done = _compare(lake, "1.0", "2.0", "--fail-on-regression", "--html", str(page))
    assert done.returncode == 1
    assert "regression" in done.stdout
    text = page.read_text()
    assert '<svg id="env-chart"' in text and '<svg id="scatter"' in text
    ok = _compare(lake, "1.0", "1.0-rerun", "--fail-on-regression")
    assert ok.returncode == 0, ok.stderr


def test_unknown_version_is_bad_usage(lake: Path) -> None:
    done = _compare(lake, "1.0", "9.9", "--json")
    assert done.returncode == 2
    assert "9.9" in done.stderr and "known versions" in done.stderr


def test_an_unknown_agent_is_bad_usage_naming_the_known_ones(lake: Path) -> None:
    # The same name in another case comes first: it is the likely one.
    done = pipeline("history", "--agent", "CLI-Agent", "--lake", str(lake))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "usage: no runs of agent 'CLI-Agent' (the known agent 'cli-agent' differs from it only "
        f"in letter case) in the warehouse at {lake}; known agents: 'cli-agent'"
    )


def test_history_in_graded_order_with_paired_steps(lake: Path) -> None:
    done = pipeline("history", "--agent", "cli-agent", "--lake", str(lake), "--json")
    assert done.returncode == 0, done.stderr
    versions = json.loads(done.stdout)["versions"]
    assert [v["agent_version"] for v in versions] == ["1.0", "1.0-rerun", "2.0"]
    assert versions[1]["step"]["verdict"] == "no_change"
    assert versions[2]["step"]["verdict"] == "regression"
    assert versions[2]["grader_errors"] == 1
    table = pipeline("history", "--agent", "cli-agent", "--lake", str(lake))
    assert table.returncode == 0 and "regression" in table.stdout
    # Each step shows its gate, as compare --fail-on-regression would decide it.
    gates = [v["step"]["gate"]["fails"] for v in versions[1:]]
    assert "gate" in table.stdout
    assert table.stdout.count("FAILS") == sum(gates) and table.stdout.count("passes") == len(
        gates
    ) - sum(gates)


def test_missing_warehouse_fails_clearly(tmp_path: Path) -> None:
    done = _compare(tmp_path / "nowhere", "1", "2")
    assert done.returncode == 2  # not a lake: a usage error (CONTRACT section 7)
    assert "does not exist" in done.stderr
    assert not (tmp_path / "nowhere").exists()


def _history_in_kolkata(lake: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``history`` in a process whose local time zone is UTC+05:30, as a laptop's may be
    (DuckDB takes a connection's TimeZone from it when the process starts)."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pipeline",
            "history",
            "--agent",
            "cli-agent",
            "--lake",
            lake,
            *extra,
        ],
        env={**os.environ, "TZ": "Asia/Kolkata"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_history_times_are_utc_whatever_the_readers_time_zone(lake: Path) -> None:
    # The fixture's 1.0 runs were graded from 2026-02-01T10:00:00+00:00 on. history showed
    # the reading machine's local time (15:30+05:30 here), the terminal without its zone:
    # one lake gave two JSON documents and a time a reader elsewhere took for their own.
    done = _history_in_kolkata(lake, "--json")
    assert done.returncode == 0, done.stderr
    firsts = [v["first_graded_at"] for v in json.loads(done.stdout)["versions"]]
    assert firsts == [
        "2026-02-01 10:00:00+00:00",
        "2026-02-02 10:00:00+00:00",
        "2026-02-03 10:00:00+00:00",
    ]
    table = _history_in_kolkata(lake)
    assert table.returncode == 0, table.stderr
    assert "first graded (UTC)" in table.stdout and "2026-02-01 10:00" in table.stdout


NFC_VERSION = "2.0 β ünï"  # as the grader wrote it: ü and ï one code point each


@pytest.fixture(scope="module")
def named_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Versions named as graders name them: with spaces and letters beyond ASCII, one with
    a line break, and a dozen nightly builds."""
    root = tmp_path_factory.mktemp("compare_names")
    versions = [f"nightly-{day:02d}" for day in range(1, 13)] + [NFC_VERSION, "v3\nline"]
    records = [
        {**_gate_pass(version, day), "run_id": f"named-{day}", "agent": "named-agent"}
        for day, version in enumerate(versions, start=1)
    ] + [
        # A build number written once with the newline its shell variable carried, cut to a
        # space: two versions on a screen that shows one name twice.
        {**_gate_pass(version, day), "run_id": f"twin-{day}", "agent": "twin-agent"}
        for day, version in enumerate(["1.1", "1.2", "1.2 "], start=1)
    ]
    (root / "named.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    done = pipeline("run", str(root / "named.jsonl"), "--lake", str(root / "lake"))
    assert done.returncode == 0, done.stdout + done.stderr
    return root / "lake"


def _unknown_version(lake: Path, candidate: str) -> str:
    done = pipeline(
        "compare", "--agent", "named-agent", "--baseline", "nightly-01", "--candidate", candidate,
        "--lake", str(lake),
    )  # fmt: skip
    assert done.returncode == 2, done.stdout
    return done.stderr


def test_an_unknown_version_is_named_in_one_line_with_the_latest_known_ones(
    named_lake: Path,
) -> None:
    # The known versions were listed bare, all of them: a name with ', ' or a line break in
    # it could not be told from two, the line break broke the one-line message, and an
    # agent with hundreds of nightly builds printed hundreds.
    said = _unknown_version(named_lake, "9.9")
    assert said == (
        "usage: agent 'named-agent' has no runs of version(s) '9.9'; known versions, the "
        "latest 10 of 14: 'nightly-05', 'nightly-06', 'nightly-07', 'nightly-08', "
        "'nightly-09', 'nightly-10', 'nightly-11', 'nightly-12', '2.0 β ünï', 'v3\\nline'\n"
    )


@pytest.mark.parametrize(
    ("typed", "differs_in"),
    [
        # ü and ï as a letter and a combining mark, as a macOS file name or an IME types
        # them: it printed the same as the known name, which it was said not to be.
        (unicodedata.normalize("NFD", NFC_VERSION), "Unicode normalization"),
        (NFC_VERSION.upper(), "letter case"),
        (f"{NFC_VERSION} ", "surrounding whitespace"),
    ],
)
def test_a_version_that_only_looks_known_says_which_it_looks_like(
    named_lake: Path, typed: str, differs_in: str
) -> None:
    said = _unknown_version(named_lake, typed)
    assert said.startswith(
        f"usage: agent 'named-agent' has no runs of version(s) {typed!r} (the known version "
        f"{NFC_VERSION!r} differs from it only in {differs_in}); known versions"
    ), said
    assert said.count("\n") == 1


@pytest.mark.parametrize("to", ["default", "the default's id"])
def test_rescore_diff_of_a_rubric_with_itself_is_bad_usage(lake: Path, to: str) -> None:
    # compare refuses one version twice and surface-diff one server version twice; rescore-diff
    # printed a table of zeros and exited 0, also for 'default' against its own id.
    own = load_rubric(None).rubric_id
    done = pipeline(
        "rescore-diff", "--from", "default", "--to", own if to != "default" else to,
        "--lake", str(lake),
    )  # fmt: skip
    assert done.returncode == 2, done.stdout
    assert done.stderr == (f"usage: --from and --to are both rubric {own}: nothing to compare\n")
    assert done.stdout == ""


def test_history_says_which_versions_only_look_alike(named_lake: Path) -> None:
    # history showed '1.2' and '1.2 ' as two rows reading 1.2, the second step of 1.2
    # against 1.2, with nothing to say they are two names.
    done = pipeline("history", "--agent", "twin-agent", "--lake", str(named_lake))
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith(
        "note: '1.2' and '1.2 ' are two versions, told apart only by surrounding whitespace\n"
    )
    alone = pipeline("history", "--agent", "named-agent", "--lake", str(named_lake))
    assert alone.returncode == 0 and "two versions" not in alone.stdout


def test_an_unknown_agent_that_only_looks_known_says_which_it_looks_like(named_lake: Path) -> None:
    # An agent name with the trailing space a shell variable left was told apart from the
    # known one only by a list in which the known one read the same.
    done = pipeline("history", "--agent", "named-agent ", "--lake", str(named_lake))
    assert done.returncode == 2
    assert done.stderr == (
        "usage: no runs of agent 'named-agent ' (the known agent 'named-agent' differs from it "
        f"only in surrounding whitespace) in the warehouse at {named_lake}; known agents: "
        "'named-agent', 'twin-agent'\n"
    )
