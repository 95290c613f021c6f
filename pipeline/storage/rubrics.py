"""The lake's rubric state: which rubric it is scored under, and every rubric it knows.

``current_rubric`` (state file current_rubric.json) changes only with an explicit
rubric; ``rubrics`` (rubrics.json) is the lineage of every rubric scores were filed
under, so one rubric_id never names two contents.
"""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.rubric import Rubric, RubricError, parse_rubric
from pipeline.storage import lake as lk
from pipeline.storage.state import CURRENT_RUBRIC, RUBRICS
from pipeline.storage.store import LakeStore


def current_rubric(lake: Path) -> Rubric | None:
    """The rubric the lake was last scored with, from its state."""
    document = LakeStore(lake).read_state(CURRENT_RUBRIC, None)
    if document is None:
        return None
    if not (isinstance(document, dict) and isinstance(document.get("resolved"), dict)):
        # Another shape ({}, [], a hand's edit): the commands that write restore it first
        # (storage/state.py); a reader sees none, and check names the file.
        return None
    return parse_rubric({"rubric_id": document.get("rubric_id"), **document["resolved"]})


def lake_rubric(lake: Path, explicit: Rubric | None = None) -> Rubric:
    """The rubric a command works under: the one given, else the lake's, else the defaults.

    Only an explicit rubric changes the lake's; a command given none keeps it.
    """
    return explicit or current_rubric(lake) or parse_rubric({})


def rubric_conflict(lake: Path, rubric: Rubric) -> str | None:
    """Why ``rubric`` cannot be used in ``lake``: its id already names other content there.

    Scores are filed by rubric_id, so one id with two contents would mix them.
    """
    known = known_rubrics(lake).get(rubric.rubric_id)
    if known is None:
        return None
    given = json.loads(json.dumps(dict(rubric.resolved), sort_keys=True, default=str))
    if given == known:
        return None
    return (
        f"rubric_id {rubric.rubric_id!r} already names a different rubric in the lake {lake}; "
        "give the changed rubric its own rubric_id (or none, for a content hash)"
    )


def known_rubrics(lake: Path) -> dict[str, dict[str, object]]:
    """Every rubric the lake holds scores for, by rubric_id (lineage)."""
    known = LakeStore(lake).read_state(RUBRICS, {})
    # Not a mapping (a hand's null): it names nothing (repair_state rebuilds it).
    return known if isinstance(known, dict) else {}


def stored_rubric(lake: Path, rubric_id: str) -> Rubric | None:
    """The rubric the lake filed scores under as ``rubric_id`` (lineage); None when it holds
    none by that id, or the content no longer parses (a hand's edit: ``check`` names it)."""
    resolved = known_rubrics(lake).get(rubric_id)
    if not isinstance(resolved, dict):
        return None
    try:
        return parse_rubric({**resolved, "rubric_id": rubric_id})
    except RubricError:
        return None


def stage_rubric(tx: lk.Transaction, lake: Path, rubric: Rubric) -> None:
    """Make ``rubric`` the lake's current one, and remember it, when ``tx`` commits."""
    store = LakeStore(lake)
    store.stage_state(
        tx, CURRENT_RUBRIC, {"rubric_id": rubric.rubric_id, "resolved": rubric.resolved}
    )
    store.stage_state(tx, RUBRICS, {**known_rubrics(lake), rubric.rubric_id: dict(rubric.resolved)})
