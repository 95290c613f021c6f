"""The lake's small state files, repaired from what the lake holds when they break.

``_state/ledger.json`` (the nightly ledger), ``_state/rubrics.json`` (lineage),
``_state/current_rubric.json`` and ``_state/schema.json`` (the names schema news compares
with) are written whole by transactions, but a disk, a copy or a hand can still leave one
empty, cut, or of another shape (``null``, ``{}``). Before any work, each is read; one that
is not valid JSON, or not of its shape, is rebuilt from what the lake still has, with a note
naming the file and what was done:

- the ledger is reset to empty: the next nightly reads every inbox file again, and the
  lines already landed are skipped as exact duplicates (nothing lands twice);
- lineage is rebuilt from the current rubric (the only content the lake still names), and
  a lineage that lacks the current rubric gets it;
- the current rubric is the one the warehouse was built with, taken from lineage, also when
  the file is gone while the warehouse shows a rubric (the defaults would undo an analyst's
  change); when that cannot be (no warehouse names a rubric, or lineage lacks the one it
  names), a broken file is removed and a missing one left missing, so the next scoring
  rescores every part under the rubric it is given;
- the names file is removed: the next ingest lists them again from the lake's history.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.rubric import RubricError, parse_rubric
from pipeline.storage import lake as lk

LEDGER = "ledger"
CURRENT_RUBRIC = "current_rubric"
RUBRICS = "rubrics"
# The names the lake has held (pipeline/ingest/evolution.py SCHEMA_STATE), for schema news.
SCHEMA = "schema"


# Absent, as opposed to a file holding JSON's null.
_ABSENT = object()


def _read(lake: Path, name: str) -> tuple[Any, str | None]:
    """The document of state file ``name`` (``_ABSENT`` when there is no file) and why it
    is unusable."""
    path = lk.state_path(lake, name)
    try:
        return lk.read_json(path, _ABSENT), None
    except lk.StateFileError as exc:
        if isinstance(exc.__cause__, OSError):
            raise  # a folder in its place, no permission: nothing here can mend it
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


def _is_schema(document: Any) -> bool:
    from pipeline.ingest.evolution import NEWS

    # Every kind of name, as evolution.remember writes them: {} would make every name news.
    return (
        isinstance(document, dict)
        and set(document) == set(NEWS)
        and all(
            isinstance(names, list) and all(isinstance(n, str) for n in names)
            for names in document.values()
        )
    )


def _problem(lake: Path, name: str, shaped: Any) -> tuple[Any, str | None]:
    """The document (None when there is no file) and why it is unusable: not JSON, or JSON
    of another shape (``null`` included)."""
    document, why = _read(lake, name)
    if document is _ABSENT:
        return None, None
    if why is None and not shaped(document):
        why = f"{lk.state_path(lake, name)} is not a valid {name.replace('_', ' ')} document"
        document = None
    return document, why


@dataclass(frozen=True)
class Finding:
    """One unusable state file: which, why, and what mending it does (``action``, then
    what follows from it)."""

    name: str
    why: str
    action: str
    then: str = ""

    @property
    def note(self) -> str:
        return f"{self.why}; {self.action}" + (f": {self.then}" if self.then else "")


@dataclass
class Repairs:
    """What the state files need: the findings, and the writes and deletes that mend them."""

    found: list[Finding] = field(default_factory=list)
    writes: dict[Path, Any] = field(default_factory=dict)
    deletes: list[Path] = field(default_factory=list)

    @property
    def notes(self) -> list[str]:
        return [finding.note for finding in self.found]


def needed_repairs(lake: Path) -> Repairs:
    """Every unusable state file and its mending (see the module docstring), written
    nowhere: ``check`` names them, ``repair_state`` applies them."""
    from pipeline.warehouse import built_rubric_id

    repairs = Repairs()
    writes, deletes = repairs.writes, repairs.deletes
    _, ledger_why = _problem(lake, LEDGER, _is_ledger)
    if ledger_why:
        writes[lk.state_path(lake, LEDGER)] = {}
        repairs.found.append(
            Finding(
                LEDGER,
                ledger_why,
                "reset to empty",
                "the next nightly reads every inbox file again (lines already landed are "
                "skipped as duplicates)",
            )
        )
    current, current_why = _problem(lake, CURRENT_RUBRIC, _is_current)
    lineage, lineage_why = _problem(lake, RUBRICS, _is_lineage)
    # The rubric the warehouse shows, read only when the current one is gone or broken.
    built = built_rubric_id(lake) if current is None else None
    missing = current is None and current_why is None and built is not None
    if missing:
        # Gone while the warehouse still shows a rubric: the lake had one. Restored like a
        # broken file, never replaced by the defaults (that would undo an analyst's rubric).
        current_why = f"{lk.state_path(lake, CURRENT_RUBRIC)} is missing"
    if lineage_why:
        lineage = {current["rubric_id"]: current["resolved"]} if not current_why and current else {}
        writes[lk.state_path(lake, RUBRICS)] = lineage
        repairs.found.append(
            Finding(RUBRICS, lineage_why, f"rebuilt with the current rubric only ({len(lineage)})")
        )
    elif current is not None and (lineage or {}).get(current["rubric_id"]) != current["resolved"]:
        held = dict(lineage or {})
        held[current["rubric_id"]] = current["resolved"]
        writes[lk.state_path(lake, RUBRICS)] = held
        repairs.found.append(
            Finding(
                RUBRICS,
                f"{lk.state_path(lake, RUBRICS)} does not hold the current rubric "
                f"{current['rubric_id']} as it is",
                "added",
            )
        )
    if current_why:
        resolved = (lineage or {}).get(built) if built else None
        target = lk.state_path(lake, CURRENT_RUBRIC)
        if resolved is not None and _is_current({"rubric_id": built, "resolved": resolved}):
            writes[target] = {"rubric_id": built, "resolved": resolved}
            repairs.found.append(
                Finding(CURRENT_RUBRIC, current_why, f"restored as rubric {built}, the warehouse's")
            )
        else:
            # A broken file goes; a missing one has nothing to remove (the note had said
            # "is missing; removed"). Why it cannot be restored: the warehouse names no
            # rubric, or lineage lacks the content of the one it names.
            if not missing:
                deletes.append(target)
            why_not = (
                f"lineage does not hold rubric {built}, the warehouse's"
                if built
                else "the warehouse names no rubric"
            )
            repairs.found.append(
                Finding(
                    CURRENT_RUBRIC,
                    current_why,
                    f"{'left missing' if missing else 'removed'} ({why_not})",
                    "the next scoring rescores every part under the rubric it is given",
                )
            )
    _, schema_why = _problem(lake, SCHEMA, _is_schema)
    if schema_why:
        deletes.append(lk.state_path(lake, SCHEMA))
        repairs.found.append(
            Finding(
                SCHEMA,
                schema_why,
                "removed",
                "the next ingest lists the names from the lake's history",
            )
        )
    return repairs


def repair_state(lake: Path) -> list[str]:
    """Mend every unusable state file (see the module docstring); one note per file."""
    repairs = needed_repairs(lake)
    writes, deletes = repairs.writes, repairs.deletes
    if writes or deletes:
        with lk.Transaction(lake) as tx:
            for target, document in writes.items():
                tx.write_json(target, document)
            for target in deletes:
                tx.delete(target)
    return repairs.notes
