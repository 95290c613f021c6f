"""json_nodes (sql/queries/session.sql), the level-by-level walk that run_metadata.sql and
non_finite_large.sql share, finds what DuckDB's json_tree finds, with json_tree's paths."""

from __future__ import annotations

import polars as pl

from pipeline.core.sql import connect, run_sql
from pipeline.tasks.validate import LIST_VALUE_MAX_BYTES

DOCS = [
    '{"a": 1, "b": [true, null, {"c.d": "x", "e": []}], "f": {}, "g": {"h": -2.5e3}}',
    '{"x y": {"\\"q\\"": [1, [2, [3]]]}, "m": [{"k": -Infinity}]}',
    '{"only": "text"}',
]


def test_the_walk_gives_every_node_with_json_trees_path_and_type() -> None:
    con = connect()
    try:
        con.register("docs", pl.DataFrame({"row_nr": range(len(DOCS)), "raw": DOCS}))
        walked = con.sql(
            "with roots as (select row_nr, json_type(raw) as node_type, raw::json as node "
            "from docs) select row_nr, fullkey, node_type, node::varchar from json_nodes(roots) "
            "where fullkey <> '$' order by all"
        ).fetchall()
        tree = con.sql(
            "select d.row_nr, t.fullkey, t.type, t.value::varchar "
            "from docs as d, json_tree(d.raw) as t where t.fullkey <> '$' order by all"
        ).fetchall()
    finally:
        con.close()
    assert walked == tree
    assert len(walked) > 15


def test_large_and_small_suspects_name_the_same_non_finite_path() -> None:
    suspects = pl.DataFrame({"row_nr": range(len(DOCS)), "raw": DOCS})
    small = run_sql("ingest/non_finite.sql", {"suspects": suspects})
    large = run_sql("ingest/non_finite_large.sql", {"suspects": suspects})
    assert large.sort("row_nr").to_dicts() == small.sort("row_nr").to_dicts()
    assert large["path"].to_list() == ["$.m[0].k"]


def test_run_metadata_keys_are_the_paths_below_the_metadata() -> None:
    fields = pl.DataFrame(
        {"row_nr": [0, 1], "metadata_json": ['{"gate": {"reason": "r", "n": [1, 2]}}', None]}
    )
    rows = _metadata_rows(fields, LIST_VALUE_MAX_BYTES)
    assert rows == [
        ("gate.n", "[1,2]", None),
        ("gate.n[0]", "1", 1.0),
        ("gate.n[1]", "2", 2.0),
        ("gate.reason", '"r"', None),
    ]


def _metadata_rows(
    fields: pl.DataFrame, list_max_bytes: int
) -> list[tuple[str, str | None, float | None]]:
    rows = run_sql("ingest/run_metadata.sql", {"fields": fields}, params=[list_max_bytes])
    return [(r["key"], r["value"], r["value_num"]) for r in rows.sort("key").to_dicts()]


def test_a_list_over_the_limit_keeps_its_row_but_not_its_text() -> None:
    # Each list of a nest holds the text of all below it: a 15 MB string 60 lists deep had
    # made 915 MB of values, and three such lines a column past 2 GiB (their file lost).
    # Over the limit a list's value is null; its items keep theirs, a string its whole text.
    text, long = "x" * 20, "y" * 30
    fields = pl.DataFrame(
        {"row_nr": [0], "metadata_json": [f'{{"deep": [["{text}"]], "n": [1, 2], "s": "{long}"}}']}
    )
    assert _metadata_rows(fields, list_max_bytes=24) == [
        ("deep", None, None),  # [["xxx..."]]: 26 bytes
        ("deep[0]", '["' + text + '"]', None),  # 24 bytes: kept
        ("deep[0][0]", f'"{text}"', None),
        ("n", "[1,2]", None),
        ("n[0]", "1", 1.0),
        ("n[1]", "2", 2.0),
        ("s", f'"{long}"', None),  # 32 bytes: a string is kept whatever its length
    ]
