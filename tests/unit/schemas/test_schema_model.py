"""``schemas.model``: tables declared without pandera, checked by Polars, and handed to the
pandera model of the same declaration when a rule fails, so pandera's error names it."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pandera.errors
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas import checked, polars_schema
from schemas.model import Field, Model, keeps_rules, pandera_model
from schemas.registry import LANDED, SCORED
from schemas.tasks import TaskScore
from tests.examples import examples
from tests.paths import ROOT

MODELS = {**LANDED, **SCORED}


class Sample(Model):
    share: pl.Float64 = Field(nullable=True, ge=0, le=1)
    count: pl.Int64 = Field(gt=0, unique=True)
    code: str = Field(nullable=True, str_length={"min_value": 1, "max_value": 2})
    kind: str = Field(isin=["a", "b"])
    flag: bool

    class Config:
        strict = True
        coerce = False
        unique = ["kind", "code"]  # noqa: RUF012 (pandera's Config reads a list)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_pandera_model_is_the_declaration(name: str) -> None:
    model = MODELS[name]
    schema = pandera_model(model).to_schema()
    assert pandera_model(model).__name__ == model.__name__
    assert list(schema.columns) == list(model.columns)
    for column_name, column in schema.columns.items():
        declared = model.columns[column_name]
        assert column.dtype.type == polars_schema(model)[column_name], column_name
        assert column.nullable == declared.info.nullable, column_name
        assert column.unique == declared.info.unique, column_name
        assert len(column.checks) == len(declared.info.rules), column_name
    assert (schema.unique or []) == (getattr(model.Config, "unique", None) or [])
    assert schema.strict is True
    # An empty frame of the declared schema is what pandera accepts too.
    empty = pl.DataFrame(schema=polars_schema(model))
    assert keeps_rules(model, empty)
    assert pandera_model(model).validate(empty).schema == polars_schema(model)


def test_a_field_keyword_the_checks_do_not_know_is_refused() -> None:
    with pytest.raises(TypeError, match="regex"):
        Field(regex="^a")


FLOATS = st.one_of(
    st.none(), st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, 1.0, -0.0])
)
CODES = st.one_of(st.none(), st.text(alphabet="xé€", max_size=3))


@st.composite
def frames(draw: st.DrawFn) -> pl.DataFrame:
    rows = draw(st.integers(min_value=0, max_value=6))
    column: dict[str, Any] = {
        "share": [draw(FLOATS) for _ in range(rows)],
        "count": [draw(st.one_of(st.none(), st.integers(-1, 4))) for _ in range(rows)],
        "code": [draw(CODES) for _ in range(rows)],
        "kind": [draw(st.one_of(st.none(), st.sampled_from(["a", "b", "c"]))) for _ in range(rows)],
        "flag": [draw(st.one_of(st.none(), st.booleans())) for _ in range(rows)],
    }
    return pl.DataFrame(column, schema=polars_schema(Sample))


def _pandera_passes(frame: pl.DataFrame) -> bool:
    try:
        pandera_model(Sample).validate(frame, lazy=True)
    except pandera.errors.SchemaErrors:
        return False
    return True


@settings(max_examples=examples(150), deadline=None)
@given(frame=frames())
def test_the_polars_rules_give_pandera_verdict(frame: pl.DataFrame) -> None:
    # The same expressions as pandera's backend: never looser (what passes here must pass
    # there, or a bad table would be written), and here not stricter either. A frame the
    # rules refuse goes to pandera inside `checked`, whose raising is pandera's verdict; so
    # pandera is asked once per frame (its validation is most of this test's time).
    if keeps_rules(Sample, frame):
        assert _pandera_passes(frame)
        assert checked(Sample, frame).equals(frame)
    else:
        with pytest.raises(pandera.errors.SchemaErrors):
            checked(Sample, frame)


def test_a_failure_names_the_column_and_the_check() -> None:
    frame = pl.DataFrame(
        {
            "share": [0.5, 2.0],
            "count": [1, 1],
            "code": ["x", ""],
            "kind": ["a", "c"],
            "flag": [True, False],
        },
        schema=polars_schema(Sample),
    )
    with pytest.raises(pandera.errors.SchemaErrors) as failed:
        checked(Sample, frame)
    said = str(failed.value)
    for column, check in [
        ("share", "less_than_or_equal_to(1)"),
        ("count", "field_uniqueness"),
        ("code", "str_length(1, 2)"),
        ("kind", "isin"),
    ]:
        assert f'"column": "{column}"' in said and check in said, (column, check)


def test_a_scored_table_with_a_status_outside_the_list_is_refused_by_name() -> None:
    row = dict.fromkeys(polars_schema(TaskScore)) | {
        "run_id": "r",
        "rubric_id": "x",
        "status": "bogus",
        "anomalies": [],
    }
    frame = pl.DataFrame([row], schema=polars_schema(TaskScore))
    with pytest.raises(pandera.errors.SchemaErrors, match="status") as failed:
        checked(TaskScore, frame)
    assert "isin" in str(failed.value)


def test_declaring_and_checking_the_tables_does_not_import_pandera() -> None:
    code = (
        "import sys, polars as pl; import schemas.registry as r; from schemas import checked; "
        "m = r.SCORED['task_scores']; checked(m, pl.DataFrame(schema=m.schema)); "
        "import pipeline.jobs.commands, pipeline.jobs.score; "
        "print(sorted(n for n in ('pandera', 'pandas', 'pyspark') if n in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"
