"""Ingest end to end on temporary lakes: every input line landed, quarantined or skipped."""

from __future__ import annotations

import errno
import gzip
import json
import threading
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

from pipeline.jobs import commands as jobs
from pipeline.jobs import ingest as ingest_job
from pipeline.jobs import land
from pipeline.jobs.ingest import ingest_locked
from pipeline.rubric import parse_rubric
from pipeline.sources.chunks import read_lines
from pipeline.storage import lake as lk
from tests.clirunner import pipeline, summary_counts
from tests.e2e.test_warehouse import TASK_VIEWS
from tests.surface_records import SMALL_REPORT, SMALL_REPORT_RUN_ID


def record(run_id: str = "r1", **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "run_id": run_id,
        "agent": "crab",
        "agent_version": "1.0.0",
        "problem_id": "p1",
        "env_type": "exploit",
        "graded_at": "2026-11-30T12:00:00+01:00",
        "defect_id": "D-1",
        "cwe": "CWE-787",
        "trial": 0,
        "cost_usd": 0.25,
        "grade": {
            "subscores": {
                "defect_matching": 1.0,
                "pov_quality": 0.5,
                "summary_quality": 0.5,
                "target_calls": 1.0,
            },
            "weights": {
                "defect_matching": 0.6,
                "pov_quality": 0.2,
                "summary_quality": 0.1,
                "target_calls": 0.1,
            },
            "metadata": {"defect_matching": {"reason": "stack matched"}},
        },
    }
    for key, value in overrides.items():
        if value is None:
            base.pop(key, None)
        else:
            base[key] = value
    return base


def with_grade(run_id: str, **grade: Any) -> dict[str, Any]:
    rec = record(run_id)
    rec["grade"] = {**rec["grade"], **grade}
    return rec


def write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def lines_of(*records: dict[str, Any]) -> list[str]:
    return [json.dumps(r) for r in records]


def count(lake: Path, table: str) -> int:
    files = sorted((lake / table).glob("*.parquet"))
    return sum(pl.read_parquet(f).height for f in files)


def quarantine(lake: Path) -> pl.DataFrame:
    files = sorted((lake / "quarantine").glob("*.parquet"))
    return pl.concat([pl.read_parquet(f) for f in files]) if files else pl.DataFrame()


BAD_LINES: list[tuple[str, str]] = [
    ("not json at all", "not valid JSON"),
    (json.dumps(record("m1", agent=None)), "missing required field `agent`"),
    (json.dumps(record("m2", trial="zero")), "field `trial` must be an integer"),
    (
        json.dumps(
            with_grade("m3", subscores={**record()["grade"]["subscores"], "pov_quality": 1.5})
        ),
        "grade.subscores.pov_quality must lie in [0, 1], got 1.5",
    ),
    ('{"run_id": "m4", "cost_usd": NaN}', "non-finite number"),
    (
        json.dumps(
            with_grade("m5", weights={**record()["grade"]["weights"], "target_calls": -0.1})
        ),
        "grade.weights.target_calls must be >= 0",
    ),
    (json.dumps(with_grade("m6", penalties={"loss": -1})), "grade.penalties.loss must be >= 0"),
    (
        json.dumps(with_grade("m7", weights={"defect_matching": 1.0})),
        "grade.subscores and grade.weights have different keys",
    ),
    (json.dumps(record("m8", env_type="fuzz")), "unknown env_type 'fuzz'"),
    (json.dumps(record("m9", graded_at="2026-11-30 12:00")), "RFC 3339"),
    ("[1, 2, 3]", "expected a JSON object"),
    (json.dumps(record("x" * 257)), "1 to 256 characters"),
]


