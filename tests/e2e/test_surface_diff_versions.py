"""surface-diff as a security engineer tracking a server across versions reads it: which two
reports it compares, and what it says when a version's report measured less than the other's.
Reports are built here (the changes are known by construction) and land through ``run``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipeline.warehouse import warehouse_path
from tests.clirunner import pipeline
from tests.paths import ROOT
from tools.warehouse_docs import check_queries, load


def _finding(probe: str, kind: str, target: Any, **measurement: Any) -> dict[str, Any]:
    return {"probe": probe, "kind": kind, "target": target, "measurement": measurement}


SURFACE = _finding(
    "static_hygiene",
    "token_cost",
    ["a", "b"],
    scope="surface",
    tokens=300,
    tool_count=2,
    tokens_per_tool_avg=150,
)
SHORT_A = _finding("static_hygiene", "schema_smell", "a", smell="short_description")
# a labeled query of the noise probe: pass_rate 0.5, severity 0.5
NOISE_B = _finding("noise", "selection_error", "b", mode="labeled", pass_rate=0.5)


def _report(
    version: str | None, at: str, findings: list[dict[str, Any]], ran: list[str]
) -> dict[str, Any]:
    return {
        "generated_at": at,
        "server": {"name": "srv", "version": version, "tool_count": 2},
        "coverage": {"ran": ran},
        "findings": [SURFACE, *findings],
    }


def _land(tmp_path: Path, *reports: dict[str, Any]) -> Path:
    inputs, lake = tmp_path / "in", tmp_path / "lake"
    inputs.mkdir()
    for i, report in enumerate(reports):
        (inputs / f"{i}.json").write_text(json.dumps(report), encoding="utf-8")
    done = pipeline("run", inputs, "--lake", lake)
    assert done.returncode == 0, done.stdout + done.stderr
    return lake


def _diff(lake: Path, *args: str) -> dict[str, Any]:
    """surface-diff --json of server srv, which exits 0."""
    done = pipeline("surface-diff", "--server", "srv", "--lake", lake, "--json", *args)
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


@pytest.fixture
def unversioned_twice(tmp_path: Path) -> Path:
    """A report without server.version (its version is named 'unversioned'), then one whose
    version is the string 'unversioned', then 2: two versions share the name."""
    static = ["static_hygiene"]
    return _land(
        tmp_path,
        _report(None, "2026-11-01T00:00:00+00:00", [], static),
        _report("unversioned", "2026-11-02T00:00:00+00:00", [SHORT_A], static),
        _report("2", "2026-11-03T00:00:00+00:00", [SHORT_A], static),
    )


def test_the_latest_two_are_compared_even_when_two_versions_share_a_name(
    unversioned_twice: Path,
) -> None:
    report = _diff(unversioned_twice)
    assert (report["from"], report["to"]) == ("unversioned", "2")
    # the version named 'unversioned' that comes second (its report of 2026-11-02) has the
    # smell 2 has: nothing changed. The null version's pair (smell new in 2) is not mixed in.
    assert report["grade"]["from_run_id"] == "srv@unversioned@2026-11-02T00:00:00+00:00"
    assert report["counts"] == {"new": 0, "worse": 0, "resolved": 0, "better": 0}
    assert report["changes"] == []
    # both: CE 100 (150 tokens per tool), SH 100, DQ = 100 - 0.4/2 × 100 = 80;
    # (0.3 × 100 + 0.15 × 100 + 0.15 × 80) / 0.6 = 95.0
    assert (report["grade"]["overall_before"], report["grade"]["overall_after"]) == (95.0, 95.0)


def test_a_version_name_two_versions_share_is_refused(unversioned_twice: Path) -> None:
    done = pipeline(
        "surface-diff", "--server", "srv", "--from", "unversioned", "--to", "2",
        "--lake", unversioned_twice,
    )  # fmt: skip
    assert done.returncode == 2
    assert "'unversioned' names 2 versions of server 'srv'" in done.stderr


def test_the_views_yaml_tests_hold_when_two_versions_share_a_name(
    unversioned_twice: Path,
) -> None:
    # surface_versions has one row per version: (server, server_version), not the label
    with duckdb.connect(str(warehouse_path(unversioned_twice)), read_only=True) as con:
        failing = {
            label: count
            for label, (sql, params) in check_queries(load()).items()
            if (count := con.execute(sql, params).fetchone()[0])  # type: ignore[index]
        }
    assert failing == {}


def test_an_unknown_version_is_refused_on_one_line_whatever_the_versions_hold(
    tmp_path: Path,
) -> None:
    static = ["static_hygiene"]
    lake = _land(
        tmp_path,
        _report("1.0\nbuild 7", "2026-11-01T00:00:00+00:00", [], static),
        _report("2", "2026-11-02T00:00:00+00:00", [], static),
    )
    done = pipeline("surface-diff", "--server", "srv", "--from", "9", "--to", "2", "--lake", lake)
    assert done.returncode == 2
    assert done.stderr.endswith("its versions: 1.0\\nbuild 7, 2\n")
    assert done.stderr.count("\n") == 1


def test_the_sarif_category_is_the_servers_whatever_its_versions_hold(tmp_path: Path) -> None:
    static = ["static_hygiene"]
    lake = _land(
        tmp_path,
        _report("release/1.0", "2026-11-01T00:00:00+00:00", [], static),
        _report("2.0 100%", "2026-11-02T00:00:00+00:00", [], static),
    )
    sarif = tmp_path / "diff.sarif"
    assert (
        pipeline("surface-diff", "--server", "srv", "--lake", lake, "--sarif", sarif).returncode
        == 0
    )
    run_id = json.loads(sarif.read_text())["runs"][0]["automationDetails"]["id"]
    # category and instance split at the last /
    category, instance = run_id.rsplit("/", 1)
    assert (category, instance) == ("surface-diff/srv", "release%2F1.0..2.0 100%25")


@pytest.fixture
def noise_dropped(tmp_path: Path) -> Path:
    """1 ran the noise probe, which found a labeled selection error; 2 did not run it. 2 has
    fixed a's short description, which static_hygiene looked for in both."""
    return _land(
        tmp_path,
        _report("1", "2026-11-01T00:00:00+00:00", [NOISE_B, SHORT_A], ["static_hygiene", "noise"]),
        _report("2", "2026-11-02T00:00:00+00:00", [], ["static_hygiene"]),
    )


