"""mcp-xray reports holding numbers at the edges of what a double or an Int64 holds, through
``pipeline ingest`` and ``pipeline query``: each lands or is quarantined on its own, and what
lands is read and shown as written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.clirunner import pipeline


def _report(version: str, tool_count: int = 10) -> dict[str, Any]:
    return {
        "generated_at": "2026-12-01T00:00:00+00:00",
        "server": {"name": "s2", "version": version, "tool_count": tool_count},
        "coverage": {"ran": ["consolidate"]},
        "findings": [],
    }


def _query(lake: Path, sql: str) -> list[dict[str, Any]]:
    done = pipeline("query", sql, "--lake", lake, "--json")
    assert done.returncode == 0, done.stderr
    rows: list[dict[str, Any]] = json.loads(done.stdout)
    return rows


@pytest.mark.slow
def test_a_tool_count_past_int64_quarantines_its_line_and_the_rest_land(tmp_path: Path) -> None:
    # Before, line 3's 1e19 failed the cast of the whole file's column: all 4 lines were
    # one quarantine row, raw null. 2^63 - 1 and 2^53 + 1 land as written (not rounded).
    lines = [json.dumps(_report(v)) for v in "1234"]
    lines[1] = lines[1].replace('"tool_count": 10', '"tool_count": 9223372036854775807')
    lines[2] = lines[2].replace('"tool_count": 10', '"tool_count": 1e19')
    lines[3] = lines[3].replace('"tool_count": 10', '"tool_count": 9007199254740993')
    source = tmp_path / "in" / "reports.jsonl"
    source.parent.mkdir()
    source.write_text("".join(line + "\n" for line in lines))
    lake = tmp_path / "lake"
    done = pipeline("ingest", source.parent, "--lake", lake)
    assert done.returncode == 0, done.stderr
    assert _query(lake, "select source, line, reason, raw from quarantine") == [
        {
            "source": str(source),
            "line": 3,
            "reason": "server.tool_count = 10000000000000000000.0: "
            "expected a whole number from 0 to 2^63-1",
            "raw": lines[2],
        }
    ]
    landed = "select server_version, tool_count from surface_runs order by server_version"
    assert _query(lake, landed) == [
        {"server_version": "1", "tool_count": 10},
        {"server_version": "2", "tool_count": 9223372036854775807},
        {"server_version": "4", "tool_count": 9007199254740993},
    ]


@pytest.mark.slow
def test_a_sum_past_a_double_is_shown_as_mcp_xray_shows_it(tmp_path: Path) -> None:
    # Two labeled pass rates of -1e308 sum to -inf: selection_robustness = max(0, -inf / 2
    # * 100) = 0.0, the only dimension measured (noise ran, n = 0), so overall 0.0 and F.
    # Before, the shown values were 100.0 and the letter A+ beside an overall of 0.
    labeled = {"mode": "labeled", "pass_rate": -1e308}
    report = {
        "generated_at": "2026-12-01T00:00:00+00:00",
        "server": {"name": "s3", "version": "1"},
        "coverage": {"ran": ["noise"]},
        "findings": [
            {"kind": "selection_error", "target": t, "measurement": labeled} for t in "ab"
        ],
    }
    source = tmp_path / "in" / "inf.json"
    source.parent.mkdir()
    source.write_text(json.dumps(report))
    lake = tmp_path / "lake"
    assert pipeline("ingest", source.parent, "--lake", lake).returncode == 0
    shown = (
        "select selection_robustness, selection_robustness_display, overall, overall_display,"
        " letter from surface_runs"
    )
    assert _query(lake, shown) == [
        {
            "selection_robustness": 0.0,
            "selection_robustness_display": 0.0,
            "overall": 0.0,
            "overall_display": 0.0,
            "letter": "F",
        }
    ]