@pytest.mark.slow
def test_each_bad_input_class_is_quarantined_with_its_reason(tmp_path: Path) -> None:
    good = json.dumps(record("ok-1"))
    source = write_jsonl(tmp_path / "mixed.jsonl", [good, *(line for line, _ in BAD_LINES)])
    report = jobs.ingest([source], tmp_path / "lake")
    assert report.lines_read == 1 + len(BAD_LINES)
    assert report.landed_task_runs == 1
    assert report.quarantined == len(BAD_LINES)
    assert report.accounted == report.lines_read
    rows = quarantine(tmp_path / "lake").sort("line")
    assert rows["line"].to_list() == list(range(2, 2 + len(BAD_LINES)))
    for (raw, reason), got_reason, got_raw, got_source in zip(
        BAD_LINES, rows["reason"], rows["raw"], rows["source"], strict=True
    ):
        assert reason in got_reason
        assert got_raw == raw
        assert got_source == str(source)


@pytest.mark.slow
def test_duplicates_skipped_and_clashes_quarantined(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    first = write_jsonl(tmp_path / "a.jsonl", lines_of(record("r1"), record("r2")))
    jobs.ingest([first], lake)
    changed = record("r2")
    changed["grade"]["subscores"]["pov_quality"] = 0.25
    second = write_jsonl(
        tmp_path / "b.jsonl",
        [*lines_of(record("r1"), changed, record("r3")), json.dumps(record("r3"))],
    )
    report = jobs.ingest([second], lake)
    assert report.landed_task_runs == 1  # r3 once
    assert report.skipped_duplicates == 2  # r1 (of the lake) and r3 (earlier in the batch)
    assert report.quarantined == 1
    reason = quarantine(lake)["reason"][0]
    assert "run_id 'r2' already landed with different content" in reason
    assert str(first) in reason
    assert count(lake, "task_runs") == 3


def test_an_exact_copy_of_a_clashing_line_clashes_too(tmp_path: Path) -> None:
    """A line whose exact text came earlier in the chunk shares its fate, the lake's verdict
    included: copies of a line that clashes with a landed run (or with an earlier line of the
    file) are quarantined with its reason, not counted as duplicates of a run never landed;
    a copy of a line that landed is a duplicate (CONTRACT 8: same run_id, same content)."""
    lake = tmp_path / "lake"
    jobs.ingest([write_jsonl(tmp_path / "a.jsonl", lines_of(record("r1")))], lake)
    other = record("r1", cost_usd=0.5)
    again = record("r2", cost_usd=0.5)
    second = write_jsonl(
        tmp_path / "b.jsonl",
        lines_of(other, other, record("r2"), again, again, record("r2")),
    )
    report = jobs.ingest([second], lake)
    assert (report.landed_task_runs, report.quarantined, report.skipped_duplicates) == (1, 4, 1)
    held = quarantine(lake).sort("line")
    assert held["line"].to_list() == [1, 2, 4, 5]
    reasons = held["reason"].to_list()
    assert all("run_id 'r1' already landed with different content" in r for r in reasons[:2])
    assert all("run_id 'r2' appears again with different content" in r for r in reasons[2:])
    assert report.lines_read == report.accounted == 6


def _landed_then_repeated(tmp_path: Path) -> tuple[Path, Path]:
    """A folder that lands one report and task run r1, and a later one whose first copy of
    each run_id changes it and whose second is byte for byte the landed one."""
    first, later = tmp_path / "first", tmp_path / "later"
    first.mkdir()
    later.mkdir()
    (first / "r.json").write_text(json.dumps(SMALL_REPORT))
    write_jsonl(first / "tasks.jsonl", lines_of(record("r1")))
    (later / "a_edited.json").write_text(json.dumps(dict(SMALL_REPORT, note="edited")))
    (later / "b_copy.json").write_text(json.dumps(SMALL_REPORT))
    write_jsonl(later / "tasks.jsonl", lines_of(record("r1", cost_usd=0.5), record("r1")))
    return first, later


def _clashes_with_the_landed_runs(lake: Path, first: Path, later: Path) -> None:
    """The quarantine holds the two changed copies alone, each naming the run it clashes
    with: the one landed from ``first``, never the other copy in ``later``."""
    held = quarantine(lake).sort("source").select("source", "line", "reason").rows()
    assert held == [
        (
            str(later / "a_edited.json"),
            1,
            f"surface run_id '{SMALL_REPORT_RUN_ID}' already landed with different content (from "
            f"{first / 'r.json'}:1); give the new attempt its own run_id",
        ),
        (
            str(later / "tasks.jsonl"),
            1,
            f"task run_id 'r1' already landed with different content (from "
            f"{first / 'tasks.jsonl'}:1); give the new attempt its own run_id",
        ),
    ]
    assert (count(lake, "surface_runs"), count(lake, "task_runs")) == (1, 1)


@pytest.mark.slow
def test_a_copy_of_a_landed_run_is_a_duplicate_after_a_copy_that_clashes_with_it(
    tmp_path: Path,
) -> None:
    # CONTRACT 8: once a run_id has landed, each copy is judged against the landed run: the
    # edited copies (a_edited.json, tasks.jsonl line 1) clash with it; the exact ones
    # (b_copy.json, tasks.jsonl line 2) are duplicates, though a copy before them in the
    # same ingest clashed. Lines 4 = landed 0 + quarantined 2 + duplicates 2.
    lake = tmp_path / "lake"
    first, later = _landed_then_repeated(tmp_path.resolve())
    assert pipeline("ingest", first, "--lake", lake).returncode == 0
    done = pipeline("ingest", later, "--lake", lake)
    assert done.returncode == 0, done.stderr
    counts = summary_counts(done)
    assert {k: counts[k] for k in ("lines", "task", "surface", "quarantined", "duplicates")} == {
        "lines": 4,
        "task": 0,
        "surface": 0,
        "quarantined": 2,
        "duplicates": 2,
    }
    _clashes_with_the_landed_runs(lake, first, later)
    checked = pipeline("check", "--lake", lake)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_copies_of_a_landed_run_in_later_chunks_are_judged_against_the_landed_run(
    tmp_path: Path,
) -> None:
    # One line a chunk: the same verdicts when the copies are in chunks of their own.
    lake = tmp_path / "lake"
    first, later = _landed_then_repeated(tmp_path.resolve())
    inputs = sorted(later.iterdir())
    with lk.lake_lock(lake):
        ingest_locked([first], lake)
    with lk.lake_lock(lake):
        report = ingest_locked(inputs, lake, chunk_bytes=1)
    assert (report.lines_read, report.landed_task_runs, report.landed_surface_runs) == (4, 0, 0)
    assert (report.quarantined, report.skipped_duplicates) == (2, 2)
    _clashes_with_the_landed_runs(lake, first, later)


@pytest.mark.slow
def test_a_run_id_landed_as_a_report_is_refused_to_a_task_grade(tmp_path: Path) -> None:
    # One run_id, one run: a task grade under a report's run_id had landed beside it, in a
    # later ingest or in the same one, and check then failed ("landed more than once").
    (tmp_path / "report.json").write_text(json.dumps(SMALL_REPORT))
    tasks = write_jsonl(tmp_path / "tasks.jsonl", lines_of(record(SMALL_REPORT_RUN_ID)))
    lake, together = tmp_path / "lake", tmp_path / "together"
    assert pipeline("ingest", tmp_path / "report.json", "--lake", lake).returncode == 0
    later = pipeline("ingest", tasks, "--lake", lake)
    both = pipeline("ingest", tmp_path / "report.json", tasks, "--lake", together)
    for done, surface in ((later, 0), (both, 1)):
        counts = summary_counts(done)
        assert (counts["surface"], counts["task"], counts["quarantined"]) == (surface, 0, 1)
    for landed in (lake, together):
        assert quarantine(landed)["reason"].to_list() == [
            f"task run_id '{SMALL_REPORT_RUN_ID}' is already a surface report's (from "
            f"{(tmp_path / 'report.json').resolve()}:1); give each run its own run_id"
        ]
        checked = pipeline("check", "--lake", landed)
        assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.slow
def test_later_chunks_dedupe_against_earlier_chunks_of_the_same_ingest(tmp_path: Path) -> None:
    # A chunk of 1 byte holds one line: each line is compared with what the chunks before
    # it staged (not yet in the lake) as well as with the lake.
    lake = tmp_path / "lake"
    changed = record("r2")
    changed["grade"]["subscores"]["pov_quality"] = 0.25
    files = [
        write_jsonl(tmp_path / "a.jsonl", [*lines_of(record("r1"), record("r2")), "not json"]),
        write_jsonl(tmp_path / "b.jsonl", lines_of(record("r1"), changed, record("r3"))),
        write_jsonl(tmp_path / "c.jsonl", [*lines_of(record("r3")), "not json"]),
    ]
    with lk.lake_lock(lake):
        first = ingest_locked(files, lake, chunk_bytes=1)
    assert len(first.parts) == 3  # the chunks that land a run: a.jsonl 1 and 2, b.jsonl 3
    assert (first.landed_task_runs, first.skipped_duplicates, first.quarantined) == (3, 2, 3)
    clash = quarantine(lake).filter(pl.col("source") == str(files[1]))["reason"].to_list()
    assert (
        len(clash) == 1
        and f"already landed with different content (from {files[0]}:2)" in (clash[0])
    )
    with lk.lake_lock(lake):
        again = ingest_locked(files, lake, chunk_bytes=1)
    assert (again.landed_task_runs, again.quarantined) == (0, 0)
    assert (again.skipped_duplicates, again.already_quarantined) == (5, 3)
    assert again.accounted == again.lines_read == 8
    assert count(lake, "task_runs") == 3


def test_chunks_are_built_ahead_in_order_and_at_most_two_are_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A chunk of 1 byte holds one line. The next chunk's batch is built while this one is
    # written, so two are held at a time; a third is read only once the first is written.
    lake = tmp_path / "lake"
    source = write_jsonl(tmp_path / "a.jsonl", lines_of(*(record(f"r{i}") for i in range(6))))
    held = {"read": 0, "written": 0, "most": 0}
    real_chunks, real_write = ingest_job.iter_line_chunks, land.Lander._write

    def counted(*args: Any, **kwargs: Any) -> Any:
        for lines in real_chunks(*args, **kwargs):
            held["read"] += 1
            held["most"] = max(held["most"], held["read"] - held["written"])
            yield lines

    def write(self: land.Lander, *args: Any) -> None:
        held["written"] += 1
        real_write(self, *args)

    monkeypatch.setattr(ingest_job, "iter_line_chunks", counted)
    monkeypatch.setattr(land.Lander, "_write", write)
    with lk.lake_lock(lake):
        report = ingest_locked([source], lake, chunk_bytes=1)
    assert held == {"read": 6, "written": 6, "most": 2}
    # Part N holds line N + 1: the parts are numbered in the order of the lines.
    landed = [
        pl.read_parquet(lake / "task_runs" / f"{part}.parquet").select("line", "run_id").row(0)
        for part in report.parts
    ]
    assert landed == [(i + 1, f"r{i}") for i in range(6)]


def test_a_lake_failure_while_the_next_chunk_is_built_stops_the_run_with_no_build_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = tmp_path / "lake"
    source = write_jsonl(tmp_path / "a.jsonl", lines_of(*(record(f"r{i}") for i in range(4))))

    def full(*_args: object, **_kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(lk.Transaction, "write", full)
    with lk.lake_lock(lake), pytest.raises(OSError, match="No space left"):
        ingest_locked([source], lake, chunk_bytes=1)
    # The chunk built ahead was waited for: no worker outlives the failed run.
    assert not [t for t in threading.enumerate() if t.name.startswith("build")]
    assert not list(lake.glob("task_runs/*.parquet"))


@pytest.mark.slow
def test_ingesting_a_file_twice_changes_nothing(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    source = write_jsonl(tmp_path / "a.jsonl", lines_of(record("r1"), record("r2")))
    jobs.ingest([source], lake)
    before = {t: count(lake, t) for t in ("task_runs", "task_components", "run_metadata")}
    again = jobs.ingest([source], lake)
    assert again.skipped_duplicates == 2
    assert again.landed_task_runs == 0
    assert {t: count(lake, t) for t in before} == before


@pytest.mark.slow
def test_unknown_fields_at_any_depth_are_kept(tmp_path: Path) -> None:
    rec = record("r1", grader_build="2026.11", extra={"nested": {"deep": [1, 2]}})
    rec["grade"]["novel"] = {"x": True}
    rec["grade"]["metadata"]["future_field"] = {"list": [{"a": 1}]}
    jobs.ingest([write_jsonl(tmp_path / "a.jsonl", lines_of(rec))], tmp_path / "lake")
    runs = pl.read_parquet(next((tmp_path / "lake" / "task_runs").glob("*.parquet")))
    assert json.loads(runs["record"][0]) == rec
    meta = pl.read_parquet(next((tmp_path / "lake" / "run_metadata").glob("*.parquet")))
    keyed = dict(zip(meta["key"], meta["value"], strict=True))
    assert keyed["future_field.list[0].a"] == "1"
    assert keyed["defect_matching.reason"] == '"stack matched"'


@pytest.mark.slow
def test_gzip_crlf_bom_and_blank_lines(tmp_path: Path) -> None:
    text = "\ufeff" + "\r\n".join(lines_of(record("r1"), record("r2"))) + "\r\n\r\n"
    gz = tmp_path / "a.jsonl.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    report = jobs.ingest([tmp_path], tmp_path / "lake")
    assert report.landed_task_runs == 2
    assert report.skipped_blank == 1
    assert report.accounted == report.lines_read == 3


@pytest.mark.slow
def test_gzip_that_ends_early_keeps_whole_lines(tmp_path: Path) -> None:
    body = "\n".join(lines_of(*(record(f"r{i}") for i in range(50)))).encode()
    blob = gzip.compress(body)
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(blob[: len(blob) * 2 // 3])
    report = jobs.ingest([cut], tmp_path / "lake")
    assert report.landed_task_runs >= 1
    assert report.quarantined == 1
    assert "ends early" in quarantine(tmp_path / "lake")["reason"][0]
    assert report.accounted == report.lines_read


@pytest.mark.slow
def test_invalid_utf8_is_quarantined_with_bytes_shown(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(json.dumps(record("r1")).encode() + b"\n" + b'{"run_id": "\xff\xfe"}\n')
    report = jobs.ingest([path], tmp_path / "lake")
    assert (report.landed_task_runs, report.quarantined) == (1, 1)
    row = quarantine(tmp_path / "lake").row(0, named=True)
    assert "not valid UTF-8" in row["reason"]
    assert "\\xff\\xfe" in row["raw"]


@pytest.mark.slow
def test_grader_error_lands_with_empty_parts(tmp_path: Path) -> None:
    rec = with_grade(
        "e1",
        subscores={},
        weights={},
        env_internal_failure=True,
        env_internal_failure_logs=["sandbox died"],
    )
    jobs.ingest([write_jsonl(tmp_path / "a.jsonl", lines_of(rec))], tmp_path / "lake")
    runs = pl.read_parquet(next((tmp_path / "lake" / "task_runs").glob("*.parquet")))
    assert runs["env_internal_failure"].to_list() == [True]
    assert runs["failure_logs"].to_list() == [["sandbox died"]]


def test_read_lines_numbers_lines_from_one(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "a.jsonl", ["{}", "{}", "{}"])
    frame = read_lines([path]).frame
    assert frame["line"].to_list() == [1, 2, 3]


@pytest.mark.slow
def test_new_env_type_lands_once_the_rubric_has_it(tmp_path: Path) -> None:
    rec = record("f1", env_type="fuzz")
    rec["grade"] = {"subscores": {"crash": 1.0}, "weights": {"crash": 1.0}}
    source = write_jsonl(tmp_path / "a.jsonl", lines_of(rec))
    assert jobs.ingest([source], tmp_path / "lake").quarantined == 1
    rubric = parse_rubric({"task": {"fuzz": {"gate": "crash", "weights": {"crash": 1.0}}}})
    assert jobs.ingest([source], tmp_path / "lake2", rubric).landed_task_runs == 1


@pytest.mark.slow
def test_cli_run_builds_a_warehouse_with_the_contract_views(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    source = write_jsonl(
        tmp_path / "a.jsonl",
        [*lines_of(record("r1"), record("r2", agent_version="1.1.0")), "garbage"],
    )
    done = pipeline("run", source, "--lake", lake)
    assert done.returncode == 0, done.stderr
    assert "warehouse.duckdb" in done.stdout
    con = duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True)
    views = {
        row[0] for row in con.execute("select table_name from information_schema.tables").fetchall()
    }
    for view in TASK_VIEWS:
        assert view in views
    scores = con.execute("select run_id, score from task_runs order by run_id").fetchall()
    # 0.6*1 + 0.2*0.5 + 0.1*0.5 + 0.1*1 = 0.85
    assert scores == [("r1", pytest.approx(0.85)), ("r2", pytest.approx(0.85))]
    assert con.execute("select count(*) from quarantine").fetchone() == (1,)
    con.close()


def test_missing_input_is_usage_error(tmp_path: Path) -> None:
    done = pipeline("ingest", tmp_path / "nope.jsonl", "--lake", tmp_path)
    assert done.returncode == 2
    assert "nope.jsonl" in done.stderr


@pytest.mark.slow
def test_a_key_named_twice_is_quarantined_not_guessed(tmp_path: Path) -> None:
    good = json.dumps(record("r1"))
    twice = good.replace('"agent": "crab"', '"agent": "crab", "agent": "lobster"', 1)
    report = jobs.ingest([write_jsonl(tmp_path / "a.jsonl", [twice])], tmp_path / "lake")
    assert report.quarantined == 1
    assert "names the key agent more than once" in quarantine(tmp_path / "lake")["reason"][0]


def test_chunks_of_blank_lines_between_records_are_counted(tmp_path: Path) -> None:
    """250,000 blank lines between records fill chunks of their own (100,000 lines a chunk):
    counted as blank without a parse, and the records on either side land."""
    lake = tmp_path / "lake"
    before = lines_of(*(record(f"b{i}") for i in range(3)))
    after = lines_of(*(record(f"a{i}") for i in range(3)))
    path = tmp_path / "gappy.jsonl.gz"
    path.write_bytes(gzip.compress(("\n".join([*before, *[""] * 250_000, *after]) + "\n").encode()))
    report = jobs.ingest([path], lake)
    assert (report.landed_task_runs, report.skipped_blank) == (6, 250_000)
    assert report.lines_read == report.accounted == 250_006
    assert pipeline("check", "--lake", lake).returncode == 0
    landed = pl.read_parquet(sorted((lake / "task_runs").glob("*.parquet"))).sort("line")
    assert landed["line"].to_list() == [1, 2, 3, 250_004, 250_005, 250_006]


def test_a_file_whose_runs_were_in_the_lake_is_not_said_to_have_landed_nothing(
    tmp_path: Path,
) -> None:
    """Read again with one bad line added, a file lands no line now, but its runs are in the
    lake: no 'none of its lines landed' note (the bad line is quarantined as ever)."""
    lake = tmp_path / "lake"
    path = write_jsonl(tmp_path / "a.jsonl", lines_of(record("r1"), record("r2")))
    jobs.ingest([path], lake)
    write_jsonl(path, [*lines_of(record("r1"), record("r2")), "not json"])
    report = jobs.ingest([path], lake)
    assert (report.skipped_duplicates, report.quarantined) == (2, 1)
    assert not any("none of its lines landed" in note for note in report.notes), report.notes
    # A file of nothing but bad lines is still said to have landed nothing.
    bad = write_jsonl(tmp_path / "b.jsonl", ["not json"])
    assert any("none of its lines landed" in n for n in jobs.ingest([bad], lake).notes)
