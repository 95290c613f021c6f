"""The lake's small state files, repaired from what the lake holds when they break.

``_state/ledger.json`` (the nightly ledger), ``_state/rubrics.json`` (lineage) and
``_state/current_rubric.json`` are written whole by transactions, but a disk, a copy or
a hand can still leave one empty or cut. Before any work, each is read; one that is not
valid JSON, or not of its shape, is rebuilt from what the lake still has, with a note
naming the file and what was done:

- the ledger is reset to empty: the next nightly reads every inbox file again, and the
  lines already landed are skipped as exact duplicates (nothing lands twice);
- lineage is rebuilt from the current rubric (the only content the lake still names);
- the current rubric is the one the warehouse was built with, taken from lineage; when
  neither knows it, the file is removed, so the next scoring rescores every part under
  the rubric it is given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.rubric import RubricError, parse_rubric
from pipeline.storage import lake as lk

LEDGER = "ledger"
CURRENT_RUBRIC = "current_rubric"
RUBRICS = "rubrics"


def _read(lake: Path, name: str) -> tuple[Any, str | None]:
    """The document of state file ``name`` (None when absent) and why it is unusable."""
    path = lk.state_path(lake, name)
    try:
        return lk.read_json(path, None), None
    except lk.StateFileError as exc:
        return None, f"{path} is not valid JSON ({exc.__cause__})"


def _is_ledger(document: Any) -> bool:
    return isinstance(document, dict) and all(isinstance(v, dict) for v in document.values())


def _is_lineage(document: Any) -> bool:
    return isinstance(document, dict) and all(isinstance(v, dict) for v in document.values())


def _is_current(document: Any) -> bool:
    if not (
        isinstance(document, dict)
        and isinstance(document.get("rubric_id"), str)
        and isinstance(document.get("resolved"), dict)
    ):
        return False
    try:
        parse_rubric({"rubric_id": document["rubric_id"], **document["resolved"]})
    except RubricError:
        return False
    return True


def _problem(lake: Path, name: str, shaped: Any) -> tuple[Any, str | None]:
    document, why = _read(lake, name)
    if why is None and document is not None and not shaped(document):
        why = f"{lk.state_path(lake, name)} is not a valid {name.replace('_', ' ')} document"
    return document, why


def repair_state(lake: Path) -> list[str]:
    """Rebuild every unusable state file (see the module docstring); one note per file."""
    from pipeline.warehouse import built_rubric_id

    notes: list[str] = []
    writes: dict[Path, Any] = {}
    deletes: list[Path] = []
    _, ledger_why = _problem(lake, LEDGER, _is_ledger)
    if ledger_why:
        writes[lk.state_path(lake, LEDGER)] = {}
        notes.append(
            f"{ledger_why}; reset to empty: the next nightly reads every inbox file again "
            "(lines already landed are skipped as duplicates)"
        )
    current, current_why = _problem(lake, CURRENT_RUBRIC, _is_current)
    lineage, lineage_why = _problem(lake, RUBRICS, _is_lineage)
    if lineage_why:
        lineage = {current["rubric_id"]: current["resolved"]} if not current_why and current else {}
        writes[lk.state_path(lake, RUBRICS)] = lineage
        notes.append(f"{lineage_why}; rebuilt with the current rubric only ({len(lineage)})")
    if current_why:
        built = built_rubric_id(lake)
        resolved = (lineage or {}).get(built) if built else None
        target = lk.state_path(lake, CURRENT_RUBRIC)
        if resolved is not None and _is_current({"rubric_id": built, "resolved": resolved}):
            writes[target] = {"rubric_id": built, "resolved": resolved}
            notes.append(f"{current_why}; restored as rubric {built}, the warehouse's")
        else:
            deletes.append(target)
            notes.append(
                f"{current_why}; removed (neither the warehouse nor lineage names it): the "
                "next scoring rescores every part under the rubric it is given"
            )
    if writes or deletes:
        with lk.Transaction(lake) as tx:
            for target, document in writes.items():
                tx.write_json(target, document)
            for target in deletes:
                tx.delete(target)
    return notes
