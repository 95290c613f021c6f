"""A surface rubric change previewed (``score --dry-run``) and explained (``rescore-diff``):
servers whose shown overall or letter moves, by how much, and the fleet's letters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pipeline.cli import app

runner = CliRunner()


def _report(name: str, smells: list[str], merges: int) -> dict[str, Any]:
    surface = {"scope": "surface", "tokens": 300, "tool_count": 2, "tokens_per_tool_avg": 150}
    findings = [{"probe": "t", "kind": "token_cost", "target": ["a", "b"], "measurement": surface}]
    findings += [
        {"probe": "t", "kind": "schema_smell", "target": "a", "measurement": {"smell": s}}
        for s in smells
    ]
    findings += [
        {"probe": "t", "kind": "merge_candidate", "target": ["a", "b"], "measurement": {}}
    ] * merges
    return {
        "generated_at": "2026-12-01T00:00:00+00:00",
        "server": {"name": name, "version": "1", "fingerprint": name},
        "coverage": {"ran": ["static_hygiene", "consolidate"]},
        "findings": findings,
    }


# Default weights, offline (shares 0.3, 0.15, 0.15, 0.15 over 0.75), n = 2:
# "good": CE 100, SR 100, SH 100, DQ 100 -> 100.0 A+
# "mid":  SH 100 - 0.6/2 × 100 = 70, DQ 100 - 0.4/2 × 100 = 80, SR 100 - 0.4/4 × 100 = 90
#         -> (30 + 13.5 + 10.5 + 12) / 0.75 = 88.0 B+
# "weak": SH 100 - 1.15/2 × 100 = 42.5, DQ 100 - 0.9/2 × 100 = 55, SR 100 - 0.8/4 × 100 = 80
#         -> (30 + 12 + 6.375 + 8.25) / 0.75 = 75.5 C
# Without context_efficiency (its weight 0: the others' shares are 15/70 each):
# "good" 100.0 A+; "mid" (90 + 70 + 80)/3 = 80.0 B-; "weak" (80 + 42.5 + 55)/3 = 59.2 F
REPORTS = [
    _report("good", [], 0),
    _report("mid", ["deep_nesting", "short_description"], 1),
    _report("weak", ["deep_nesting", "enum_bloat", "missing_description"], 2),
]


@pytest.fixture()
def lake(tmp_path: Path) -> Path:
    for report in REPORTS:
        path = tmp_path / "in" / report["server"]["name"] / "report.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(report), encoding="utf-8")
    result = runner.invoke(app, ["run", str(tmp_path / "in"), "--lake", str(tmp_path / "lake")])
    assert result.exit_code == 0, result.output
    return tmp_path / "lake"


def _rubric(tmp_path: Path) -> Path:
    path = tmp_path / "no_ce.toml"
    # rubric_id is a top-level key: it must come before the first table
    path.write_text('rubric_id = "no-ce"\n[surface]\nweights = { context_efficiency = 0 }\n')
    return path


EXPECTED_CHANGES = [
    {
        "server": "weak",
        "server_version": "1",
        "overall_from": 75.5,
        "overall_to": 59.2,
        "overall_change": -16.3,
        "letter_from": "C",
        "letter_to": "F",
    },
    {
        "server": "mid",
        "server_version": "1",
        "overall_from": 88.0,
        "overall_to": 80.0,
        "overall_change": -8.0,
        "letter_from": "B+",
        "letter_to": "B-",
    },
]
EXPECTED_LETTERS = [
    {"letter": "A+", "servers_from": 1, "servers_to": 1, "moved": 0},
    {"letter": "B+", "servers_from": 1, "servers_to": 0, "moved": -1},
    {"letter": "B-", "servers_from": 0, "servers_to": 1, "moved": 1},
    {"letter": "C", "servers_from": 1, "servers_to": 0, "moved": -1},
    {"letter": "F", "servers_from": 0, "servers_to": 1, "moved": 1},
]


@pytest.mark.slow
def test_dry_run_previews_a_surface_weight_change(lake: Path, tmp_path: Path) -> None:
    rubric = _rubric(tmp_path)
    result = runner.invoke(
        app, ["score", "--lake", str(lake), "--rubric", str(rubric), "--dry-run", "--json"]
    )
    assert result.exit_code == 0, result.output
    diff = json.loads(result.output)
    assert diff["to"] == "no-ce"
    assert diff["surface_changes"] == EXPECTED_CHANGES
    assert diff["letter_distribution"] == EXPECTED_LETTERS
    # nothing was replaced: the lake's scores are still the default rubric's
    shown = runner.invoke(
        app,
        [
            "query",
            "select server, letter from surface_runs order by server",
            "--lake",
            str(lake),
            "--json",
        ],
    )
    assert json.loads(shown.output) == [
        {"server": "good", "letter": "A+"},
        {"server": "mid", "letter": "B+"},
        {"server": "weak", "letter": "C"},
    ]
    table = runner.invoke(app, ["score", "--lake", str(lake), "--rubric", str(rubric), "--dry-run"])
    assert "surface grades that move (2 server(s)" in table.output
    assert "fleet letters" in table.output


@pytest.mark.slow
def test_rescore_diff_shows_the_same_after_the_change(lake: Path, tmp_path: Path) -> None:
    before = json.loads(
        runner.invoke(
            app,
            [
                "query",
                "select value from _meta where key = 'rubric_id'",
                "--lake",
                str(lake),
                "--json",
            ],
        ).output
    )[0]["value"]
    assert (
        runner.invoke(
            app, ["score", "--lake", str(lake), "--rubric", str(_rubric(tmp_path))]
        ).exit_code
        == 0
    )
    result = runner.invoke(
        app, ["rescore-diff", "--from", before, "--to", "no-ce", "--lake", str(lake), "--json"]
    )
    assert result.exit_code == 0, result.output
    diff = json.loads(result.output)
    assert diff["surface_changes"] == EXPECTED_CHANGES
    assert diff["letter_distribution"] == EXPECTED_LETTERS
    # 'default' names the built-in rubric, as --rubric default does.
    again = runner.invoke(
        app, ["rescore-diff", "--from", "default", "--to", "no-ce", "--lake", str(lake), "--json"]
    )
    assert again.exit_code == 0, again.output
    assert json.loads(again.output) == diff == {**diff, "from": before}


@pytest.mark.slow
def test_score_files_from_before_the_display_columns_are_scored_again(lake: Path) -> None:
    # an older version wrote surface_scores without overall_display and friends: the next run
    # notices (the views would lack the columns), removes them and scores those parts again
    import polars as pl

    files = [p for p in (lake / "scores").glob("*/surface_scores/*.parquet")]
    assert files
    for path in files:
        old = pl.read_parquet(path).drop(
            "overall_display", "nothing_measured", "context_efficiency_display"
        )
        old.write_parquet(path)
    result = runner.invoke(app, ["run", str(lake / "nothing-new"), "--lake", str(lake)])
    assert result.exit_code == 2  # no such input: nothing was touched
    # score mends the lake before its work (an empty folder is refused as input now)
    result = runner.invoke(app, ["score", "--lake", str(lake)])
    assert result.exit_code == 0, result.output
    shown = runner.invoke(
        app,
        [
            "query",
            "select server, overall_display, letter from surface_runs order by server",
            "--lake",
            str(lake),
            "--json",
        ],
    )
    assert json.loads(shown.output) == [
        {"server": "good", "overall_display": 100.0, "letter": "A+"},
        {"server": "mid", "overall_display": 88.0, "letter": "B+"},
        {"server": "weak", "overall_display": 75.5, "letter": "C"},
    ]
