"""The fields of a task-grade record that the pipeline reads, declared once (CONTRACT 2).

Each ``Field`` names its column, its JSON path, what it must hold, whether it is required
and its bounds. From this list come the paths and columns of the parse SQL
(``sql/ingest/parse_lines.sql``: ``<name>__type``, the JSON type, and the typed value),
the rules ``validate.py`` applies and the bounds of the landed table's pandera model
(``schemas/tasks.py``), so a new field or limit is one line here. As on the report side
(``pipeline/surface/fields.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

# CONTRACT 2: a run_id has 1 to 256 characters.
RUN_ID_MAX_CHARS = 256
AUDIT_ENV = "audit"
# The JSON types DuckDB's json_type gives a number, and those of an integer.
NUMBER_TYPES = ("UBIGINT", "BIGINT", "DOUBLE")
INTEGER_TYPES = ("UBIGINT", "BIGINT")


class Kind(Enum):
    """What a field must hold."""

    STRING = "string"
    TIMESTAMP = "an RFC 3339 string, read as an instant (the text kept as <name>_text)"
    INTEGER = "integer"
    NUMBER = "number"
    FRACTION = "a number in [0, 1]"
    BOOL = "true or false"
    STRINGS = "a list of strings"
    FRAGMENT = "an object, kept as a JSON fragment (<name>_json)"
    OBJECT = "an object (only its JSON type is read)"
    DEFECT_IDS = "a list of defect ids (only its JSON type is read)"


# How the parse SQL reads each kind's value from its fragment ``{v}`` (of JSON type
# ``{t}``); a kind not here is read for its type alone (serializing the fragment of an
# object would cost as much as the record).
READ_SQL = {
    Kind.STRING: "{v} ->> '$'",
    Kind.TIMESTAMP: "rfc3339_instant({v} ->> '$')",
    # Read as an integer, exactly: a double would round past 2^53.
    Kind.INTEGER: "try_cast({v} as bigint)",
    Kind.NUMBER: "try_cast({v} as double)",
    Kind.FRACTION: "try_cast({v} as double)",
    Kind.BOOL: "try_cast({v} as boolean)",
    Kind.STRINGS: "case when {t} = 'ARRAY' then try_cast({v} as varchar[]) end",
    # Kept for task_parts.sql and run_metadata.sql.
    Kind.FRAGMENT: "case when {t} = 'OBJECT' then {v} end",
}


@dataclass(frozen=True)
class Field:
    """One field: ``name`` prefixes its columns, ``path`` is its JSON path (and how a
    reason names it). ``env_type``: checked only on records of that env type."""

    name: str
    path: str
    kind: Kind
    required: bool = False
    ge: float | None = None
    gt: float | None = None
    max_chars: int | None = None
    env_type: str | None = None

    @property
    def value_column(self) -> str:
        return f"{self.name}_json" if self.kind is Kind.FRAGMENT else self.name

    @property
    def bound(self) -> str | None:
        """The bound as a reason states it (``>= 0``), None when unbounded."""
        if self.gt is not None:
            return f"> {self.gt:g}"
        return None if self.ge is None else f">= {self.ge:g}"


def _key(name: str, kind: Kind, **rules: Any) -> Field:
    """The record's top-level key ``name``, its columns named as the key."""
    return Field(name, name, kind, **rules)


def _minimization_size(key: str) -> Field:
    """``grade.metadata.minimization.<key>``: a size, so > 0 (column ``minimization_<key>``)."""
    return Field(f"minimization_{key}", f"grade.metadata.minimization.{key}", Kind.NUMBER, gt=0)


def _audit(key: str, kind: Kind) -> Field:
    """``grade.metadata.<key>``, checked on audit records only (column ``audit_<key>``)."""
    return Field(f"audit_{key}", f"grade.metadata.{key}", kind, env_type=AUDIT_ENV)


