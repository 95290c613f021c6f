"""Issue 13: nothing lost, nothing leaked, nothing poisoned.

From the user's side: hostile lines are fed to `run`/`ingest`, then the lake and the
warehouse are read back. Each test names the hole it closes.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import shutil
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
from pipeline.jobs.prepare import INGEST_READS, prepare
from pipeline.jobs.results import IngestReport
from pipeline.rubric import RubricError, parse_rubric
from tests.e2e.test_ingest import quarantine, record, with_grade, write_jsonl
from tests.paths import SAMPLE

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


@pytest.mark.parametrize("literal", NON_FINITE)
@pytest.mark.parametrize(
    ("old", "path"),
    [
        ('"cost_usd": 0.25', "$.cost_usd"),
        ('"reason": "stack matched"', "$.grade.metadata.defect_matching.reason"),
        ('"summary_quality": 0.5', "$.grade.subscores.summary_quality"),
    ],
)
@pytest.mark.slow
def test_a_non_finite_literal_in_any_case_is_quarantined_naming_its_path(
    tmp_path: Path, literal: str, old: str, path: str
) -> None:
    key = old.split(":")[0]
    line = replaced("r1", old, f"{key}: {literal}")
    report, lake = ingest_lines(tmp_path, [line, json.dumps(record("ok"))])
    assert report.landed_task_runs == 1
    assert reasons_by_line(lake)[1] == f"non-finite number {literal} at {path}"


@pytest.mark.parametrize(
    ("literal", "path"),
    [
        ("9223372036854775808", "$.trial"),  # 2^63
        ("18446744073709551615", "$.trial"),  # 2^64 - 1
        ("18446744073709551616", "$.trial"),  # 2^64: DuckDB reads it as a rounded double
        ("-9223372036854775809", "$.trial"),  # -2^63 - 1
        ("123456789012345678901234567890", "$.grade.metadata.defect_matching.reason"),
    ],
)
@pytest.mark.slow
def test_an_integer_past_64_bits_is_quarantined_naming_its_path(
    tmp_path: Path, literal: str, path: str
) -> None:
    where = '"trial": 0' if path == "$.trial" else '"reason": "stack matched"'
    line = replaced("r1", where, f"{where.split(':')[0]}: {literal}")
    report, lake = ingest_lines(tmp_path, [line])
    assert report.quarantined == 1
    assert reasons_by_line(lake)[1] == (
        f"integer {literal} at {path} is outside the 64-bit range (-2^63 to 2^63-1)"
    )


@pytest.mark.parametrize(
    ("old", "literal", "reason"),
    [
        ('"trial": 0', "9223372036854775808", "integer {} at $.trial is outside the 64-bit"),
        ('"trial": 0', "18446744073709551616", "integer {} at $.trial is outside the 64-bit"),
        ('"cost_usd": 0.25', "nan", "non-finite number {} at $.cost_usd"),
        ('"cost_usd": 0.25', "-inf", "non-finite number {} at $.cost_usd"),
        ('"cost_usd": 0.25', "Infinity", "non-finite number {} at $.cost_usd"),
    ],
)
@pytest.mark.slow
def test_a_record_large_enough_to_be_walked_level_by_level_is_judged_alike(
    tmp_path: Path, old: str, literal: str, reason: str
) -> None:
    # Past LARGE_SUSPECT_BYTES a suspect is walked one level at a time instead of by
    # json_tree: the same numbers must be refused, with the same path, the first in order.
    base = record("big")
    base["grade"]["metadata"]["padding"] = ["x" * 1000] * (ingest.LARGE_SUSPECT_BYTES // 1000)
    base["later"] = "LATER"  # a second bad number, after the first in document order
    line = replaced("big", old, f"{old.split(':')[0]}: {literal}", base)
    line = line.replace('"LATER"', "1e999")
    assert len(line) > ingest.LARGE_SUSPECT_BYTES
    report, lake = ingest_lines(tmp_path, [line])
    assert report.quarantined == 1
    assert reasons_by_line(lake)[1].startswith(reason.format(literal))


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
    assert reasons_by_line(tmp_path / "l")[1].startswith(
        "integer 9223372036854775808 at $.server.tool_count is outside the 64-bit range"
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


# --- corruption is detected -------------------------------------------------------------------

SAMPLE_TASKS = SAMPLE / "tasks"


def _task_runs_count(lake: Path) -> int:
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    try:
        (runs,) = con.execute("select count(*) from task_runs").fetchone() or (0,)
    finally:
        con.close()
    return int(runs)


def _flip(path: Path, position: int, *, keep_mtime: bool) -> None:
    """One byte of ``path`` inverted; with ``keep_mtime`` the file looks untouched to stat."""
    before = path.stat()
    data = bytearray(path.read_bytes())
    data[position] ^= 0xFF
    path.write_bytes(bytes(data))
    if keep_mtime:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.fixture(scope="module")
def sample_runs(sample_lake: Path) -> int:
    """The task runs of the shared sample lake, which tests copy before they change it."""
    return _task_runs_count(sample_lake)


def _landed_file(lake: Path, table: str) -> Path:
    return next(p for p in sorted((lake / table).glob("*.parquet")) if p.stem != "empty")


FLIPS = random.Random(13)


@pytest.mark.parametrize("table", ["task_runs", "task_components", "run_metadata"])
@pytest.mark.slow
def test_every_single_byte_flip_of_a_landed_part_is_found_by_check(
    sample_lake: Path, tmp_path: Path, table: str
) -> None:
    original = sample_lake
    size = _landed_file(original, table).stat().st_size
    for position in sorted(FLIPS.sample(range(size), 6)):
        lake = tmp_path / f"lake-{position}"
        shutil.copytree(original, lake)  # copy2: mtimes kept, as a flip on disk keeps them
        target = _landed_file(lake, table)
        _flip(target, position, keep_mtime=True)
        code, output = invoke("check", "--lake", str(lake), "--json")
        assert code == 1, (position, output)
        violations = json.loads(output)["violations"]
        assert any(str(target) in v and "SHA-256" in v for v in violations), violations
        shutil.rmtree(lake)


@pytest.mark.slow
def test_a_corrupt_part_is_removed_before_scoring_reads_it_and_lands_again(
    sample_lake_copy: Path, sample_runs: int
) -> None:
    lake, runs = sample_lake_copy, sample_runs
    target = _landed_file(lake, "task_runs")
    _flip(target, target.stat().st_size // 2, keep_mtime=True)
    code, output = invoke("score", "--lake", str(lake))
    assert code == 0, output
    assert "does not match its manifest's SHA-256" in output
    assert "removed whole" in output
    assert _task_runs_count(lake) < runs
    code, output = invoke("run", str(SAMPLE_TASKS), "--lake", str(lake))
    assert code == 0, output
    assert _task_runs_count(lake) == runs
    assert invoke("check", "--lake", str(lake))[0] == 0


@pytest.mark.slow
def test_a_flip_with_the_mtime_kept_is_found_when_run_reads_the_part_to_dedupe(
    sample_lake_copy: Path, sample_runs: int
) -> None:
    lake, runs = sample_lake_copy, sample_runs
    target = _landed_file(lake, "task_runs")
    _flip(target, target.stat().st_size // 2, keep_mtime=True)
    code, output = invoke("run", str(SAMPLE_TASKS), "--lake", str(lake))
    assert code == 0, output
    assert "does not match its manifest's SHA-256" in output
    assert "removed whole" in output
    # Its sources were read again in the same run: nothing lost, nothing twice.
    assert _task_runs_count(lake) == runs
    assert invoke("check", "--lake", str(lake))[0] == 0


@pytest.mark.slow
@pytest.mark.parametrize("content", [b"", b"{not json", b'{"moves": 3}'])
def test_a_broken_commit_journal_is_named_and_the_lake_kept_as_last_committed(
    sample_lake_copy: Path, sample_runs: int, content: bytes
) -> None:
    lake, runs = sample_lake_copy, sample_runs
    stage = lake / "_staging" / "20990101T000000-dead"
    stage.mkdir(parents=True)
    staged = stage / "000000.parquet"
    pl.DataFrame({"x": [1]}).write_parquet(staged)
    (stage / "COMMIT.json").write_bytes(content)
    code, output = invoke("run", str(SAMPLE_TASKS), "--lake", str(lake))
    assert code == 0, output
    note = next(line for line in output.splitlines() if "COMMIT.json" in line)
    assert "not a valid commit journal" in note and "discarded" in note
    assert not stage.exists()
    assert _task_runs_count(lake) == runs
    assert invoke("check", "--lake", str(lake))[0] == 0


def small_inbox(inbox: Path) -> None:
    """Two nights' files of a few runs each: what the nightly tests below need of an inbox (the
    sample's 430 runs only made each command slower)."""
    inbox.mkdir()
    for night in range(2):
        write_jsonl(
            inbox / f"night-{night}.jsonl", [json.dumps(record(f"n{night}-{i}")) for i in range(4)]
        )


