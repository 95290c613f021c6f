"""Issue 13: nothing lost, nothing leaked, nothing poisoned.

From the user's side: hostile lines are fed to `run`/`ingest`, then the lake and the
warehouse are read back. Each test names the hole it closes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.compare import stats
from pipeline.core import jsonsafe
from pipeline.ingest import classify as ingest
from pipeline.jobs import commands as jobs
from pipeline.jobs.results import IngestReport
from pipeline.rubric import RubricError, parse_rubric
from tests.e2e.test_ingest import quarantine, record, with_grade, write_jsonl

runner = CliRunner()


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def replaced(run_id: str, old: str, new: str, base: dict[str, Any] | None = None) -> str:
    """A record's JSON text with ``old`` replaced once (for text JSON encoders will not write)."""
    text = json.dumps(base if base is not None else record(run_id))
    assert old in text
    return text.replace(old, new, 1)


def reasons_by_line(lake: Path) -> dict[int, str]:
    rows = quarantine(lake)
    return dict(zip(rows["line"].to_list(), rows["reason"].to_list(), strict=True))


def ingest_lines(tmp_path: Path, lines: list[str]) -> tuple[IngestReport, Path]:
    lake = tmp_path / "lake"
    report = jobs.ingest([write_jsonl(tmp_path / "in.jsonl", lines)], lake)
    assert report.accounted == report.lines_read == len(lines)
    return report, lake


# --- one reading of JSON: numbers -------------------------------------------------------------

NON_FINITE = ["nan", "NaN", "NAN", "-nan", "inf", "-inf", "INF", "Infinity", "-Infinity", "1e999"]


def non_finite(literal: str, path: str) -> str:
    """The reason a record with a non-finite number is quarantined."""
    return f"non-finite number {literal} at {path}"


def past_64_bits(literal: str, path: str) -> str:
    """The reason a record with an integer past 64 bits is quarantined."""
    return f"integer {literal} at {path} is outside the 64-bit range (-2^63 to 2^63-1)"


NON_FINITE_PLACES = [
    ('"cost_usd": 0.25', "$.cost_usd"),
    ('"reason": "stack matched"', "$.grade.metadata.defect_matching.reason"),
    ('"summary_quality": 0.5', "$.grade.subscores.summary_quality"),
]


@pytest.mark.slow
def test_a_non_finite_literal_in_any_case_is_quarantined_naming_its_path(tmp_path: Path) -> None:
    # Every literal at every place, one line each, in one file: each line's reason stands
    # alone (one ingest instead of thirty keeps the suite's time down).
    cases = [(literal, old, path) for old, path in NON_FINITE_PLACES for literal in NON_FINITE]
    lines = [
        replaced(f"r{i}", old, f"{old.split(':')[0]}: {literal}")
        for i, (literal, old, path) in enumerate(cases)
    ]
    report, lake = ingest_lines(tmp_path, [*lines, json.dumps(record("ok"))])
    assert report.landed_task_runs == 1
    assert report.quarantined == len(cases)
    reasons = reasons_by_line(lake)
    for number, (literal, _, path) in enumerate(cases, start=1):
        assert reasons[number] == non_finite(literal, path), (number, literal, path)


PAST_64_BITS = [
    ("9223372036854775808", "$.trial"),  # 2^63
    ("18446744073709551615", "$.trial"),  # 2^64 - 1
    ("18446744073709551616", "$.trial"),  # 2^64: DuckDB reads it as a rounded double
    ("-9223372036854775809", "$.trial"),  # -2^63 - 1
    ("123456789012345678901234567890", "$.grade.metadata.defect_matching.reason"),
]


@pytest.mark.slow
def test_an_integer_past_64_bits_is_quarantined_naming_its_path(tmp_path: Path) -> None:
    lines = []
    for i, (literal, path) in enumerate(PAST_64_BITS):
        where = '"trial": 0' if path == "$.trial" else '"reason": "stack matched"'
        lines.append(replaced(f"r{i}", where, f"{where.split(':')[0]}: {literal}"))
    report, lake = ingest_lines(tmp_path, lines)
    assert report.quarantined == len(PAST_64_BITS)
    reasons = reasons_by_line(lake)
    for number, (literal, path) in enumerate(PAST_64_BITS, start=1):
        assert reasons[number] == past_64_bits(literal, path), (number, literal, path)


