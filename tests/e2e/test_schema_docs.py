"""The warehouse as a dbt-style project: views applied in the order of what they read,
every view and column documented in pipeline/sql/schema.yml (and nothing documented that
is not there), the YAML's tests on the sample warehouse, the data dictionary generated."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from pipeline.warehouse import (
    WarehouseError,
    create_views,
    models,
    view_order,
    warehouse_path,
)
from pipeline.warehouse.models import Model
from tools.warehouse_docs import DOCS, SchemaDocError, check_queries, load, with_dictionary

VIEW_COLUMNS = """
    select c.table_name, list(c.column_name order by c.ordinal_position)
    from information_schema.columns as c
    join information_schema.tables as t using (table_catalog, table_schema, table_name)
    where t.table_type = 'VIEW'
    group by c.table_name
"""


@pytest.fixture(scope="module")
def sample_warehouse(sample_lake: Path) -> Path:
    return warehouse_path(sample_lake)


def test_every_view_column_is_documented_and_every_documented_column_exists(
    sample_warehouse: Path,
) -> None:
    with duckdb.connect(str(sample_warehouse), read_only=True) as con:
        built = dict(con.sql(VIEW_COLUMNS).fetchall())
    documented = {m.name: [c.name for c in m.columns] for m in load()}
    assert sorted(built) == sorted(documented), "views built and views documented differ"
    for view, columns in built.items():
        # In the view's own order, so the dictionary reads like `describe <view>`.
        assert documented[view] == columns, view
    assert set(built) == set(models())


def test_the_yaml_tests_pass_on_the_sample_warehouse(sample_warehouse: Path) -> None:
    queries = check_queries(load())
    assert len(queries) > 40
    with duckdb.connect(str(sample_warehouse), read_only=True) as con:
        failing = {
            label: count
            for label, (sql, params) in queries.items()
            if (count := con.execute(sql, params).fetchone()[0])  # type: ignore[index]
        }
    assert failing == {}


def test_the_yaml_tests_catch_what_they_name() -> None:
    queries = check_queries(load())
    with duckdb.connect() as con:
        con.execute(
            "create view fleet as select * from (values ('overall', 1), ('overall', 2), "
            "('p99', 3), (null, 4)) as v(dimension, servers)"
        )
        count = {
            kind: con.execute(*queries[f"fleet.dimension: {kind}"]).fetchone()[0]  # type: ignore[index]
            for kind in ("not_null", "unique", "accepted_values")
        }
    assert count == {"not_null": 1, "unique": 1, "accepted_values": 1}


def test_the_data_dictionary_is_generated_from_the_yaml() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert with_dictionary(text, load()) == text, "run: python -m tools.warehouse_docs --write"
    for model in load():
        assert f"### `{model.name}`" in text


def test_a_column_without_a_description_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "schema.yml"
    path.write_text(
        "shared_columns: {agent: who}\n"
        "models:\n"
        "  - name: v\n    description: d\n    group: Intermediate\n"
        "    columns: [{name: agent}, {name: mystery}]\n"
    )
    with pytest.raises(SchemaDocError, match=r"v\.mystery: no description"):
        load(path)


def test_each_view_comes_after_every_view_it_reads() -> None:
    found = models()
    order = view_order(found)
    assert sorted(order) == sorted(found)
    for name in order:
        for read in found[name].reads & set(found):
            assert order.index(read) < order.index(name), (read, name)
    assert found["fleet"].reads == {"by_server"}
    assert found["by_agent"].reads == {"task_runs", "int_problem_outcomes"}


def _models(tmp_path: Path, **sql: str) -> dict[str, Model]:
    """The views ``name=body`` (``create or replace view <body>``) as files, read as models."""
    paths = []
    for name, body in sql.items():
        path = tmp_path / f"{name}.sql"
        path.write_text(f"-- {name}: from a comment, from_nothing\ncreate or replace view {body}")
        paths.append(path)
    return models(paths)


def test_views_reading_each_other_in_a_cycle_fail_the_build(tmp_path: Path) -> None:
    found = _models(
        tmp_path,
        a="a as select * from b",
        b="b as with x as (select 1) select * from c join x on true",
        c="c as select * from a",
    )
    with pytest.raises(WarehouseError, match=r"cycle: (a|b|c) -> "):
        view_order(found)


def test_a_view_reading_an_unknown_relation_fails_naming_it(tmp_path: Path) -> None:
    with pytest.raises(WarehouseError, match=r"view a .* reads nowhere: neither a view nor"):
        _models(tmp_path, a="a as select * from stg_task_runs join nowhere using (run_id)")


def test_a_view_is_named_after_its_file(tmp_path: Path) -> None:
    with pytest.raises(WarehouseError, match="named after its file"):
        _models(tmp_path, a="b as select 1")


def test_names_in_comments_strings_and_ctes_are_not_reads(tmp_path: Path) -> None:
    found = _models(
        tmp_path,
        a="a as with runs as (select 'from b' as t from stg_task_runs) select * from runs",
        b="b as select * from a where 1 is not distinct from 1",
    )
    assert found["a"].reads == {"stg_task_runs"}
    assert found["b"].reads == {"a"}
    assert view_order(found) == ["a", "b"]


def test_some_views_with_what_they_read_over_a_given_relation() -> None:
    with duckdb.connect() as con:
        con.execute(
            "create table task_runs as select 'x' as agent, '1' as agent_version, "
            "'patch' as env_type, 'p' as problem_id, 'scored' as status, 0.5 as score, "
            "true as passed, now() as graded_at, 0.1 as cost_usd, 'r1' as run_id"
        )
        applied = create_views(con, ["by_agent"], given=["task_runs"])
        assert applied == ["int_problem_outcomes", "by_agent"]
        rows = con.sql("select runs, problems, pass_rate_problems from by_agent").fetchall()
    assert rows == [(1, 1, 1.0)]
