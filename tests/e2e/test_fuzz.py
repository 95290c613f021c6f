"""Fuzzing ingest: every generated line is landed, quarantined or skipped, exactly once.

The big seeded run (4,000 lines, one ingest and a scoring; 10,000 under the soak profile)
checks each line's fate against what its generator says must happen; the hypothesis tests
throw whole mutated files (line endings, BOMs, gzip cut short, no final newline) at a fresh
lake and land them (what a file's layout can break is reading and landing; scoring and the
warehouse over every kind of line are the big run's).
"""

from __future__ import annotations

import gzip
import json
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.core.settings import MAX_DEPTH_ENV, MAX_RECORD_BYTES_ENV, SettingError, Settings
from pipeline.ingest.quarantine import quarantined_lines
from pipeline.jobs import commands as jobs
from pipeline.jobs.ingest import ingest_locked
from pipeline.jobs.results import IngestReport
from pipeline.rubric import parse_rubric
from pipeline.sources.problems import nesting_depth
from pipeline.storage import lake as lk
from tests.examples import examples, sized
from tests.strategies import (
    Expect,
    GeneratedFile,
    Line,
    corpus,
    jsonl_bytes,
    mutated_files,
    surface_report,
    task_record,
)

SEED = 20261202
BIG_RUN_LINES = sized(2_000, 10_000)
# Each example lands whole files into a fresh lake (a few tenths of a second), so the
# counts stay modest; the big run is where the volume is.
FUZZ_SETTINGS = settings(
    max_examples=examples(12),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def land(sources: list[Path], lake: Path) -> IngestReport:
    """Land ``sources`` into ``lake`` without scoring it or building its warehouse."""
    with lk.lake_lock(lake):
        return ingest_locked(sources, lake)


def lake_rows(lake: Path, table: str) -> pl.DataFrame:
    files = [f for f in sorted((lake / table).glob("*.parquet"))]
    return pl.concat([pl.read_parquet(f) for f in files]) if files else pl.DataFrame()


def lake_count(lake: Path, table: str) -> int:
    """Rows of a table; for the quarantine, the lines its rows stand for (blocks count whole)."""
    rows = lake_rows(lake, table)
    if table == "quarantine" and rows.height:
        return quarantined_lines(rows)
    return rows.height


def assert_accounted(report: IngestReport, lake: Path) -> None:
    """The report adds up, and the lake holds exactly what the report says landed."""
    assert report.accounted == report.lines_read
    assert lake_count(lake, "task_runs") == report.landed_task_runs
    assert lake_count(lake, "surface_runs") == report.landed_surface_runs
    assert lake_count(lake, "quarantine") == report.quarantined


def check_fates(lines: list[Line], source: Path, lake: Path, report: IngestReport) -> None:
    """Each line's fate is the one its generator promised."""
    runs = lake_rows(lake, "task_runs")
    surfaces = lake_rows(lake, "surface_runs")
    quarantine = lake_rows(lake, "quarantine")
    landed_ids = set(runs["run_id"]) if runs.height else set()
    landed_ids |= set(surfaces["run_id"]) if surfaces.height else set()
    # A block row (past a file's first N bad lines) stands for lines line..line_end.
    quarantined_lines = (
        set(
            quarantine.filter(pl.col("source") == str(source))
            .select(pl.int_ranges("line", pl.col("line_end").fill_null(pl.col("line")) + 1))
            .explode("line")["line"]
        )
        if quarantine.height
        else set()
    )
    for number, line in enumerate(lines, start=1):
        where = f"line {number} ({line.kind}, mutation {line.mutation})"
        if line.expect is Expect.LAND:
            assert line.run_id in landed_ids, f"{where} should have landed"
            assert number not in quarantined_lines, f"{where} landed and was quarantined"
        elif line.expect is Expect.QUARANTINE:
            assert number in quarantined_lines, f"{where} should be quarantined"
    expected = Counter(line.expect for line in lines)
    assert report.skipped_duplicates == expected[Expect.DUPLICATE]
    assert report.skipped_blank == expected[Expect.BLANK]
    if quarantine.height:
        assert quarantine["reason"].str.len_chars().min() > 0  # type: ignore[operator]


@pytest.mark.slow
def test_thousands_of_seeded_lines_each_meet_their_fate(tmp_path: Path) -> None:
    lines = corpus(BIG_RUN_LINES, seed=SEED)
    source = tmp_path / "fuzz.jsonl"
    source.write_bytes(jsonl_bytes(lines))
    lake = tmp_path / "lake"
    report = jobs.ingest([source], lake)
    assert report.lines_read == BIG_RUN_LINES
    assert_accounted(report, lake)
    check_fates(lines, source, lake, report)
    # Every mutation was tried, and both kinds of record landed (in the generator's shares:
    # over 40% task runs, over 5% surface reports).
    assert len({line.mutation for line in lines}) > 40
    assert report.landed_task_runs > BIG_RUN_LINES * 4 // 10
    assert report.landed_surface_runs > BIG_RUN_LINES // 20
    # Quarantined text is the line as it arrived (valid UTF-8 lines, under the limit), for
    # the first N bad lines of the file; the rest are blocks without text.
    quarantine = lake_rows(lake, "quarantine")
    in_full = quarantine.filter(pl.col("line_end").is_null())
    assert in_full.height == min(Settings().keep_bad_lines, report.quarantined)
    by_line = dict(zip(in_full["line"], in_full["raw"], strict=True))
    for number, line in enumerate(lines, start=1):
        if number in by_line and line.mutation not in ("invalid_utf8",):
            assert by_line[number] == line.data.decode("utf-8").removeprefix("\ufeff") or (
                line.mutation == "bom_mid_file"
            )
    # The warehouse shows the same counts as the lake.
    jobs.score(lake, parse_rubric({}))
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    try:
        assert con.execute("select count(*) from task_runs").fetchone() == (
            report.landed_task_runs,
        )
        assert con.execute("select count(*) from surface_runs").fetchone() == (
            report.landed_surface_runs,
        )
        assert con.execute("select sum(lines) from quarantine").fetchone() == (report.quarantined,)
    finally:
        con.close()
    # A second ingest of the same file changes nothing and counts every line again.
    again = jobs.ingest([source], lake)
    assert again.accounted == again.lines_read == BIG_RUN_LINES
    assert (again.landed_task_runs, again.landed_surface_runs, again.quarantined) == (0, 0, 0)
    assert lake_count(lake, "task_runs") == report.landed_task_runs


def expected_line_count(generated: GeneratedFile) -> int:
    body = generated.data
    if generated.name.endswith(".gz"):
        body = gzip.decompress(body)
    body = body.removeprefix(b"\xef\xbb\xbf")
    if not body:
        return 0
    return body.count(b"\n") + (0 if body.endswith(b"\n") else 1)


@pytest.mark.slow
@FUZZ_SETTINGS
@given(generated=mutated_files())
def test_mutated_files_account_for_every_line(generated: GeneratedFile) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        source = root / generated.name
        source.write_bytes(generated.data)
        lake = root / "lake"
        report = land([source], lake)
        assert_accounted(report, lake)
        if generated.gzip_cut:
            quarantine = lake_rows(lake, "quarantine")
            reasons = list(quarantine["reason"]) if quarantine.height else []
            # A cut stream says so, on its last line or, with nothing readable, at line 0.
            assert any("gzip" in r for r in reasons)
        else:
            assert report.lines_read == expected_line_count(generated)
            check_fates(generated.lines, source, lake, report)


@pytest.mark.slow
@settings(FUZZ_SETTINGS, max_examples=examples(4))
@given(seed=st.integers(min_value=0, max_value=2**32 - 1), crlf=st.booleans())
def test_a_report_file_lands_once_however_it_is_laid_out(seed: int, crlf: bool) -> None:
    import random

    report = surface_report(random.Random(seed), f"report-{seed}")
    text = json.dumps(report, indent=2, ensure_ascii=False)
    if crlf:
        text = text.replace("\n", "\r\n")
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "report.json"
        source.write_bytes(b"\xef\xbb\xbf" + text.encode())
        lake = Path(tmp) / "lake"
        got = land([source], lake)
        assert (got.lines_read, got.landed_surface_runs) == (1, 1)
        assert_accounted(got, lake)
        # Cut short, the same file is one quarantined line, not a crash.
        source.write_bytes(text.encode()[: len(text) // 2])
        cut = land([source], Path(tmp) / "lake2")
        assert (cut.lines_read, cut.quarantined) == (1, 1)


@pytest.mark.slow
def test_empty_and_unreadable_files_are_counted(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "empty.jsonl.gz").write_bytes(gzip.compress(b""))
    (tmp_path / "zero.jsonl.gz").write_bytes(b"")
    (tmp_path / "notgzip.jsonl.gz").write_bytes(b"plain text, not gzip\n")
    (tmp_path / "empty.json").write_bytes(b"   \n")
    report = jobs.ingest([tmp_path], tmp_path / "lake")
    assert_accounted(report, tmp_path / "lake")
    quarantine = lake_rows(tmp_path / "lake", "quarantine")
    by_source = {
        Path(s).name: r for s, r in zip(quarantine["source"], quarantine["reason"], strict=True)
    }
    assert "zero.jsonl.gz" in by_source and "gzip" in by_source["zero.jsonl.gz"]
    assert "not a readable gzip" in by_source["notgzip.jsonl.gz"]
    # An empty JSON Lines file has no line; an empty report is a report that is not there.
    assert {"empty.jsonl", "empty.jsonl.gz"}.isdisjoint(by_source)
    assert by_source["empty.json"] == "the report file is empty (no JSON object in it)"


@pytest.mark.slow
def test_files_that_are_not_utf8_or_not_jsonl_are_named_and_the_rest_land(
    tmp_path: Path,
) -> None:
    import random

    rng = random.Random(SEED)
    good = tmp_path / "a_good.jsonl"
    good.write_text("\n".join(json.dumps(task_record(rng, f"g{i}")) for i in range(5)) + "\n")
    latin1 = tmp_path / "b_latin1.jsonl"
    latin1.write_bytes('{"agent": "Müller"}\n'.encode("latin-1"))
    binary = tmp_path / "c_binary.jsonl"
    binary.write_bytes(bytes(range(256)) * 4)
    csv = tmp_path / "d_table.jsonl"
    csv.write_text("run_id,agent,score\nr1,crab,0.5\n")
    utf16 = tmp_path / "e_utf16.jsonl"
    utf16.write_bytes(json.dumps(task_record(rng, "u16")).encode("utf-16"))
    lake = tmp_path / "lake"
    report = jobs.ingest([tmp_path], lake)
    assert_accounted(report, lake)
    assert report.landed_task_runs == 5
    quarantine = lake_rows(lake, "quarantine")
    reasons: dict[str, set[str]] = {}
    for source, reason in zip(quarantine["source"], quarantine["reason"], strict=True):
        reasons.setdefault(Path(source).name, set()).add(reason)
    assert any("UTF-8" in r for r in reasons["b_latin1.jsonl"])
    assert any("UTF-8" in r for r in reasons["c_binary.jsonl"])
    assert reasons["d_table.jsonl"] == {"not valid JSON (the line does not parse)"}
    assert any("UTF-8" in r for r in reasons["e_utf16.jsonl"])
    assert "a_good.jsonl" not in reasons


# ----------------------------------------------------------------------------------- limits


def _record_line(run_id: str, **metadata: Any) -> str:
    import random

    record = task_record(random.Random(1), run_id)
    record["grade"]["metadata"] = metadata
    return json.dumps(record)


@pytest.mark.slow
def test_record_size_limit_is_configurable_and_quarantines_with_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert Settings.from_env().max_record_bytes == 16 * 1024 * 1024
    monkeypatch.setenv(MAX_RECORD_BYTES_ENV, "4096")
    small = _record_line("small", log="x" * 100)
    big = _record_line("big", log="x" * 10_000)
    source = tmp_path / "a.jsonl"
    source.write_text(small + "\n" + big + "\n")
    report = jobs.ingest([source], tmp_path / "lake")
    assert (report.landed_task_runs, report.quarantined) == (1, 1)
    row = lake_rows(tmp_path / "lake", "quarantine").row(0, named=True)
    assert row["line"] == 2
    assert "over the limit of 4096 bytes" in row["reason"]
    assert MAX_RECORD_BYTES_ENV in row["reason"]
    # Only a prefix is kept: 1024 characters and an ellipsis.
    assert row["raw"] == big[:1024] + "…"


@pytest.mark.slow
def test_nesting_limit_is_configurable_and_quarantines_with_the_depth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert Settings.from_env().max_depth == 64
    # record {1} > grade {2} > metadata {3} > {"b": ..} {4} > {"c": ..} {5} > [1] {6}
    shallow = _record_line("shallow", a={"b": 1})  # depth 4
    deep = _record_line("deep", a={"b": {"c": [1]}})  # depth 6
    monkeypatch.setenv(MAX_DEPTH_ENV, "5")
    source = tmp_path / "a.jsonl"
    source.write_text(shallow + "\n" + deep + "\n")
    report = jobs.ingest([source], tmp_path / "lake")
    assert (report.landed_task_runs, report.quarantined) == (1, 1)
    reason = lake_rows(tmp_path / "lake", "quarantine")["reason"][0]
    assert reason == (
        "record nests 6 levels deep, over the limit of 5 "
        f"(the limit is set by --max-depth or {MAX_DEPTH_ENV})"
    )


@pytest.mark.slow
def test_a_million_levels_deep_is_quarantined_quickly(tmp_path: Path) -> None:
    # 2 MB of brackets: under the size limit, far over the depth limit.
    source = tmp_path / "a.jsonl"
    source.write_text('{"a":' * 1_000_000 + "1" + "}" * 1_000_000 + "\n[[[[\n")
    report = jobs.ingest([source], tmp_path / "lake")
    assert report.quarantined == 2 and report.accounted == 2
    reasons = sorted(lake_rows(tmp_path / "lake", "quarantine")["reason"])
    assert "record nests 1000000 levels deep, over the limit of 64" in reasons[1]
    assert reasons[0] == "not valid JSON (the line does not parse)"


@pytest.mark.parametrize("value", ["0", "-5", "lots", "1.5"])
def test_a_bad_limit_setting_is_refused_by_name(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MAX_DEPTH_ENV, value)
    with pytest.raises(SettingError, match=MAX_DEPTH_ENV):
        Settings.from_env()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab,:'),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=30,
)


def python_depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((python_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((python_depth(v) for v in value.values()), default=0)
    return 0


@pytest.mark.slow
@settings(max_examples=examples(20), deadline=None, derandomize=True)
@given(values=st.lists(json_values, min_size=1, max_size=20))
def test_text_depth_equals_parsed_depth(values: list[Any]) -> None:
    # Brackets and quotes inside strings (escaped by json.dumps) never count.
    texts = [json.dumps(v) for v in values]
    got = pl.DataFrame({"raw": texts}).select(nesting_depth(pl.col("raw")))["raw"].to_list()
    assert got == [python_depth(v) for v in values]