# In the order a quarantined record's reasons list them.
TASK_FIELDS = (
    _key("run_id", Kind.STRING, required=True, max_chars=RUN_ID_MAX_CHARS),
    _key("agent", Kind.STRING, required=True),
    _key("agent_version", Kind.STRING, required=True),
    _key("problem_id", Kind.STRING, required=True),
    _key("env_type", Kind.STRING, required=True),
    _key("graded_at", Kind.TIMESTAMP, required=True),
    _key("defect_id", Kind.STRING),
    _key("cwe", Kind.STRING),
    _key("project", Kind.STRING),
    _key("trial", Kind.INTEGER, ge=0),
    _key("cost_usd", Kind.NUMBER, ge=0),
    _key("tokens", Kind.NUMBER, ge=0),
    _key("wall_seconds", Kind.NUMBER, ge=0),
    _key("grade", Kind.OBJECT, required=True),
    Field("subscores", "grade.subscores", Kind.FRAGMENT, required=True),
    Field("weights", "grade.weights", Kind.FRAGMENT, required=True),
    Field("metadata", "grade.metadata", Kind.FRAGMENT),
    Field("penalties", "grade.penalties", Kind.FRAGMENT),
    Field("env_internal_failure", "grade.env_internal_failure", Kind.BOOL),
    Field("allow_unbounded", "grade.allow_unbounded", Kind.BOOL),
    Field("failure_logs", "grade.env_internal_failure_logs", Kind.STRINGS),
    _minimization_size("final_size"),
    _minimization_size("minimal_size"),
    # CONTRACT 2: an audit's subscore is recall x precision; each, when given, in [0, 1].
    _audit("recall", Kind.FRACTION),
    _audit("precision", Kind.FRACTION),
    _audit("found", Kind.DEFECT_IDS),
    _audit("missed", Kind.DEFECT_IDS),
)

BY_NAME = {f.name: f for f in TASK_FIELDS}


# ------------------------------------------------------------------ the parse SQL's parts

# Where sql/ingest/parse_lines.sql takes the generated parts.
VALUE_PATHS_MARK = "/* value paths */"
TYPE_PATHS_MARK = "/* type paths */"
FIELDS_MARK = "/* fields */"


def _valued(fields: Sequence[Field]) -> list[Field]:
    return [f for f in fields if f.kind in READ_SQL]


def _typed_only(fields: Sequence[Field]) -> list[Field]:
    return [f for f in fields if f.kind not in READ_SQL]


def value_paths(fields: Sequence[Field] = TASK_FIELDS) -> str:
    """The paths json_extract reads in one parse: '$' (the record minified, which the
    content hash is taken over), then each field with a value, in order (v[2], v[3], ...)."""
    return _path_list(["$", *(f"$.{f.path}" for f in _valued(fields))])


def type_paths(fields: Sequence[Field] = TASK_FIELDS) -> str:
    """The paths json_type reads: the value paths, then the fields read for their type
    alone (t[i] is the type of v[i])."""
    paths = ["$", *(f"$.{f.path}" for f in [*_valued(fields), *_typed_only(fields)])]
    return _path_list(paths)


def _path_list(paths: Sequence[str]) -> str:
    # Paths are ours (declared above), never from data.
    return "[\n    " + ",\n    ".join(f"'{p}'" for p in paths) + "\n]"


def select_list(fields: Sequence[Field] = TASK_FIELDS) -> str:
    """The select items of every field: ``<name>__type`` and its typed value column(s),
    read from the lists ``t`` (types) and ``v`` (fragments) of the parse SQL."""
    order = [*_valued(fields), *_typed_only(fields)]
    items = []
    for index, f in enumerate(order, start=2):
        t, v = f"t[{index}]", f"v[{index}]"
        items.append(f"{t} as {f.name}__type")
        if f.kind is Kind.TIMESTAMP:
            items.append(f"{v} ->> '$' as {f.name}_text")
        if f.kind in READ_SQL:
            items.append(f"{READ_SQL[f.kind].format(t=t, v=v)} as {f.value_column}")
    return ",\n    ".join(items)


def pandera_bounds(name: str) -> dict[str, Any]:
    """The pandera checks of a landed column that its field declares (ge, gt, length)."""
    f = BY_NAME[name]
    checks: dict[str, Any] = {}
    if f.ge is not None:
        checks["ge"] = f.ge
    if f.gt is not None:
        checks["gt"] = f.gt
    if f.max_chars is not None:
        checks["str_length"] = {"min_value": 1, "max_value": f.max_chars}
    return checks
