"""A run_id's copies in a batch (CONTRACT 8): each is judged against the run the lake holds
under that run_id, else against the batch's first copy, which lands. The same content is a
duplicate, other content a clash quarantined with where that reference came from."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

from pipeline.ingest.dedupe import Deduped
from tests.batches import batch_of, deduped, landed_as
from tests.surface_records import SMALL_REPORT as REPORT
from tests.surface_records import SMALL_REPORT_RUN_ID as REPORT_RUN_ID

LANDED_CLASH = (
    "{} run_id '{}' already landed with different content (from old.jsonl:1); give the new "
    "attempt its own run_id"
)
BATCH_CLASH = (
    "{} run_id '{}' appears again with different content (first at f.jsonl:1); give each "
    "attempt its own run_id"
)


def _places(result: Deduped) -> dict[str, list[int]]:
    """Where each line of ``f.jsonl`` ended: the lines landed, quarantined and skipped as
    duplicates by dedupe (an exact copy of a line's text earlier in the chunk is set apart
    while parsing, and counted in ``skipped_duplicates`` only)."""
    tables = result.batch.tables  # what lands
    landed = pl.concat([tables[t].select("line") for t in ("task_runs", "surface_runs")])
    return {
        "landed": sorted(landed["line"]),
        "quarantined": sorted(result.batch.quarantine["line"]),
        "duplicates": sorted(result.duplicate_rows["line"]),
    }


def test_a_copy_of_a_landed_task_run_is_a_duplicate_after_a_line_that_clashes_with_it(
    task_record: Callable[..., dict[str, Any]],
) -> None:
    # The lake holds r1 as ``same``. Line 1 changes it (a clash with the lake); the lines
    # after it are judged against the lake's run, not against line 1, which never lands:
    # line 2 is the lake's content (a duplicate), line 3 the exact text of line 2 (a copy of
    # a duplicate, found while parsing), line 4 the lake's content spelled otherwise (a
    # duplicate), line 5 line 1's content spelled otherwise (a clash with the lake too).
    same = task_record("r1", "exploit", {"defect_matching": 1.0})
    edited = task_record("r1", "exploit", {"defect_matching": 0.5})
    lake = [landed_as(batch_of([same]), "task_runs", "old.jsonl", 1)]
    batch = batch_of([edited, same, same, same, edited], indent=[None, None, None, 1, 1])
    result = deduped(batch, landed_runs=lake)
    assert _places(result) == {"landed": [], "quarantined": [1, 5], "duplicates": [2, 4]}
    assert result.skipped_duplicates == 3  # lines 2, 3 and 4
    assert result.batch.quarantine["reason"].to_list() == [LANDED_CLASH.format("task", "r1")] * 2
    assert result.duplicate_rows["run_id"].to_list() == ["r1", "r1"]
    assert result.batch.tables["task_components"].is_empty()


def test_copies_of_a_new_task_run_id_are_judged_against_the_first_which_lands(
    task_record: Callable[..., dict[str, Any]],
) -> None:
    # No run r2 in the lake: line 1 lands, line 2 (other content) clashes with it, line 3
    # (line 1's content spelled otherwise) is its duplicate.
    first = task_record("r2", "exploit", {"defect_matching": 0.5})
    other = task_record("r2", "exploit", {"defect_matching": 1.0})
    result = deduped(batch_of([first, other, first], indent=[None, None, 1]))
    assert _places(result) == {"landed": [1], "quarantined": [2], "duplicates": [3]}
    assert result.batch.quarantine["reason"].to_list() == [BATCH_CLASH.format("task", "r2")]
    assert result.skipped_duplicates == 1


def test_a_copy_of_a_landed_report_is_a_duplicate_after_a_report_that_clashes_with_it() -> None:
    # The surface side of the first test: the lake holds REPORT. Line 1 adds a note (a clash
    # with the lake); line 2 is REPORT (a duplicate of the lake's, not a clash with line 1),
    # line 3 REPORT spelled otherwise (a duplicate), line 4 line 1 spelled otherwise (a clash
    # with the lake). None lands, so no finding either.
    edited = dict(REPORT, note="edited")
    lake = [landed_as(batch_of([REPORT]), "surface_runs", "old.jsonl", 1)]
    batch = batch_of([edited, REPORT, REPORT, edited], indent=[None, None, 1, 1])
    result = deduped(batch, landed_surfaces=lake)
    assert _places(result) == {"landed": [], "quarantined": [1, 4], "duplicates": [2, 3]}
    assert (
        result.batch.quarantine["reason"].to_list()
        == [LANDED_CLASH.format("surface", REPORT_RUN_ID)] * 2
    )
    assert result.duplicate_rows["run_id"].to_list() == [REPORT_RUN_ID] * 2
    assert result.skipped_duplicates == 2
    assert result.batch.tables["surface_findings"].is_empty()


def test_copies_of_a_new_report_run_id_are_judged_against_the_first_which_lands() -> None:
    # No such run in the lake: line 1 lands with its one finding; line 2 (other content)
    # clashes with it; line 3 (line 1 spelled otherwise) is its duplicate.
    other = dict(REPORT, note="edited")
    result = deduped(batch_of([REPORT, other, REPORT], indent=[None, None, 1]))
    assert _places(result) == {"landed": [1], "quarantined": [2], "duplicates": [3]}
    assert result.batch.quarantine["reason"].to_list() == [
        BATCH_CLASH.format("surface", REPORT_RUN_ID)
    ]
    findings = result.batch.tables["surface_findings"]
    assert findings.select("row_nr", "run_id", "kind").rows() == [(0, REPORT_RUN_ID, "duplicate")]
    assert result.skipped_duplicates == 1


OTHER_KIND = "{} run_id '{}' is already a {}'s (from {}); give each run its own run_id"


def test_a_run_id_is_one_runs_whether_a_task_grade_or_a_report(
    task_record: Callable[..., dict[str, Any]],
) -> None:
    # A task grade under a run_id the lake holds as a report (and the reverse) had landed
    # beside it: check then failed with "run_id landed more than once".
    task = task_record(REPORT_RUN_ID, "exploit", {"defect_matching": 1.0})
    landed_report = [landed_as(batch_of([REPORT]), "surface_runs", "old.jsonl", 1)]
    result = deduped(batch_of([task]), landed_surfaces=landed_report)
    assert _places(result) == {"landed": [], "quarantined": [1], "duplicates": []}
    assert result.batch.quarantine["reason"].to_list() == [
        OTHER_KIND.format("task", REPORT_RUN_ID, "surface report", "old.jsonl:1")
    ]
    assert result.batch.tables["task_components"].is_empty()
    landed_task = [landed_as(batch_of([task]), "task_runs", "old.jsonl", 3)]
    result = deduped(batch_of([REPORT]), landed_runs=landed_task)
    assert _places(result) == {"landed": [], "quarantined": [1], "duplicates": []}
    assert result.batch.quarantine["reason"].to_list() == [
        OTHER_KIND.format("surface", REPORT_RUN_ID, "task grade", "old.jsonl:3")
    ]
    assert result.batch.tables["surface_findings"].is_empty()
    # In one batch, the first line of the run_id lands and the other kind's clashes with it.
    result = deduped(batch_of([REPORT, task, dict(REPORT, note="x")]))
    assert _places(result) == {"landed": [1], "quarantined": [2, 3], "duplicates": []}
    assert result.batch.quarantine.sort("line")["reason"].to_list() == [
        OTHER_KIND.format("task", REPORT_RUN_ID, "surface report", "f.jsonl:1"),
        BATCH_CLASH.format("surface", REPORT_RUN_ID),
    ]


def test_copies_after_a_line_of_the_other_kind_are_not_judged_against_it(
    task_record: Callable[..., dict[str, Any]],
) -> None:
    # The report holds the run_id: the task grade after it is refused, and so is that task
    # spelled otherwise (it had been a duplicate of a run that lands nowhere).
    task = task_record(REPORT_RUN_ID, "exploit", {"defect_matching": 1.0})
    result = deduped(batch_of([REPORT, task, task], indent=[None, None, 1]))
    assert _places(result) == {"landed": [1], "quarantined": [2, 3], "duplicates": []}
    assert (
        result.batch.quarantine["reason"].to_list()
        == [OTHER_KIND.format("task", REPORT_RUN_ID, "surface report", "f.jsonl:1")] * 2
    )
    # An Inspect attempt under such a run_id is refused with it; the same attempt under its
    # own run_id is then the attempt's first copy, and lands (it had been carried over to
    # the refused line, and the attempt landed nowhere).
    run_id = "inspect:E1/1#1"
    inspect_task = task_record(run_id, "exploit", {"defect_matching": 1.0})
    inspect_task["grade"]["metadata"] = {"inspect": {"sample_uuid": "U1", "eval_id": "E1"}}
    retry = dict(inspect_task, run_id="inspect:E2/1#1")
    result = deduped(batch_of([dict(REPORT, run_id=run_id), inspect_task, retry]))
    assert _places(result) == {"landed": [1, 3], "quarantined": [2], "duplicates": []}
    assert result.batch.tables["task_runs"]["run_id"].to_list() == ["inspect:E2/1#1"]