@pytest.mark.slow
def test_nightly_relands_a_part_changed_on_disk(tmp_path: Path) -> None:
    inbox, lake = tmp_path / "inbox", tmp_path / "lake"
    make_lake(tmp_path, lake)
    small_inbox(inbox)
    assert invoke("nightly", "--inbox", str(inbox), "--lake", str(lake))[0] == 0
    runs = _task_runs_count(lake)
    target = _landed_file(lake, "task_components")
    _flip(target, 100, keep_mtime=False)
    code, output = invoke("nightly", "--inbox", str(inbox), "--lake", str(lake))
    assert code == 0, output
    assert "does not match its manifest's SHA-256" in output
    assert _task_runs_count(lake) == runs
    assert invoke("check", "--lake", str(lake))[0] == 0


# --- broken state names itself ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("relative", "content", "named"),
    [
        ("_state/current_rubric.json", b"", "restored as rubric"),
        ("_state/current_rubric.json", b'{"rubric_id": 1}', "restored as rubric"),
        ("_state/rubrics.json", b"\xff\xfe", "rebuilt with the current rubric"),
        ("manifest", b"", "rebuilt from its"),
    ],
)
@pytest.mark.slow
def test_a_broken_state_file_is_named_and_repaired(
    sample_lake_copy: Path, sample_runs: int, relative: str, content: bytes, named: str
) -> None:
    lake, runs = sample_lake_copy, sample_runs
    path = (
        sorted((lake / "_parts").glob("*.json"))[0] if relative == "manifest" else lake / relative
    )
    path.write_bytes(content)
    code, output = invoke("check", "--lake", str(lake))
    assert code == 1
    # check names the file, or (for JSON of the wrong shape) the current rubric it holds.
    assert str(path) in output or "current rubric does not parse" in output
    code, output = invoke("score", "--lake", str(lake))
    assert code == 0, output
    note = next(line for line in output.splitlines() if str(path) in line)
    assert named in note
    assert _task_runs_count(lake) == runs
    assert invoke("check", "--lake", str(lake))[0] == 0, invoke("check", "--lake", str(lake))


