"""An unforeseen error as a quarantine reason: its type and first line, and for a
validation error where its first error is (its first line only counts them)."""

from __future__ import annotations

import duckdb
import pytest
from pydantic import BaseModel, ValidationError

from pipeline.sources.limits import FAILURE_TEXT_CHARS, failure_text


class Sample(BaseModel):
    id: str
    epoch: int


def test_a_validation_error_says_where_its_first_error_is() -> None:
    with pytest.raises(ValidationError) as caught:
        Sample.model_validate({"id": None, "epoch": "x"})
    assert failure_text(caught.value) == (
        "ValidationError: 2 validation errors for Sample, the first at id: Input should be a "
        "valid string"
    )


def test_another_error_keeps_its_first_line_within_the_limit() -> None:
    assert failure_text(ValueError("first\nsecond")) == "ValueError: first"
    assert failure_text(KeyError()) == "KeyError"
    long = failure_text(RuntimeError("x" * 1000))
    assert long == "RuntimeError: " + "x" * FAILURE_TEXT_CHARS


def test_an_errors_method_of_another_shape_is_left_alone() -> None:
    class Odd(Exception):
        def errors(self) -> list[str]:
            return ["not a mapping"]

    assert failure_text(Odd("what it says")) == "Odd: what it says"


def test_duckdb_out_of_memory_names_the_setting_to_raise() -> None:
    con = duckdb.connect(config={"memory_limit": "16MB", "threads": 1})
    with pytest.raises(duckdb.OutOfMemoryException) as caught:
        con.execute("select list(repeat('x', 1000)) from range(1000000)").fetchall()
    text = failure_text(caught.value)
    assert text.startswith("OutOfMemoryException: Out of Memory Error")
    assert text.endswith(
        "(DuckDB's memory per connection is set by PIPELINE_DUCKDB_MEMORY_BYTES: raise it and "
        "read the file again)"
    )
