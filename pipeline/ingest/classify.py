"""Lines to JSON kinds: which lines parse, which are task records or reports, and why a
line is refused before any field is read (not JSON, a trailing comma, not an object, a
number no column holds, a key named twice).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import polars as pl

from pipeline.core.jsonwalk import walk_json
from pipeline.core.sql import connect, in_batches, run_sql
from pipeline.sources.lines import JSON_WHITESPACE
from pipeline.tasks.parse import PARSE_LINES_SQL, parse_marks
from pipeline.tasks.validate import repeated_keys

# Only a line holding one of these can hold a non-finite number (DuckDB's reader takes
# nan, inf and infinity in any case, signed) or an integer past 64 bits (19 digits or
# more); only those lines pay for non_finite.sql's walk of the whole tree.
NON_FINITE_HINT = r"(?i)([:\[,]\s*-?(nan|inf)|[0-9]{19}|[0-9]e\+?[0-9]{3})"
# A JSON string literal, and a comma closing nothing: DuckDB's reader accepts
# trailing commas ({"a": 1,}), JSON does not.
STRING_LITERAL = r'"(?:[^"\\]|\\.)*"'
TRAILING_COMMA = r",\s*[\]}]"
# A \uD800-\uDFFF escape names half of a UTF-16 pair, no character: one outside a pair
# (what Python's json.dumps writes for a lone surrogate) is valid by JSON's grammar, but
# DuckDB's reader refuses the line. Escaped backslashes ("C:\\ud800dir" is a backslash and
# text) and pairs are taken out first (no look-ahead in Polars).
ESCAPED_BACKSLASH = r"\\\\"
SURROGATE_PAIR = r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
SURROGATE = r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
NOT_JSON = "not valid JSON (the line does not parse)"


@dataclass(frozen=True)
class Parsed:
    """Each line's kind, and the task-grade fields of every task record, from one parse."""

    kinds: pl.DataFrame  # row_nr, blank, problem, record_kind, content_hash (every line)
    fields: pl.DataFrame  # row_nr and parse_lines.sql's field columns (task records only)


def is_blank(raw: pl.Expr) -> pl.Expr:
    """A line of nothing but JSON's whitespace; any other space (a form feed, a no-break
    space, U+2028) makes a line that is not JSON."""
    return raw.str.strip_chars(JSON_WHITESPACE).str.len_bytes() == 0


def classify(lines: pl.DataFrame, con: duckdb.DuckDBPyConnection | None = None) -> Parsed:
    """Lines to JSON kinds, content hashes and task-grade fields (sql/ingest/parse_lines.sql)."""
    blank = is_blank(pl.col("raw"))
    candidates = lines.filter(pl.col("problem").is_null() & ~blank.fill_null(False)).select(
        "row_nr", "raw"
    )
    parsed = run_sql(
        PARSE_LINES_SQL, {"lines": in_batches(candidates)}, con=con, marks=parse_marks()
    )
    json_rows = parsed.filter("is_json").select("row_nr")
    suspects = candidates.filter(pl.col("raw").str.contains(NON_FINITE_HINT)).join(
        json_rows, on="row_nr", how="semi"
    )
    non_finite = _non_finite(suspects, con)
    kinds = (
        # A line the reader already found a problem with is that problem's, even when its
        # text is blank (an empty report file).
        lines.select(
            "row_nr", "problem", blank=(blank & pl.col("problem").is_null()).fill_null(False)
        )
        .join(
            parsed.select(
                "row_nr",
                "is_json",
                "json_kind",
                "record_kind",
                "content_hash",
                report_keys=pl.when(pl.col("record_kind") == "surface").then(
                    repeated_report_keys()
                ),
            ),
            on="row_nr",
            how="left",
        )
        .join(non_finite, on="row_nr", how="left")
        .join(trailing_commas(candidates, json_rows), on="row_nr", how="left")
        .join(lone_surrogates(candidates, json_rows), on="row_nr", how="left")
        .with_columns(
            problem=pl.when(pl.col("problem").is_not_null())
            .then(pl.col("problem"))
            .when(pl.col("blank"))
            .then(None)
            .when(~pl.col("is_json").fill_null(False) & pl.col("lone_surrogate"))
            .then(
                pl.lit(
                    f"{NOT_JSON}: it holds a \\u escape of half a UTF-16 surrogate pair "
                    "without the other half, which names no character (write the character "
                    "itself, or its pair)"
                )
            )
            .when(~pl.col("is_json").fill_null(False))
            .then(pl.lit(NOT_JSON))
            .when(pl.col("trailing_comma").fill_null(False))
            .then(pl.lit("not valid JSON: a comma before a closing } or ] (JSON allows none)"))
            .when(pl.col("json_kind") != "OBJECT")
            .then(pl.format("expected a JSON object, got {}", pl.col("json_kind")))
            .when(pl.col("number_problem") == "integer_range")
            .then(
                pl.format(
                    "integer {} at {} is outside the 64-bit range (-2^63 to 2^63-1)",
                    pl.col("literal"),
                    pl.col("path"),
                )
            )
            .when(pl.col("path").is_not_null())
            .then(pl.format("non-finite number {} at {}", pl.col("literal"), pl.col("path")))
            .when(pl.col("report_keys").list.len() > 0)
            .then(pl.col("report_keys").list.join("; "))
        )
        .select("row_nr", "blank", "problem", "record_kind", "content_hash")
    )
    # The task records: objects that are not reports and have no problem found so far.
    # One filter of the wide frame (each gather of it costs ~0.1 s per 200k lines).
    refused = kinds.filter(pl.col("problem").is_not_null()).get_column("row_nr").implode()
    fields = parsed.filter(
        (pl.col("record_kind") == "task") & ~pl.col("row_nr").is_in(refused)
    ).drop("is_json", "json_kind", "record_kind", "content_hash")
    return Parsed(kinds=kinds, fields=fields)