@pytest.mark.parametrize(
    ("key", "literal", "reason"),
    [
        ("trial", "9223372036854775808", past_64_bits),
        ("trial", "18446744073709551616", past_64_bits),
        *(("cost_usd", literal, non_finite) for literal in ("nan", "-inf", "Infinity")),
    ],
)
@pytest.mark.slow
def test_a_record_large_enough_to_be_walked_level_by_level_is_judged_alike(
    tmp_path: Path, key: str, literal: str, reason: Callable[[str, str], str]
) -> None:
    # Past LARGE_SUSPECT_BYTES a suspect is walked one level at a time instead of by
    # json_tree: the same numbers must be refused, with the same path, the first in order.
    base = record("big")
    base["grade"]["metadata"]["padding"] = ["x" * 1000] * (ingest.LARGE_SUSPECT_BYTES // 1000)
    base["later"] = "LATER"  # a second bad number, after the first in document order
    line = replaced("big", f'"{key}": {json.dumps(base[key])}', f'"{key}": {literal}', base)
    line = line.replace('"LATER"', "1e999")
    assert len(line) > ingest.LARGE_SUSPECT_BYTES
    report, lake = ingest_lines(tmp_path, [line])
    assert report.quarantined == 1
    assert reasons_by_line(lake)[1] == reason(literal, f"$.{key}")


@pytest.mark.slow
def test_a_trial_between_2_53_and_2_63_is_kept_exactly(tmp_path: Path) -> None:
    exact = [2**53 + 1, 2**63 - 1, 2**62 + 3]
    lines = [json.dumps(record(f"r{i}", trial=trial)) for i, trial in enumerate(exact)]
    _, lake = ingest_lines(tmp_path, lines)
    runs = pl.read_parquet(lake / "task_runs" / "*.parquet").sort("run_id")
    assert runs["trial"].to_list() == exact


@pytest.mark.slow
def test_a_report_tool_count_past_64_bits_is_bad_input_not_a_crash(tmp_path: Path) -> None:
    report_text = (
        '{"server": {"name": "s", "version": "1", "tool_count": 9223372036854775808}, '
        '"generated_at": "2026-01-01T00:00:00Z", "findings": []}'
    )
    code, output = invoke(
        "run", str(write_jsonl(tmp_path / "r.jsonl", [report_text])), "--lake", str(tmp_path / "l")
    )
    assert code == 0, output
    assert reasons_by_line(tmp_path / "l")[1] == past_64_bits(
        "9223372036854775808", "$.server.tool_count"
    )


@pytest.mark.slow
def test_a_string_that_spells_nan_or_a_long_number_is_just_text(tmp_path: Path) -> None:
    text = {"reason": "nan, inf: ok", "id": "12345678901234567890123"}
    rec = record("r1")
    rec["grade"]["metadata"] = text
    report, _ = ingest_lines(tmp_path, [json.dumps(rec)])
    assert report.landed_task_runs == 1


# --- one reading of JSON: syntax and keys ----------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('"stack matched"}', '"stack matched",}'),
        ('"cwe": "CWE-787"', '"cwe": "CWE-787", "tags": [1, 2,]'),
        ('"cost_usd": 0.25', '"cost_usd": 0.25, "x": {"y": 1 , }'),
    ],
)
@pytest.mark.slow
def test_a_trailing_comma_is_not_json(tmp_path: Path, old: str, new: str) -> None:
    report, lake = ingest_lines(tmp_path, [replaced("r1", old, new)])
    assert report.quarantined == 1
    assert "a comma before a closing } or ]" in reasons_by_line(lake)[1]


@pytest.mark.slow
def test_a_comma_and_bracket_inside_a_string_is_fine(tmp_path: Path) -> None:
    rec = record("r1")
    rec["grade"]["metadata"] = {"reason": 'a, ] and ,} and \\",}'}
    report, _ = ingest_lines(tmp_path, [json.dumps(rec)])
    assert report.landed_task_runs == 1


