"""The rules a report must meet to land, derived from ``fields.py`` (CONTRACT 3).

As on the task side (``pipeline.tasks.validate``), each rule is one Polars expression giving a
reason or null per row, and a report carries every reason it failed. A reason names the
field's place in the file and the value found (``findings[3].kind = 7: expected a
non-empty string``).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from pipeline.surface.fields import (
    FINDING,
    FINDING_FIELDS,
    RUN_FIELDS,
    Expect,
    Field,
    When,
    count,
    holds,
    number,
    parents,
    present,
    server_key,
    text,
    type_of,
    value_of,
)
from pipeline.tasks.validate import repeated_keys

# The reason lists the first few problems of a report; the count says how many more.
MAX_REASONS = 8
SHOWN_VALUE_CHARS = 80
RFC3339 = "an RFC 3339 timestamp with offset"


def _valid(name: str, expect: Expect) -> pl.Expr:
    t = type_of(name)
    num = number(name)
    is_number = num.is_not_null()
    all_strings = (
        pl.col(f"{name}_item_types").list.eval(pl.element() != "VARCHAR").list.any().not_()
    )
    match expect:
        case Expect.STRING:
            return t == "VARCHAR"
        case Expect.NON_EMPTY:
            return (t == "VARCHAR") & (value_of(name).str.len_chars() > 0)
        case Expect.NUMBER:
            return is_number
        case Expect.NON_NEGATIVE:
            return is_number & (num >= 0)
        case Expect.COUNT:
            # Read as parse lands it, so a count that passes can be stored: one past the
            # 64-bit range (1e19) is refused here, with its reason, instead of failing the file.
            return (count(name) >= 0).fill_null(False)
        case Expect.BOOL:
            return t == "BOOLEAN"
        case Expect.OBJECT:
            return t == "OBJECT"
        case Expect.ARRAY:
            return t == "ARRAY"
        case Expect.STRINGS:
            return (t == "ARRAY") & all_strings
        case Expect.TARGET:
            return (t == "VARCHAR") | ((t == "ARRAY") & all_strings)


def _shown(name: str) -> pl.Expr:
    """The offending value as a person would read it in the file (strings quoted)."""
    shown = value_of(name).fill_null("null").str.slice(0, SHOWN_VALUE_CHARS)
    return pl.when(type_of(name) == "VARCHAR").then(pl.format('"{}"', shown)).otherwise(shown)


def _absence(name: str) -> pl.Expr:
    """How a field is not there: "null" when the key holds JSON null, "missing" when absent."""
    return pl.when(type_of(name) == "NULL").then(pl.lit("null")).otherwise(pl.lit("missing"))


def _condition(condition: bool | When) -> pl.Expr:
    if isinstance(condition, bool):
        return pl.lit(condition)
    return holds(condition).fill_null(False)


def _applies(fields: Sequence[Field], field: Field) -> pl.Expr:
    """Checked where every field above it is an object (a wrong type is one problem, not
    one per key below it) and its ``when`` holds."""
    above = [type_of(name) == "OBJECT" for name in parents(fields, field)]
    conditions = [*above, *(_condition(when) for when in field.when)]
    return pl.all_horizontal([pl.lit(True), *conditions]).fill_null(False)


def _problem(fields: Sequence[Field], field: Field, where: pl.Expr) -> pl.Expr | None:
    """A reason naming the field and its value, or null when the field is fine.

    ``where`` is the field's location as text (``server.name``, ``findings[3].kind``).
    """
    if field.expect is None:
        return None
    applies = _applies(fields, field)
    required = pl.lit(False) if field.required is False else _condition(field.required)
    expected = pl.lit(field.expect.value)
    there = present(field.name)
    return (
        pl.when(applies & ~there & required)
        .then(pl.format("{} is {}: expected {}", where, _absence(field.name), expected))
        .when(applies & there & ~_valid(field.name, field.expect))
        .then(pl.format("{} = {}: expected {}", where, _shown(field.name), expected))
    )


def _too_long(field: Field) -> pl.Expr | None:
    if field.max_chars is None:
        return None
    chars = text(field.name).str.len_chars()
    return pl.when((chars > field.max_chars).fill_null(False)).then(
        pl.format(
            "{} has {} characters: expected at most {}",
            pl.lit(field.path),
            chars,
            pl.lit(field.max_chars),
        )
    )


def _field_problems(fields: Sequence[Field], where: pl.Expr | None) -> list[pl.Expr]:
    """One rule per field; ``where`` prefixes each path (a finding's place), or None."""

    def place(field: Field) -> pl.Expr:
        if where is None:
            return pl.lit(field.path)
        return pl.format(f"{{}}.{field.path}", where)

    rules = [_problem(fields, f, place(f)) for f in fields]
    return [rule for rule in rules if rule is not None]


def server_key_problem() -> pl.Expr:
    """A server object without a name must have a fingerprint to be told apart by."""
    no_key = (type_of("server") == "OBJECT") & ~present("server_name") & server_key().is_null()
    return pl.when(no_key).then(
        pl.format(
            "server.name is {} and server.fingerprint is {}: expected a non-empty string in "
            "one of them (the server key is server.name, else server.fingerprint)",
            _absence("server_name"),
            pl.when(present("server_fingerprint"))
            .then(pl.format("{}", _shown("server_fingerprint")))
            .otherwise(_absence("server_fingerprint")),
        )
    )


def generated_at_problem() -> pl.Expr:
    """generated_at (top level, as mcp-xray writes it, or under server) must be RFC 3339.

    It is required only when the report has no run_id of its own, since run_id is then
    made of it; an offset is required so that versions order the same in every zone.
    """
    top, nested = present("generated_at"), present("server_generated_at")
    name = pl.when(top).then(pl.lit("generated_at")).otherwise(pl.lit("server.generated_at"))
    type_ = pl.when(top).then(type_of("generated_at")).otherwise(type_of("server_generated_at"))
    given = pl.when(top).then(value_of("generated_at")).otherwise(value_of("server_generated_at"))
    has_offset = given.str.contains(r"(?i)(z|[+-]\d{2}:?\d{2})$")
    parsed = (type_ == "VARCHAR") & pl.col("generated_at_ts").is_not_null() & has_offset
    shown = pl.when(type_ == "VARCHAR").then(pl.format('"{}"', given)).otherwise(given)
    return (
        pl.when(~top & ~nested & ~present("run_id"))
        .then(
            pl.format(
                "generated_at is {}: expected {} (the report has no run_id, so run_id is "
                '<server.name or server.fingerprint>@<server.version or "unversioned">'
                "@<generated_at>)",
                _absence("generated_at"),
                pl.lit(RFC3339),
            )
        )
        .when((top | nested) & ~parsed.fill_null(False))
        .then(pl.format("{} = {}: expected {}", name, shown, pl.lit(RFC3339)))
    )


def run_problems() -> pl.Expr:
    """Every problem of a report's own fields (surface_runs.sql's columns), as a list."""
    lengths = [rule for rule in map(_too_long, RUN_FIELDS) if rule is not None]
    rules = [
        *_field_problems(RUN_FIELDS, None),
        server_key_problem(),
        generated_at_problem(),
        *lengths,
    ]
    return pl.concat_list(rules).list.drop_nulls()


def finding_problems() -> pl.Expr:
    """Every problem of one finding (surface_findings.sql's columns), as a list."""
    finding = pl.format("findings[{}]", pl.col("finding_index"))
    not_object = pl.when(type_of(FINDING) != "OBJECT").then(
        pl.format(
            "{} = {}: expected an object",
            finding,
            value_of(FINDING).str.slice(0, SHOWN_VALUE_CHARS),
        )
    )
    is_object = type_of(FINDING) == "OBJECT"
    # Outside an object no field can be read: the one problem above says so.
    fields = [pl.when(is_object).then(rule) for rule in _field_problems(FINDING_FIELDS, finding)]
    repeated = [
        repeated_keys("finding_keys", finding),
        repeated_keys("measurement_keys", pl.format("{}.measurement", finding)),
    ]
    return pl.concat_list([not_object, *repeated, *fields]).list.drop_nulls()


def reason(problems: pl.Expr) -> pl.Expr:
    """Problems joined into one reason; past MAX_REASONS, a count of the rest."""
    more = problems.list.len().cast(pl.Int64) - MAX_REASONS
    head = problems.list.head(MAX_REASONS).list.join("; ")
    return (
        pl.when(more > 0).then(pl.format("{}; and {} more problem(s)", head, more)).otherwise(head)
    )
