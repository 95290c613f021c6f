"""Task-grade lines to fields, and accepted records to the landed task tables.

The parse SQL (``sql/ingest/parse_lines.sql``) reads every candidate line once; its field
columns come from ``fields.py``. As ``pipeline/surface/parse.py`` does for reports.
"""

from __future__ import annotations

from functools import cache

from pipeline.tasks.fields import (
    FIELDS_MARK,
    TYPE_PATHS_MARK,
    VALUE_PATHS_MARK,
    select_list,
    type_paths,
    value_paths,
)

PARSE_LINES_SQL = "ingest/parse_lines.sql"


@cache
def parse_marks() -> dict[str, str]:
    """What parse_lines.sql's marks stand for, generated from the task fields."""
    return {
        VALUE_PATHS_MARK: value_paths(),
        TYPE_PATHS_MARK: type_paths(),
        FIELDS_MARK: select_list(),
    }