def test_findings_of_a_probe_the_later_version_did_not_run_are_resolved_unmeasured(
    noise_dropped: Path,
) -> None:
    report = _diff(noise_dropped)
    # 1: CE 100, SH 100, DQ = 100 - 0.4/2 × 100 = 80, selection_robustness = mean(pass_rate)
    #    × 100 = 50: (30 + 0.25 × 50 + 15 + 0.15 × 80) / 0.85 = 81.8 (B-);
    # 2: (30 + 15 + 15) / 0.6 = 100 (A+)
    grade = report["grade"]
    assert (grade["overall_before"], grade["letter_before"]) == (81.8, "B-")
    assert (grade["overall_after"], grade["letter_after"]) == (100.0, "A+")
    assert report["coverage"] == {"from": ["static_hygiene", "noise"], "to": ["static_hygiene"]}
    assert [(c["kind"], c["change"], c["probe"], c["unmeasured"]) for c in report["changes"]] == [
        ("selection_error", "resolved", "noise", True),
        ("schema_smell", "resolved", "static_hygiene", False),
    ]
    assert report["unmeasured"] == [
        {"probe": "noise", "ran_in": "1", "not_in": "2", "change": "resolved", "findings": 1}
    ]
    text = pipeline("surface-diff", "--server", "srv", "--lake", noise_dropped).stdout
    assert (
        "note: probe noise ran in 1, not in 2: its 1 finding(s) show as resolved, "
        "but 2 did not measure them" in " ".join(text.split())
    )


def test_findings_of_a_probe_only_the_later_version_ran_are_new_unmeasured(
    noise_dropped: Path,
) -> None:
    report = _diff(noise_dropped, "--from", "2", "--to", "1")
    assert [(c["kind"], c["change"], c["unmeasured"]) for c in report["changes"]] == [
        ("selection_error", "new", True),
        ("schema_smell", "new", False),
    ]
    assert report["unmeasured"] == [
        {"probe": "noise", "ran_in": "1", "not_in": "2", "change": "new", "findings": 1}
    ]
    text = pipeline(
        "surface-diff", "--server", "srv", "--from", "2", "--to", "1", "--lake", noise_dropped
    ).stdout
    assert (
        "note: probe noise ran in 1, not in 2: its 1 finding(s) show as new, "
        "but 2 did not measure them" in " ".join(text.split())
    )


def test_a_finding_with_no_target_tools_is_shown_as_the_whole_surface(tmp_path: Path) -> None:
    # mcp-xray targets a jit_candidate (and a 0-tool server's surface token_cost) at []
    jit = _finding("consolidate", "jit_candidate", [], recommend_jit=True)
    lake = _land(
        tmp_path,
        _report("1", "2026-11-01T00:00:00+00:00", [jit], ["static_hygiene", "consolidate"]),
        _report("2", "2026-11-02T00:00:00+00:00", [], ["static_hygiene", "consolidate"]),
    )
    done = pipeline("surface-diff", "--server", "srv", "--lake", lake)
    assert done.returncode == 0, done.stderr
    [row] = [line for line in done.stdout.splitlines() if "jit_candidate" in line]
    assert "(whole surface)" in row and "resolved" in row