@pytest.mark.slow
def test_a_current_rubric_nothing_else_names_is_removed_and_everything_rescored(
    sample_lake_copy: Path, sample_runs: int
) -> None:
    lake, runs = sample_lake_copy, sample_runs
    (lake / "_state" / "current_rubric.json").write_bytes(b"")
    (lake / "warehouse.duckdb").unlink()
    code, output = invoke("score", "--lake", str(lake))
    assert code == 0, output
    assert "current_rubric.json is not valid JSON" in output
    assert "rescores every part" in output
    assert _task_runs_count(lake) == runs


@pytest.mark.slow
def test_a_broken_ledger_is_named_and_reset_and_nightly_loses_nothing(tmp_path: Path) -> None:
    inbox, lake = tmp_path / "inbox", tmp_path / "lake"
    make_lake(tmp_path, lake)
    small_inbox(inbox)
    assert invoke("nightly", "--inbox", str(inbox), "--lake", str(lake))[0] == 0
    runs = _task_runs_count(lake)
    ledger = lake / "_state" / "ledger.json"
    ledger.write_bytes(b"")
    code, output = invoke("nightly", "--inbox", str(inbox), "--lake", str(lake))
    assert code == 0, output
    assert f"{ledger} is not valid JSON" in output
    assert "reset to empty" in output
    assert _task_runs_count(lake) == runs
    assert set(json.loads(ledger.read_text())) == {
        hashlib.sha256(p.read_bytes()).hexdigest() for p in inbox.iterdir()
    }


# --- a file read while still being written ---------------------------------------------------