def test_half_a_surrogate_pair_is_named_as_what_keeps_the_line_out(tmp_path: Path) -> None:
    # Python's json.dumps writes a lone surrogate as "\\ud800": JSON's grammar takes it,
    # DuckDB's reader does not, and "the line does not parse" sent a person looking for a
    # syntax error. A pair (an emoji) lands; an escaped backslash before "ud800" is text.
    lines = [
        json.dumps(dict(record(run_id), agent=agent))
        for run_id, agent in (
            ("r1", "x\ud800"),
            ("r2", "ok \U0001f600"),
            ("r3", "y\udc00z"),
            ("r4", "a \\ud800 b"),
        )
    ]
    # A plain syntax error beside an escaped backslash and "ud800" is only that.
    lines.append(json.dumps(dict(record("r5"), note="C:\\ud800dir"))[:-1] + ' "x"}')
    report, lake = ingest_lines(tmp_path, lines)
    assert (report.landed_task_runs, report.quarantined) == (2, 3)
    half = (
        "not valid JSON (the line does not parse): it holds a \\u escape of half a UTF-16 "
        "surrogate pair without the other half, which names no character (write the "
        "character itself, or its pair)"
    )
    assert reasons_by_line(lake) == {
        1: half,
        3: half,
        5: "not valid JSON (the line does not parse)",
    }


def _patch(run_id: str, sizes: dict[str, float]) -> dict[str, Any]:
    names = ("patch_verified", "number_of_attempts", "size_of_patch", "minimization")
    rec = record(run_id, env_type="patch")
    rec["grade"] = {
        "subscores": dict.fromkeys(names, 1.0),
        "weights": dict.fromkeys(names, 0.25),
        "metadata": {"minimization": sizes},
    }
    return rec


def _audit(run_id: str, **metadata: Any) -> dict[str, Any]:
    rec = record(run_id, env_type="audit", defect_id=None)
    rec["grade"] = {"subscores": {"audit": 0.25}, "weights": {"audit": 1.0}, "metadata": metadata}
    return rec


REPORT = (
    '{"server": {"name": "s", "version": "1"}, "generated_at": "2026-01-01T00:00:00Z", '
    '"findings": [], "grade": {"overall": 90.0}}'
)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            json.dumps(_patch("p1", {"final_size": 2, "minimal_size": 1, "x": 1})).replace(
                '"x"', '"final_size"'
            ),
            "grade.metadata.minimization names the key final_size more than once",
        ),
        (
            json.dumps(_audit("a1", recall=0.5, precision=0.5, x=1.0)).replace('"x"', '"recall"'),
            "grade.metadata names the key recall more than once",
        ),
        (
            json.dumps(_audit("a2", recall=0.5, precision=0.5, x=1.0)).replace(
                '"x"', '"precision"'
            ),
            "grade.metadata names the key precision more than once",
        ),
        (
            REPORT.replace('"findings": []', '"findings": [], "findings": [{"kind": "duplicate"}]'),
            "the report names the key findings more than once",
        ),
        (
            REPORT.replace('"name": "s"', '"name": "s", "name": "t"'),
            "server names the key name more than once",
        ),
        (
            REPORT.replace('"overall": 90.0', '"overall": 90.0, "overall": 10.0'),
            "grade names the key overall more than once",
        ),
    ],
)
@pytest.mark.slow
def test_a_key_named_twice_where_scoring_or_identity_reads_it_is_quarantined(
    tmp_path: Path, line: str, reason: str
) -> None:
    report, lake = ingest_lines(tmp_path, [line])
    assert report.quarantined == 1
    assert reason in reasons_by_line(lake)[1]


@pytest.mark.slow
def test_a_metadata_key_scoring_never_reads_may_be_named_twice(tmp_path: Path) -> None:
    rec = record("r1")
    rec["grade"]["metadata"] = {"note": 1, "other": 2}
    line = json.dumps(rec).replace('"other"', '"note"')
    report, lake = ingest_lines(tmp_path, [line])
    assert report.landed_task_runs == 1
    values = pl.read_parquet(lake / "run_metadata" / "*.parquet").filter(pl.col("key") == "note")
    assert sorted(values["value"].to_list()) == ["1", "2"]