@pytest.mark.slow
def test_a_diff_reads_its_two_versions_not_every_pair_of_the_servers(tmp_path: Path) -> None:
    # 80 versions of 301 findings: 6,320 ordered pairs. Picking the pair by its labels after
    # surface_finding_changes_all had matched every pair took 8.4 s and a 1.4 GiB peak; by the
    # run_ids, which the view groups on, DuckDB reads the two reports (1.0 s, 258 MiB).
    tools = [f"t{i}" for i in range(300)]
    surface = {**SURFACE, "target": tools}
    surface["measurement"] = {**SURFACE["measurement"], "tool_count": 300, "tokens": 45_000}
    reports = [
        {
            **_report(str(v), f"2026-11-01T00:{v // 60:02d}:{v % 60:02d}+00:00", [], []),
            "findings": [
                surface,
                *(
                    _finding(
                        "static_hygiene", "token_cost", t, scope="tool", share=(i + v) % 7 / 300
                    )
                    for i, t in enumerate(tools)
                ),
            ],
        }
        for v in range(80)
    ]
    lake = _land(tmp_path, *reports)
    code = (
        "from pathlib import Path\nfrom pipeline.surface.diff import fetch_diff\n"
        f"print(fetch_diff(Path({str(lake)!r}), 'srv', '3', '70').counts())\n"
        "print(next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    counts, peak_kib = done.stdout.strip().splitlines()
    # tool i's severity is share × 3 = r / 100, r = (i + v) % 7: i % 7 = k has r = (k + 3) % 7
    # in 3 and k in 70, better for k in 0..3 (4 × 43 tools) and worse for k in 4..6 (43 +
    # 43 + 42: 300 = 42 × 7 + 6)
    assert counts == str({"new": 0, "worse": 128, "resolved": 0, "better": 172})
    assert int(peak_kib) < 640 * 1024


def test_finding_changes_match_each_pairs_findings_as_a_full_join_would(tmp_path: Path) -> None:
    """surface_finding_changes_all matches a pair's two reports by grouping on the pair and
    the key, which gives a full join's rows while each side has at most one finding of a key
    (occurrence numbers them): every pair of six versions, findings dropped, repeated (the
    n-th of a key matching the n-th) and moved in severity, against a join of the two
    versions' keys done here."""
    import random

    import polars as pl

    rng = random.Random(5)
    pool = [
        _finding("static_hygiene", "schema_smell", tool, smell=smell)
        for tool in "abc"
        for smell in ("short_description", "missing_param_description")
    ] + [_finding("noise", "selection_error", t, mode="labeled", pass_rate=0.5) for t in "ab"]
    reports = []
    for version in range(6):
        kept = [f for f in pool if rng.random() < 0.7]
        kept += [f for f in kept if rng.random() < 0.3]  # a second finding of one key
        moved = [
            f | {"measurement": f["measurement"] | {"pass_rate": rng.choice([0.25, 0.5, 1.0])}}
            if "pass_rate" in f["measurement"]
            else f
            for f in kept
        ]
        at = f"2026-11-0{version + 1}T00:00:00+00:00"
        reports.append(_report(str(version), at, moved, ["static_hygiene", "noise"]))
    lake = _land(tmp_path, *reports)
    key = ["kind", "match_tools", "identity", "occurrence"]
    with duckdb.connect(str(warehouse_path(lake)), read_only=True) as con:
        keys = con.sql(
            "select run_id, kind, array_to_string(match_tools, ',') as match_tools, identity, "
            "occurrence, severity_display from int_surface_finding_keys"
        ).pl()
        pairs = con.sql("select from_run_id, to_run_id from surface_version_pairs").pl()
        got = con.sql(
            "select from_run_id, to_run_id, kind, array_to_string(match_tools, ',') as "
            "match_tools, identity, occurrence, change, severity_before, severity_after "
            "from surface_finding_changes_all"
        ).pl()
    assert pairs.height == 30
    before = pairs.join(keys.rename({"run_id": "from_run_id"}), on="from_run_id")
    after = pairs.join(keys.rename({"run_id": "to_run_id"}), on="to_run_id")
    joined = before.join(
        after, on=["from_run_id", "to_run_id", *key], how="full", coalesce=True, suffix="_after"
    ).rename({"severity_display": "severity_before", "severity_display_after": "severity_after"})
    expected = joined.with_columns(
        change=pl.when(pl.col("severity_before").is_null())
        .then(pl.lit("new"))
        .when(pl.col("severity_after").is_null())
        .then(pl.lit("resolved"))
        .when(pl.col("severity_after") > pl.col("severity_before"))
        .then(pl.lit("worse"))
        .when(pl.col("severity_after") < pl.col("severity_before"))
        .then(pl.lit("better"))
        .otherwise(pl.lit("same"))
    ).select(got.columns)
    order = ["from_run_id", "to_run_id", *key]
    assert set(got["change"]) >= {"new", "resolved", "same", "worse", "better"}
    assert got.sort(order).equals(expected.sort(order))
