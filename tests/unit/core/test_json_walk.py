"""The level-by-level JSON walk (pipeline/core/jsonwalk.py) that run_metadata.sql and
non_finite_large.sql judge finds what DuckDB's json_tree finds, with json_tree's paths,
and holds one level at a time."""

from __future__ import annotations

import json

import duckdb
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.jsonwalk import walk_json
from pipeline.core.sql import connect, prepare_session, run_sql
from pipeline.tasks.validate import LIST_VALUE_MAX_BYTES
from tests.examples import examples

DOCS = [
    '{"a": 1, "b": [true, null, {"c.d": "x", "e": []}], "f": {}, "g": {"h": -2.5e3}}',
    '{"x y": {"\\"q\\"": [1, [2, [3]]]}, "m": [{"k": -Infinity}]}',
    '{"only": "text"}',
]


def _walked_and_tree(docs: pl.DataFrame) -> tuple[pl.DataFrame, list[tuple[object, ...]]]:
    """run_metadata.sql's rows of ``docs`` (row_nr, doc) by the walk, and json_tree's nodes
    filtered as it filters them (every node but the root and non-empty objects)."""
    con = connect()
    try:
        walked = walk_json(docs, "ingest/run_metadata.sql", con, [LIST_VALUE_MAX_BYTES])
        con.register("docs", docs)
        tree = con.sql(
            "select d.row_nr, substr(t.fullkey, 3), t.value::varchar, "
            "case when t.type in ('UBIGINT', 'BIGINT', 'DOUBLE') then t.value::double end "
            "from docs as d, json_tree(d.doc) as t "
            "where t.fullkey <> '$' and (t.type <> 'OBJECT' or t.value::varchar = '{}')"
        ).fetchall()
    finally:
        con.close()
    return walked, tree


def test_the_walk_gives_every_node_json_tree_gives() -> None:
    # run_metadata.sql keeps every node but the root and non-empty objects: compared with
    # json_tree's nodes, filtered alike, over documents with quoted keys, nested and empty
    # lists and objects, and a non-finite number.
    docs = pl.DataFrame({"row_nr": range(len(DOCS)), "doc": DOCS})
    walked, tree = _walked_and_tree(docs)
    assert sorted(walked.rows(), key=str) == sorted(tree, key=str)
    assert len(tree) > 15
    assert ("$.x y" not in walked["key"].to_list()) and '"x y"."\\"q\\""[1][1][0]' in (
        walked["key"].to_list()
    )


def test_a_deep_nest_is_held_one_level_at_a_time() -> None:
    # A 2 MB string 60 lists deep: a walk keeping every level holds ~120 MB of text, over
    # the connection's 64 MB; one level at a time holds a few copies of 2 MB.
    text = "x" * (2 * 1024 * 1024)
    doc = "{" + '"deep": ' + "[" * 60 + f'"{text}", 1e999' + "]" * 60 + "}"
    docs = pl.DataFrame({"row_nr": [0], "doc": [doc]})
    con = duckdb.connect(config={"memory_limit": "64MB", "threads": 1})
    try:
        prepare_session(con)
        walked = walk_json(docs, "ingest/run_metadata.sql", con, [LIST_VALUE_MAX_BYTES])
        first = "ingest/non_finite_large_first.sql"
        problems = walk_json(docs, "ingest/non_finite_large.sql", con, finish=first)
    finally:
        con.close()
    leaf = "deep" + "[0]" * 59
    assert walked.height == 62
    assert walked.filter(pl.col("value").is_not_null()).select("key", "value").rows() == [
        (f"{leaf}[0]", f'"{text}"'),
        (f"{leaf}[1]", "1e999"),
    ]
    assert problems.rows() == [(0, f"$.{leaf}[1]", "1e999", "non_finite")]


def test_large_and_small_suspects_name_the_same_non_finite_path() -> None:
    suspects = pl.DataFrame({"row_nr": range(len(DOCS)), "raw": DOCS})
    small = run_sql("ingest/non_finite.sql", {"suspects": suspects})
    con = connect()
    try:
        docs = suspects.select("row_nr", doc="raw")
        finish = "ingest/non_finite_large_first.sql"
        large = walk_json(docs, "ingest/non_finite_large.sql", con, finish=finish)
    finally:
        con.close()
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
    con = connect()
    try:
        docs = fields.select("row_nr", doc="metadata_json")
        rows = walk_json(docs, "ingest/run_metadata.sql", con, [list_max_bytes])
    finally:
        con.close()
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


_KEYS = st.text(
    alphabet=st.sampled_from(["a", "Z", "_", "1", ".", '"', "\\", " ", "é", "["]), max_size=4
)
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.dictionaries(_KEYS, _JSON, max_size=5), min_size=1, max_size=4))
def test_the_walk_finds_json_trees_nodes_for_any_document(documents: list[object]) -> None:
    # Keys that need quoting, nested and empty lists and objects, every JSON scalar: the
    # walk's rows are json_tree's, filtered as run_metadata.sql filters them, in any shape.
    docs = pl.DataFrame(
        {"row_nr": range(len(documents)), "doc": [json.dumps(d) for d in documents]},
        schema={"row_nr": pl.Int64, "doc": pl.String},
    )
    walked, tree = _walked_and_tree(docs)
    assert sorted(walked.rows(), key=repr) == sorted(tree, key=repr)