# --- contract edges: timestamps and audits ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "utc"),
    [
        ("2026-11-30t12:00:00z", "2026-11-30 12:00:00+00:00"),
        ("2026-11-30T12:00:00.5+23:59", "2026-11-29 12:01:00.500000+00:00"),
        ("2016-12-31T23:59:60Z", "2016-12-31 23:59:59.999999+00:00"),
        ("2017-01-01T00:59:60+01:00", "2016-12-31 23:59:59.999999+00:00"),
        ("0001-01-01T00:00:00Z", "0001-01-01 00:00:00+00:00"),
    ],
)
@pytest.mark.slow
def test_rfc_3339_timestamps_land_as_their_instant(tmp_path: Path, text: str, utc: str) -> None:
    report, lake = ingest_lines(tmp_path, [json.dumps(record("r1", graded_at=text))])
    assert report.landed_task_runs == 1
    landed = pl.read_parquet(lake / "task_runs" / "*.parquet")["graded_at"][0]
    assert str(landed) == utc


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-30T12:00:00+99:99",
        "2026-11-30T12:00:00+24:00",
        "2026-11-30T24:00:00Z",
        "2026-11-30T12:60:00Z",
        "2026-11-30T12:00:60Z",  # a leap second not at the end of a UTC day
        "9999-12-31T23:59:59-14:00",  # year 10000 in UTC
        "2026-02-30T00:00:00Z",
        "2026-11-30T12:00:00",
    ],
)
@pytest.mark.slow
def test_timestamps_outside_rfc_3339_are_quarantined(tmp_path: Path, text: str) -> None:
    report, lake = ingest_lines(tmp_path, [json.dumps(record("r1", graded_at=text))])
    assert report.quarantined == 1
    assert reasons_by_line(lake)[1].startswith("field `graded_at` must be an RFC 3339 timestamp")
    assert text in reasons_by_line(lake)[1]


@pytest.mark.parametrize(
    ("metadata", "reason"),
    [
        ({"recall": 2, "precision": 0.5}, "`grade.metadata.recall` must lie in [0, 1], got 2"),
        ({"recall": 0.5, "precision": -1}, "`grade.metadata.precision` must lie in [0, 1], got -1"),
        ({"recall": "0.5", "precision": 0.5}, "`grade.metadata.recall` must be a number in [0, 1]"),
        (
            {"recall": 0.5, "precision": 0.5, "found": "D-1"},
            "field `grade.metadata.found` must be a list of defect ids, got VARCHAR",
        ),
    ],
)
@pytest.mark.slow
def test_audit_recall_and_precision_must_be_fractions(
    tmp_path: Path, metadata: dict[str, Any], reason: str
) -> None:
    report, lake = ingest_lines(tmp_path, [json.dumps(_audit("a1", **metadata))])
    assert report.quarantined == 1
    assert reason in reasons_by_line(lake)[1]


