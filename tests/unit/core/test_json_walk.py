"""json_nodes (sql/queries/session.sql), the level-by-level walk that run_metadata.sql and
non_finite_large.sql share, finds what DuckDB's json_tree finds, with json_tree's paths."""

from __future__ import annotations

import polars as pl

from pipeline.core.sql import connect, run_sql

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
    rows = run_sql("ingest/run_metadata.sql", {"fields": fields}).sort("key").to_dicts()
    assert [(r["key"], r["value"], r["value_num"]) for r in rows] == [
        ("gate.n", "[1,2]", None),
        ("gate.n[0]", "1", 1.0),
        ("gate.n[1]", "2", 2.0),
        ("gate.reason", '"r"', None),
    ]
