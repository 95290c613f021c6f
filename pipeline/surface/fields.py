"""The fields of an mcp-xray report that the pipeline reads, declared once (CONTRACT 3).

Each ``Field`` names its JSON path, what it must hold and when it is required or checked.
From this list come the columns the parse SQL extracts (``select_list``: ``<name>_t``, the
JSON type, and ``<name>_v``, the text) and the rules ``validate.py`` applies, so a new
field or limit is one line here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import polars as pl

# The JSON types of a number and of an integer (whose text is its digits, exactly) are the
# task side's: DuckDB's json_type gives no HUGEINT, an integer past UBIGINT is a DOUBLE.
from pipeline.tasks.fields import INTEGER_TYPES, NUMBER_TYPES, RUN_ID_MAX_CHARS

# The column prefix of a whole finding (findings SQL): every finding field lies below it.
FINDING = "finding"
# The finding kind whose measurement describes the surface's size (CONTRACT 3 and 5).
TOKEN_COST = "token_cost"


class Expect(Enum):
    """What a field must hold; the value is the phrase a reason uses."""

    STRING = "a string"
    NON_EMPTY = "a non-empty string"
    NUMBER = "a finite number"
    NON_NEGATIVE = "a finite number >= 0"
    COUNT = "a whole number from 0 to 2^63-1"
    BOOL = "true or false"
    OBJECT = "an object"
    ARRAY = "a list"
    STRINGS = "a list of strings"
    TARGET = "a tool name or a list of tool names"


# Expectations met by a list of strings: the SQL extracts its items' types and texts too.
LISTED = (Expect.STRINGS, Expect.TARGET)


@dataclass(frozen=True)
class When:
    """Holds where the string field ``name`` is one of ``values``."""

    name: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Field:
    """One field: ``name`` is its column prefix in the SQL output, ``path`` its JSON path.

    A field is checked only where each field above it on its path is an object and every
    ``when`` holds. ``expect`` None: read, and checked by a rule of its own or by none.
    """

    name: str
    path: str
    expect: Expect | None
    required: bool | When = False
    when: tuple[When, ...] = ()
    max_chars: int | None = None


def _measured(
    key: str,
    expect: Expect,
    kind: str,
    required: bool | When = False,
    name: str = "",
    scope: When | None = None,
) -> Field:
    """``measurement.<key>``, checked on findings of ``kind`` (column prefix ``m_<key>``),
    and of those, when given, only on the ``scope`` whose formula reads it."""
    when = (When("kind", (kind,)), *(() if scope is None else (scope,)))
    return Field(name or f"m_{key}", f"measurement.{key}", expect, required, when)


def _at(path: str, expect: Expect | None, **rules: Any) -> Field:
    """The field at ``path``, its column prefix the path with underscores (``server.name``:
    ``server_name``)."""
    return Field(path.replace(".", "_"), path, expect, **rules)


# A measured size (tokens, tool count) is required of a surface or phase token_cost finding.
_SIZED = When("m_scope", ("surface", "phase"))
_PHASE = When("m_scope", ("phase",))

RUN_FIELDS = (
    _at("run_id", Expect.NON_EMPTY, max_chars=RUN_ID_MAX_CHARS),
    _at("server", Expect.OBJECT, required=True),
    # CONTRACT 3: name and version may be null (a bare tool dump); the server key then
    # falls back to the fingerprint (validate.server_key_problem).
    _at("server.name", Expect.NON_EMPTY),
    _at("server.version", Expect.NON_EMPTY),
    _at("server.fingerprint", Expect.STRING),
    _at("server.tool_count", Expect.COUNT),
    _at("findings", Expect.ARRAY, required=True),
    _at("coverage", Expect.OBJECT),
    _at("coverage.ran", Expect.STRINGS),
    _at("grade", Expect.OBJECT),
    _at("grade.overall", Expect.NUMBER),
    _at("grade.letter", Expect.STRING),
    _at("grade.subscores", Expect.OBJECT),
    _at("headline", Expect.OBJECT),
    _at("headline.phased", Expect.BOOL),
    _at("headline.worst_phase", Expect.STRING),
    _at("headline.phase_tokens", Expect.OBJECT),
    # RFC 3339 with an offset, at the top (as mcp-xray writes it) or, per CONTRACT 3,
    # beside the server fields (validate.generated_at_problem).
    _at("generated_at", None),
    _at("server.generated_at", None),
)

# Which finding kinds read which measurement key (the formulas of CONTRACT 3 and 5). A key
# is checked only on the kinds that use it: elsewhere it is informational.
FINDING_FIELDS = (
    _at("probe", Expect.STRING),
    _at("kind", Expect.NON_EMPTY, required=True),
    _at("target", Expect.TARGET),
    _at("measurement", Expect.OBJECT),
    # CONTRACT 3: "The stored severity is ignored" (the pipeline assigns its own), so no
    # value of it keeps a report out; one that is not a finite number is kept as null.
    _at("severity", None),
    _at("confidence", Expect.NUMBER),
    _measured("scope", Expect.STRING, TOKEN_COST),
    # Read, and required, for a surface or phase scope only (the dimension, by_phase); on
    # another scope (a tool's) only share is, and these are informational there.
    _measured("tokens", Expect.NON_NEGATIVE, TOKEN_COST, True, scope=_SIZED),
    _measured("tool_count", Expect.COUNT, TOKEN_COST, True, scope=_SIZED),
    _measured("tokens_per_tool_avg", Expect.NON_NEGATIVE, TOKEN_COST, True, scope=_SIZED),
    _measured("share", Expect.NUMBER, TOKEN_COST),
    _measured("phase", Expect.NON_EMPTY, TOKEN_COST, True, scope=_PHASE),
    _measured("worst_phase", Expect.STRING, TOKEN_COST),
    _measured("smell", Expect.STRING, "schema_smell"),
    _measured("tokens_saved_est", Expect.NUMBER, "merge_candidate"),
    _measured("wide_union", Expect.BOOL, "merge_candidate"),
    _measured("mixes_read_write", Expect.BOOL, "merge_candidate"),
    _measured("pass_rate", Expect.NUMBER, "selection_error"),
    _measured("mode", Expect.STRING, "selection_error"),
    _measured("fire_rate", Expect.NUMBER, "distraction"),
    _measured("tokens_est", Expect.NON_NEGATIVE, "hidden_injector"),
    _measured("kind", Expect.STRING, "hidden_injector", name="m_injector_kind"),
    _measured("recommend_jit", Expect.BOOL, "jit_candidate"),
)

# Where the parse SQL (sql/ingest/surface_*.sql) takes the generated columns.
FIELDS_MARK = "/* fields */"


def select_list(fields: Sequence[Field], source: str) -> str:
    """The SQL select items of ``fields`` read from the JSON column ``source``: the type
    and the text of each (and of each item, for a list of strings). Paths are ours."""
    items = []
    for f in fields:
        items += [
            f"json_type({source}, '$.{f.path}') as {f.name}_t",
            f"json_extract_string({source}, '$.{f.path}') as {f.name}_v",
        ]
        if f.expect in LISTED:
            items += [
                f"json_type({source}, '$.{f.path}[*]') as {f.name}_item_types",
                f"json_extract_string({source}, '$.{f.path}[*]') as {f.name}_items",
            ]
    return ",\n    ".join(items)


def parents(fields: Sequence[Field], field: Field) -> list[str]:
    """The names of the declared fields above ``field`` on its path, outermost first."""
    by_path = {f.path: f.name for f in fields}
    steps = field.path.split(".")[:-1]
    above = [".".join(steps[: i + 1]) for i in range(len(steps))]
    return [by_path[p] for p in above if p in by_path]


# ------------------------------------------------------- the columns, read as typed values


def type_of(name: str) -> pl.Expr:
    return pl.col(f"{name}_t")


def value_of(name: str) -> pl.Expr:
    return pl.col(f"{name}_v")


def present(name: str) -> pl.Expr:
    """The key is there and not JSON null (null counts as absent for optional fields)."""
    return type_of(name).is_not_null() & (type_of(name) != "NULL")


def number(name: str) -> pl.Expr:
    """The value as a finite float when its JSON type is a number, else null."""
    num = value_of(name).cast(pl.Float64, strict=False)
    return pl.when(type_of(name).is_in(NUMBER_TYPES) & num.is_finite()).then(num)


def count(name: str) -> pl.Expr:
    """The value as a 64-bit integer when it is a whole number within the 64-bit range,
    else null (``validate`` then names it; a negative one is checked there).

    An integer literal is read from its digits, never through a double, which would round
    one above 2^53 (9007199254740993 to ...992). A number with a fraction or an exponent
    (``10.0``, ``1e2``) is a double: whole when it equals its floor. Out of range (``1e19``,
    or ``9223372036854775807.0``, which is 2^63 as a double) gives null, not an error: a
    strict cast fails the whole column, and with it every report in the file.
    """
    digits = value_of(name).cast(pl.Int64, strict=False)
    num = number(name)
    whole = pl.when(num == num.floor()).then(num).cast(pl.Int64, strict=False)
    return pl.when(type_of(name).is_in(INTEGER_TYPES)).then(digits).otherwise(whole)


def text(name: str) -> pl.Expr:
    return pl.when(type_of(name) == "VARCHAR").then(value_of(name))


def boolean(name: str) -> pl.Expr:
    return pl.when(type_of(name) == "BOOLEAN").then(value_of(name) == "true")


def holds(when: When) -> pl.Expr:
    return text(when.name).is_in(list(when.values))


def server_key() -> pl.Expr:
    """CONTRACT 3: the server key is server.name, else server.fingerprint."""
    fingerprint = pl.when(value_of("server_fingerprint").str.len_chars() > 0).then(
        text("server_fingerprint")
    )
    return pl.coalesce(text("server_name"), fingerprint)