def test_an_audit_without_recall_lands_flagged(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    source = write_jsonl(tmp_path / "a.jsonl", [json.dumps(_audit("a1", precision=0.5))])
    jobs.run([source], lake, parse_rubric({}))
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    anomalies = con.execute("select anomalies from task_runs").fetchone()
    con.close()
    assert anomalies == (["audit_unverified:recall"],)


# --- every stored number is finite ------------------------------------------------------------


@pytest.mark.slow
def test_parts_that_sum_past_a_double_are_quarantined(tmp_path: Path) -> None:
    heavy = dict.fromkeys(record()["grade"]["weights"], 1e308)
    lines = [
        json.dumps(with_grade("p1", penalties={"a": 1e308, "b": 1e308}, allow_unbounded=True)),
        json.dumps(with_grade("w1", weights=heavy)),
        json.dumps(with_grade("ok", penalties={"a": 1e308})),
    ]
    report, lake = ingest_lines(tmp_path, lines)
    reasons = reasons_by_line(lake)
    assert reasons[1].startswith("grade.penalties add up to inf")
    assert reasons[2].startswith("grade.weights add up to inf")
    assert report.landed_task_runs == 1


@pytest.mark.slow
def test_huge_finite_totals_are_kept_out_of_every_mean_too(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    # Each run's score is finite (-1e300), but the mean of two is not: DuckDB sums first.
    huge = [
        json.dumps(with_grade(f"h{i}", penalties={"a": 1e300}, allow_unbounded=True))
        for i in range(2)
    ]
    source = write_jsonl(tmp_path / "a.jsonl", [*huge, json.dumps(record("ok"))])
    jobs.run([source], lake, parse_rubric({}))
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    statuses = con.execute("select status from task_runs order by run_id").fetchall()
    mean, se, low = con.execute(
        "select mean_score, score_se, score_ci_low from by_agent"
    ).fetchone()
    con.close()
    assert statuses == [("total_out_of_range",), ("total_out_of_range",), ("scored",)]
    assert mean == pytest.approx(0.85)
    assert se is None and low is None  # one scored run: no spread, never NaN or inf


@pytest.mark.slow
def test_a_total_that_overflows_under_the_rubric_is_kept_out_of_every_mean(
    tmp_path: Path,
) -> None:
    lake = tmp_path / "lake"
    # Finite at ingest (1e305 + 1e305), but x 1000 under penalty_scale it is not.
    big = json.dumps(with_grade("big", penalties={"a": 1e305, "b": 1e305}, allow_unbounded=True))
    source = write_jsonl(tmp_path / "a.jsonl", [big, json.dumps(record("ok"))])
    rubric = parse_rubric({"task": {"penalty_scale": 1000.0}})
    jobs.run([source], lake, rubric)
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    row = con.execute(
        "select status, score, penalty_total, weighted, score_as_graded, passed, anomalies "
        "from task_runs where run_id = 'big'"
    ).fetchone()
    mean, runs = con.execute("select mean_score, scored_runs from by_agent").fetchone()
    con.close()
    assert row == (
        "total_out_of_range",
        None,
        None,
        None,
        None,
        None,
        ["total_out_of_range:penalty_total,score,score_as_graded"],
    )
    # The mean is the good run's alone: 0.6 + 0.1 + 0.05 + 0.1 = 0.85.
    assert mean == pytest.approx(0.85)
    assert runs == 1


@pytest.mark.parametrize(
    ("given", "key"),
    [
        ({"task": {"penalty_scale": 1e308}}, "task.penalty_scale"),
        ({"task": {"penalty_scale": 10**400}}, "task.penalty_scale"),
        (
            {"task": {"patch": {"weights": {"minimization": 1.5}}}},
            "task.patch.weights.minimization",
        ),
        ({"task": {"audit": {"weights": {"audit": 1e308}}}}, "task.audit.weights.audit"),
        ({"task": {"minimization_multiple": 1e308}}, "task.minimization_multiple"),
        ({"surface": {"weights": {"schema_hygiene": 1e308}}}, "surface.weights.schema_hygiene"),
        ({"surface": {"merge_saved_scale": 1e308}}, "surface.merge_saved_scale"),
        ({"task": {"failure_threshold": 10**400}}, "task.failure_threshold"),
    ],
)
def test_a_rubric_number_out_of_bounds_is_refused_naming_the_key(
    given: dict[str, Any], key: str
) -> None:
    with pytest.raises(RubricError, match=f"rubric key {key} ="):
        parse_rubric(given)


def test_a_1e308_rubric_exits_2_before_any_work(tmp_path: Path) -> None:
    rubric = tmp_path / "r.toml"
    rubric.write_text("[task]\npenalty_scale = 1e308\n")
    lake = tmp_path / "l"
    code, output = invoke("run", str(tmp_path), "--lake", str(lake), "--rubric", str(rubric))
    assert code == 2
    assert "task.penalty_scale" in output
    assert not lake.exists()


def test_an_interval_that_is_not_finite_is_a_regression() -> None:
    verdicts = stats.verdict(
        [-math.inf, math.nan, 0.1, -0.2], [math.inf, math.nan, 0.3, 0.2], [10, 10, 10, 1]
    )
    assert list(verdicts) == ["regression", "regression", "improvement", "no_change"]


def test_json_output_never_holds_nan_or_inf() -> None:
    document = {"a": math.nan, "b": [math.inf, {"c": -math.inf}], "d": np.float64("nan"), "e": 1.5}
    text = jsonsafe.dumps(document)
    assert json.loads(text) == {"a": None, "b": [None, {"c": None}], "d": None, "e": 1.5}