def trailing_commas(candidates: pl.DataFrame, json_rows: pl.DataFrame) -> pl.DataFrame:
    """The JSON lines holding a comma before a closing bracket outside every string
    (row_nr, trailing_comma); only lines with such a comma anywhere are looked at closer."""
    parsing = candidates.join(json_rows, on="row_nr", how="semi")
    outside_strings = pl.col("raw").str.replace_all(STRING_LITERAL, '""')
    return _flagged(
        parsing.filter(pl.col("raw").str.contains(TRAILING_COMMA)),
        "trailing_comma",
        outside_strings.str.contains(TRAILING_COMMA),
    )


def lone_surrogates(candidates: pl.DataFrame, json_rows: pl.DataFrame) -> pl.DataFrame:
    """The lines that do not parse and hold a surrogate escape outside a pair (row_nr,
    lone_surrogate); only lines that do not parse are looked at."""
    unpaired = (
        pl.col("raw").str.replace_all(ESCAPED_BACKSLASH, "").str.replace_all(SURROGATE_PAIR, "")
    )
    return _flagged(
        candidates.join(json_rows, on="row_nr", how="anti"),
        "lone_surrogate",
        unpaired.str.contains(SURROGATE),
    )


def _flagged(lines: pl.DataFrame, name: str, flag: pl.Expr) -> pl.DataFrame:
    """The ``lines`` where ``flag`` holds, as (row_nr, ``name``: true)."""
    return lines.select("row_nr", flag.alias(name)).filter(name)


# The report's objects whose keys scoring or identity reads (CONTRACT 3), by the column
# parse_lines.sql gives their key lists in.
REPORT_KEYED = {
    "top_keys": "the report",
    "server_keys": "server",
    "grade_keys": "grade",
    "coverage_keys": "coverage",
    "headline_keys": "headline",
}


def repeated_report_keys() -> pl.Expr:
    """Per report, a reason for each object that names a key twice (an empty list when none)."""
    return pl.concat_list(
        [repeated_keys(column, where) for column, where in REPORT_KEYED.items()]
    ).list.drop_nulls()


# A suspect longer than this is walked level by level (non_finite_large.sql): json_tree's
# memory grows with nodes x document size, fine for a record, not for a 20 MB report.
LARGE_SUSPECT_BYTES = 64 * 1024


def _non_finite(suspects: pl.DataFrame, con: duckdb.DuckDBPyConnection | None) -> pl.DataFrame:
    """row_nr, path, literal and number_problem of the first number of each suspect that no
    column can hold (non-finite, or an integer past 64 bits); both walks judge alike."""
    schema = pl.Schema(
        {
            "row_nr": pl.UInt32,
            "path": pl.String,
            "literal": pl.String,
            "number_problem": pl.String,
        }
    )
    found = [pl.DataFrame(schema=schema)]
    large = pl.col("raw").str.len_bytes() > LARGE_SUSPECT_BYTES
    small, big = suspects.filter(~large), suspects.filter(large)
    if small.height:
        found.append(run_sql("ingest/non_finite.sql", {"suspects": small}, con=con))
    if big.height:
        found.append(_walked(big.select("row_nr", doc="raw"), con))
    return pl.concat([hits.cast(schema).select(list(schema)) for hits in found])


def _walked(docs: pl.DataFrame, con: duckdb.DuckDBPyConnection | None) -> pl.DataFrame:
    """non_finite.sql's output for large suspects (row_nr, doc), walked level by level."""
    active = connect() if con is None else con
    try:
        return walk_json(
            docs, "ingest/non_finite_large.sql", active, finish="ingest/non_finite_large_first.sql"
        )
    finally:
        if con is None:
            active.close()