@pytest.mark.slow
def test_a_cut_last_line_is_flagged_then_replaced_when_the_file_is_read_whole(
    tmp_path: Path,
) -> None:
    inbox, lake = tmp_path / "inbox", tmp_path / "lake"
    make_lake(tmp_path, lake)
    inbox.mkdir()
    whole = [json.dumps(record(f"r{i}")) for i in range(3)]
    growing = inbox / "day.jsonl"
    growing.write_text(whole[0] + "\n" + whole[1] + "\n" + whole[2][:40])
    code, output = invoke("nightly", "--inbox", str(inbox), "--lake", str(lake))
    assert code == 0, output
    assert f"{growing}: the last line has no newline" in " ".join(output.split())
    assert reasons_by_line(lake) == {3: "not valid JSON (the line does not parse)"}

    growing.write_text("".join(line + "\n" for line in whole))
    code, output = invoke("nightly", "--inbox", str(inbox), "--lake", str(lake))
    assert code == 0, output
    assert "1 earlier quarantine row(s) resolved" in " ".join(output.split())
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    try:
        landed = con.execute("select run_id from task_runs order by run_id").fetchall()
        held = con.execute("select count(*) from quarantine").fetchone()
    finally:
        con.close()
    assert landed == [("r0",), ("r1",), ("r2",)]
    assert held == (0,)
    assert invoke("check", "--lake", str(lake))[0] == 0


@pytest.mark.slow
def test_a_line_read_again_still_bad_keeps_one_quarantine_row(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    source = write_jsonl(tmp_path / "a.jsonl", ['{"run_id": "x", "cut'])
    jobs.ingest([source], lake)
    write_jsonl(source, [json.dumps(record("x", agent=None))])
    report = jobs.ingest([source], lake)
    assert report.quarantined == 1
    from pipeline.jobs.replay import unresolved

    rows = unresolved(lake)  # the older row is superseded by the newer reading of its place
    assert rows.height == 1
    assert "missing required field `agent`" in rows["reason"][0]


# --- reasons that name the actual problem -----------------------------------------------------


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            '{"server": {"name": "s", "version": "1"}, "generated_at": "2026-01-01T00:00:00Z"}',
            "findings is missing: expected a list",
        ),
        (
            '{"findings": [], "generated_at": "2026-01-01T00:00:00Z"}',
            "server is missing: expected an object",
        ),
    ],
)
@pytest.mark.slow
def test_half_a_report_is_judged_as_a_report(tmp_path: Path, line: str, reason: str) -> None:
    _, lake = ingest_lines(tmp_path, [line])
    rows = quarantine(lake)
    assert rows["record_kind"].to_list() == ["surface"]
    assert rows["reason"][0] == reason


@pytest.mark.slow
def test_a_part_key_named_twice_is_named_once_spelled_right(tmp_path: Path) -> None:
    line = replaced("r1", '"pov_quality": 0.5', '"pov_quality": 0.5, "pov_quality": 0.4')
    _, lake = ingest_lines(tmp_path, [line])
    assert "grade.subscores has the key pov_quality more than once" in reasons_by_line(lake)[1]


