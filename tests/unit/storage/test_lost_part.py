"""The note a removed part leaves says what it held and what lands its runs again."""

from __future__ import annotations

from pathlib import Path

from pipeline.storage.parts import _lost_part

LAKE = Path("/data/my lake")

MANIFEST = {
    "tables": {"task_runs": 3, "task_components": 12, "surface_runs": 1},
    "sources": ["/in/b.jsonl", "/in/a.jsonl"],
}


def test_files_no_nightly_holds_are_named_to_ingest_again() -> None:
    assert _lost_part(LAKE, MANIFEST, {"/inbox/other.jsonl"}) == (
        "the part was removed whole (3 task_runs, 1 surface_runs); ingest again what it came "
        "from to land its runs again "
        "(`python -m pipeline ingest FILE ... --lake '/data/my lake'`): /in/a.jsonl, /in/b.jsonl"
    )


def test_files_the_nightly_ledger_held_are_read_again_by_the_next_nightly() -> None:
    note = _lost_part(LAKE, MANIFEST, {"/in/a.jsonl", "/in/b.jsonl"})
    assert note.endswith(
        "the nightly reads its inbox files again (this one, when it removed the part; else "
        "the next): /in/a.jsonl, /in/b.jsonl"
    )
    # One file the nightly does not hold: ingesting again is what lands everything.
    assert "ingest again" in _lost_part(LAKE, MANIFEST, {"/in/a.jsonl"})


def test_a_part_without_a_manifest_says_its_sources_are_not_known() -> None:
    assert _lost_part(LAKE, None, set()) == (
        "the part was removed whole; which input files it came from is not known"
    )
