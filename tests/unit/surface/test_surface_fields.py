"""The surface field list (pipeline/surface/fields.py) and the typed surface rubric: the
parse SQL's columns and the validation rules come from the one list, the rubric's named
fields from the same [surface] table."""

from __future__ import annotations

import dataclasses
from typing import Any

import polars as pl
import pytest

from pipeline.rubric import DEFAULT_RUBRIC, RubricError, parse_rubric
from pipeline.surface import parse_reports
from pipeline.surface.fields import (
    FIELDS_MARK,
    FINDING_FIELDS,
    RUN_FIELDS,
    Expect,
    Field,
    parents,
    select_list,
)
from pipeline.surface.rubric import SurfaceRubric
from pipeline.tasks.fields import RUN_ID_MAX_CHARS
from tests.surface_records import surface_records


def test_select_list_reads_type_and_text_and_the_items_of_a_list() -> None:
    fields = (Field("coverage_ran", "coverage.ran", Expect.STRINGS),)
    assert select_list(fields, "raw").split(",\n    ") == [
        "json_type(raw, '$.coverage.ran') as coverage_ran_t",
        "json_extract_string(raw, '$.coverage.ran') as coverage_ran_v",
        "json_type(raw, '$.coverage.ran[*]') as coverage_ran_item_types",
        "json_extract_string(raw, '$.coverage.ran[*]') as coverage_ran_items",
    ]


def test_parents_are_the_declared_fields_above_on_the_path() -> None:
    by_name = {f.name: f for f in RUN_FIELDS}
    assert parents(RUN_FIELDS, by_name["server_name"]) == ["server"]
    assert parents(RUN_FIELDS, by_name["run_id"]) == []
    measured = {f.name: f for f in FINDING_FIELDS}
    assert parents(FINDING_FIELDS, measured["m_injector_kind"]) == ["measurement"]


def test_names_and_paths_are_unique_and_the_sql_has_the_mark() -> None:
    from pipeline.core.sql import sql_text

    for fields, query in (
        (RUN_FIELDS, "surface_runs"),
        (FINDING_FIELDS, "surface_findings"),
    ):
        assert len({f.name for f in fields}) == len(fields)
        assert len({f.path for f in fields}) == len(fields)
        assert sql_text(f"ingest/{query}.sql").count(FIELDS_MARK) == 1


def _records(*reports: dict[str, Any]) -> pl.DataFrame:
    return surface_records(reports)


SURFACE_FINDING = {
    "probe": "static_hygiene",
    "kind": "token_cost",
    "target": [],
    "measurement": {
        "scope": "surface",
        "tokens": 1500,
        "tool_count": 2,
        "tokens_per_tool_avg": 150,
    },
}


def _report(run_id: str, *findings: dict[str, Any]) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "server": {"name": "s", "version": "1"},
        "generated_at": "2026-12-03T10:00:00Z",
        "findings": [SURFACE_FINDING, *findings],
    }


def test_the_run_id_limit_is_the_task_sides() -> None:
    # One limit for both kinds of record: 256 characters pass, 257 are refused.
    batch = parse_reports(_records(_report("a" * RUN_ID_MAX_CHARS), _report("b" * 257)))
    assert batch.runs["run_id"].to_list() == ["a" * RUN_ID_MAX_CHARS]
    assert batch.quarantine["reason"].to_list() == [
        f"run_id has 257 characters: expected at most {RUN_ID_MAX_CHARS}"
    ]


def test_a_measurement_key_is_checked_only_on_the_kind_that_reads_it() -> None:
    # fire_rate is read by distraction findings only: a text fire_rate elsewhere lands.
    stray = {"probe": "p", "kind": "duplicate", "target": ["a"], "measurement": {"fire_rate": "x"}}
    wrong = {"probe": "p", "kind": "distraction", "target": "a", "measurement": {"fire_rate": "x"}}
    batch = parse_reports(_records(_report("ok", stray), _report("bad", wrong)))
    assert batch.runs["run_id"].to_list() == ["ok"]
    assert batch.quarantine["reason"].to_list() == [
        'findings[1].measurement.fire_rate = "x": expected a finite number'
    ]


def test_the_typed_rubric_is_the_default_table() -> None:
    default = parse_rubric({})
    assert default.surface == SurfaceRubric()
    assert default.surface.table() == DEFAULT_RUBRIC["surface"]
    assert SurfaceRubric.from_table(SurfaceRubric().table()) == SurfaceRubric()
    names = {f.name for f in dataclasses.fields(SurfaceRubric)}
    assert names == set(DEFAULT_RUBRIC["surface"])
    assert default.is_default_surface


def test_a_rubric_file_sets_named_fields_and_keeps_the_rest() -> None:
    rubric = parse_rubric(
        {
            "surface": {
                "per_tool_share": 0.5,
                "description_smells": ["x"],
                "weights": {"schema_hygiene": 2},
            }
        }
    )
    assert rubric.surface.per_tool_share == 0.5
    assert rubric.surface.description_smells == ("x",)
    assert rubric.surface.weights["schema_hygiene"] == 2.0
    assert rubric.surface.weights["context_efficiency"] == 30.0
    assert rubric.surface.surface_share == 0.4
    assert not rubric.is_default_surface


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ({"nope": 1.0}, "surface.nope"),
        ({"surface_tokens_bad": 10.0}, "surface.surface_tokens_bad"),
        ({"redundancy_scale": "4"}, "surface.redundancy_scale"),
    ],
)
def test_the_rubric_refuses_the_same_tables(table: dict[str, object], key: str) -> None:
    with pytest.raises(RubricError, match=key):
        parse_rubric({"surface": table})