@pytest.mark.slow
def test_a_copied_lake_is_hashed_once_then_trusted_by_its_new_mtimes(
    sample_lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = sample_lake
    lake = tmp_path / "lake"
    shutil.copytree(original, lake, copy_function=shutil.copy)  # new mtimes
    from pipeline.storage import lake as lk
    from pipeline.storage import parts

    hashed: list[Path] = []
    real = parts.file_facts

    def counting(path: Path) -> dict[str, Any]:
        hashed.append(path)
        return real(path)

    monkeypatch.setattr(parts, "file_facts", counting)
    with lk.lake_lock(lake):
        assert prepare(lake) == []
    landed = [p for p in lake.glob("*/*.parquet") if p.stem != "empty"]
    assert sorted(hashed) == sorted(landed)
    hashed.clear()
    with lk.lake_lock(lake):
        assert prepare(lake) == []
    # Then only what ingest reads to dedupe is hashed again (a flip keeps the mtime).
    assert sorted(hashed) == sorted(p for p in landed if p.parent.name in INGEST_READS)
    assert any(p.parent.name not in INGEST_READS for p in landed)


def test_an_ungated_env_may_be_given_a_gate() -> None:
    rubric = parse_rubric({"task": {"audit": {"gate": "audit"}}})
    assert rubric.task.envs["audit"].gate == "audit"
    with pytest.raises(RubricError, match=r"task\.audit\.gate"):
        parse_rubric({"task": {"audit": {"gate": "recall"}}})


@pytest.mark.parametrize(
    ("finding", "reason"),
    [
        (
            '{"probe": "p", "kind": "duplicate", "kind": "distraction", "target": ["a"]}',
            "findings[0] names the key kind more than once",
        ),
        (
            '{"probe": "p", "kind": "distraction", "target": ["a"], '
            '"measurement": {"fire_rate": 0.1, "fire_rate": 0.9}}',
            "findings[0].measurement names the key fire_rate more than once",
        ),
    ],
)
@pytest.mark.slow
def test_a_finding_naming_a_key_twice_is_quarantined(
    tmp_path: Path, finding: str, reason: str
) -> None:
    line = REPORT.replace('"findings": []', f'"findings": [{finding}]')
    report, lake = ingest_lines(tmp_path, [line])
    assert report.quarantined == 1
    assert reason in reasons_by_line(lake)[1]


def make_lake(tmp_path: Path, lake: Path) -> None:
    """nightly works on a lake that run or ingest made (CONTRACT section 7): an empty one."""
    blank = tmp_path / "blank" / "blank.jsonl"
    blank.parent.mkdir(parents=True, exist_ok=True)
    blank.write_text("\n")
    assert invoke("run", str(blank), "--lake", str(lake))[0] == 0


# --- issue 13's acceptance walk, end to end --------------------------------------------------


def _warehouse_rows(lake: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.mark.slow
def test_issue_13_acceptance_walk_in_one_lake(tmp_path: Path) -> None:
    import gzip

    inbox, lake, outside = tmp_path / "inbox", tmp_path / "lake", tmp_path / "outside"
    inbox.mkdir()
    outside.mkdir()
    make_lake(tmp_path, lake)
    # A concatenated gzip (3 + 4 records), as `cat a.gz b.gz` makes.
    first = "".join(json.dumps(record(f"g{i}")) + "\n" for i in range(3)).encode()
    second = "".join(json.dumps(record(f"g{i}")) + "\n" for i in range(3, 7)).encode()
    (inbox / "day.jsonl.gz").write_bytes(gzip.compress(first) + gzip.compress(second))
    # A link to a file outside the inbox.
    secret = outside / "secret.jsonl"
    secret.write_text("root:SECRET-TEXT\n")
    (inbox / "link.jsonl").symlink_to(secret)
    # Penalties that overflow to infinity, lowercase nan in metadata, `findings` twice.
    overflow = with_grade("inf", penalties={"a": 1e308, "b": 1e308}, allow_unbounded=True)
    nan = replaced("nan", '"reason": "stack matched"', '"reason": nan')
    findings = REPORT.replace('"findings": []', '"findings": [], "findings": [{"kind": "x"}]')
    write_jsonl(inbox / "hostile.jsonl", [json.dumps(overflow), nan, findings])

    code, output = invoke("nightly", "--inbox", str(inbox), "--lake", str(lake))
    assert code == 0, output
    assert f"{inbox / 'link.jsonl'}: a symbolic link" in output
    assert _task_runs_count(lake) == 7  # every record of both gzip members
    reasons = dict(
        _warehouse_rows(lake, "select line, reason from quarantine where source like '%hostile%'")
    )
    assert reasons[1].startswith("grade.penalties add up to inf")
    assert reasons[2] == "non-finite number nan at $.grade.metadata.defect_matching.reason"
    assert "the report names the key findings more than once" in reasons[3]
    # Nothing of the file outside was read, anywhere in the lake.
    assert not any(b"SECRET-TEXT" in p.read_bytes() for p in lake.rglob("*") if p.is_file())
    # No non-finite value in any view's numbers.
    finite = (
        "select (select count(*) from task_runs where not isfinite(score))"
        " + (select count(*) from by_agent where not isfinite(mean_score_runs))"
    )
    assert _warehouse_rows(lake, finite) == [(0,)]
    assert invoke("check", "--lake", str(lake))[0] == 0

    # A deleted manifest, then a flipped byte (mtime kept): check names each, nightly mends
    # each from the sources, and nothing is lost.
    manifest = next(
        p
        for p in sorted((lake / "_parts").glob("*.json"))
        if "task_runs" in json.loads(p.read_text())["tables"]
    )
    manifest.unlink()
    code, output = invoke("check", "--lake", str(lake))
    assert code == 1 and f"part {manifest.stem} has no manifest" in output
    code, output = invoke("nightly", "--inbox", str(inbox), "--lake", str(lake))
    assert code == 0 and f"part {manifest.stem} had no manifest; rebuilt" in output
    assert _task_runs_count(lake) == 7
    target = _landed_file(lake, "task_runs")
    _flip(target, target.stat().st_size // 2, keep_mtime=True)
    code, output = invoke("check", "--lake", str(lake))
    assert code == 1 and str(target) in output
    code, output = invoke("nightly", "--inbox", str(inbox), "--lake", str(lake))
    assert code == 0 and "does not match its manifest's SHA-256" in output, output
    assert _task_runs_count(lake) == 7
    assert invoke("check", "--lake", str(lake))[0] == 0
