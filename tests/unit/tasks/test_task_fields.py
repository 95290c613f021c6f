"""The task fields declared once (pipeline/tasks/fields.py): the parse SQL generated from
them reads each field at its own path, and the bounds reach validation and the model."""

from __future__ import annotations

import json

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.sql import run_sql
from pipeline.ingest.batch import Batch
from pipeline.ingest.dedupe import touching
from pipeline.tasks.fields import BY_NAME, RUN_ID_MAX_CHARS, TASK_FIELDS, Kind
from pipeline.tasks.parse import PARSE_LINES_SQL, parse_marks
from pipeline.tasks.validate import field_rules
from schemas.model import pandera_model
from schemas.tasks import TaskRun
from tests.examples import examples


def _parsed(record: dict[str, object]) -> dict[str, object]:
    lines = pl.DataFrame({"row_nr": pl.Series([0], dtype=pl.UInt32), "raw": [json.dumps(record)]})
    row: dict[str, object] = run_sql(PARSE_LINES_SQL, {"lines": lines}, marks=parse_marks()).row(
        0, named=True
    )
    return row


def test_each_field_is_read_from_its_own_path() -> None:
    # A distinct value at every path of a string or number field: a shifted index (t[26]
    # for t[25]) would show another field's value.
    record: dict[str, object] = {}
    expected: dict[str, object] = {}
    for i, f in enumerate(TASK_FIELDS):
        value: object = {Kind.STRING: f"s{i}", Kind.NUMBER: i + 0.5, Kind.INTEGER: i}.get(f.kind)
        if value is None:
            continue
        node = record
        *above, last = f.path.split(".")
        for key in above:
            node = node.setdefault(key, {})  # type: ignore[assignment]
        node[last] = value
        expected[f.name] = value
    row = _parsed(record)
    assert {name: row[name] for name in expected} == expected
    assert row["trial__type"] == "UBIGINT"
    assert row["cost_usd__type"] == "DOUBLE"


def test_objects_are_read_for_their_type_and_fragments_kept() -> None:
    row = _parsed({"grade": {"subscores": {"a": 1}, "metadata": {"found": "x"}}})
    assert row["grade__type"] == "OBJECT"
    assert row["grade_keys"] == ["subscores", "metadata"]
    assert json.loads(str(row["subscores_json"])) == {"a": 1}
    assert row["weights__type"] is None and row["weights_json"] is None
    assert row["audit_found__type"] == "VARCHAR"


def test_the_run_id_limit_is_written_once() -> None:
    assert BY_NAME["run_id"].max_chars == RUN_ID_MAX_CHARS == 256
    check = pandera_model(TaskRun).to_schema().columns["run_id"].checks[0]
    assert (check.statistics["min_value"], check.statistics["max_value"]) == (1, 256)
    frame = pl.DataFrame({"run_id__type": ["VARCHAR", "VARCHAR"], "run_id": ["a" * 256, "a" * 257]})
    rule = field_rules([])[5]  # after the four repeated-key rules and the required one
    assert frame.select(rule).to_series().to_list() == [
        None,
        "field `run_id` must have 1 to 256 characters, got 257",
    ]


def test_bounds_reach_the_model() -> None:
    columns = pandera_model(TaskRun).to_schema().columns
    assert [c.statistics for c in columns["cost_usd"].checks] == [{"min_value": 0}]
    assert [c.statistics for c in columns["minimization_final_size"].checks] == [{"min_value": 0}]
    assert columns["minimization_final_size"].checks[0].name == "greater_than"


def _batch(lines: list[int]) -> Batch:
    empty_runs = pl.DataFrame(schema={"source": pl.String, "line": pl.Int64})
    quarantine = pl.DataFrame(
        {"source": ["f"] * len(lines), "line": lines, "line_end": [None] * len(lines)},
        schema={"source": pl.String, "line": pl.Int64, "line_end": pl.Int64},
    )
    return Batch("b", {"task_runs": empty_runs, "surface_runs": empty_runs}, quarantine, 0, 0)


def test_dedupe_reads_only_the_held_rows_that_touch_the_chunk() -> None:
    # Held: a single line 5, a block 10..30, a block 40..60, a line 90 and a line of
    # another file. The chunk read lines 25..50 of f.
    held = pl.LazyFrame(
        {
            "source": ["f", "f", "f", "f", "g"],
            "line": [5, 10, 40, 90, 30],
            "line_end": [None, 30, 60, None, None],
        },
        schema={"source": pl.String, "line": pl.Int64, "line_end": pl.Int64},
    )
    near = touching(held, _batch([25, 50])).collect()
    assert near.select("line", "line_end").rows() == [(10, 30), (40, 60)]
    assert touching(held, _batch([])).collect().height == 0


# A part's key list as the record writes it: missing (None), or names that may repeat.
KEY_LISTS = st.one_of(st.none(), st.lists(st.sampled_from(["a", "b", "c", "é"]), max_size=5))


def _part(keys: list[str] | None) -> str:
    # Written as text: a dict cannot name a key twice.
    return "" if keys is None else "{" + ",".join(f'"{k}":0.5' for k in keys) + "}"


@settings(max_examples=examples(50), deadline=None)
@given(st.lists(st.tuples(KEY_LISTS, KEY_LISTS, KEY_LISTS), min_size=1, max_size=30))
def test_part_keys_plain_is_each_key_once_and_the_same_keys(
    records: list[tuple[list[str] | None, list[str] | None, list[str] | None]],
) -> None:
    # part_keys_plain, per its definition: subscores, weights and penalties each name a
    # key at most once, and subscores and weights name the same keys (a missing part names
    # none), whatever the order.
    raws = []
    for parts in records:
        named = [
            f'"{name}":{_part(keys)}'
            for name, keys in zip(("subscores", "weights", "penalties"), parts, strict=True)
            if keys is not None
        ]
        raws.append('{"grade":{' + ",".join(named) + "}}")
    lines = pl.DataFrame({"row_nr": pl.Series(range(len(raws)), dtype=pl.UInt32), "raw": raws})
    parsed = run_sql(PARSE_LINES_SQL, {"lines": lines}, marks=parse_marks()).sort("row_nr")

    def once(keys: list[str] | None) -> bool:
        return len(keys or []) == len(set(keys or []))

    expected = [
        once(s) and once(w) and once(p) and set(s or []) == set(w or []) for s, w, p in records
    ]
    assert parsed.get_column("part_keys_plain").to_list() == expected
