"""Pandera models of every table the pipeline writes, checked before each write."""

from __future__ import annotations

import functools

import pandera.polars as pa
import polars as pl


@functools.cache
def _columns(model: type[pa.DataFrameModel]) -> tuple[tuple[str, pl.DataType], ...]:
    # A model's columns never change, and pandera rebuilds its schema object on each
    # to_schema() (about 1 ms): a run asked for them some 600 times.
    columns = model.to_schema().columns
    return tuple((name, column.dtype.type) for name, column in columns.items())


def polars_schema(model: type[pa.DataFrameModel]) -> pl.Schema:
    """The Polars schema a model describes, for empty frames and typed scans (a new
    object each call: callers may change theirs)."""
    return pl.Schema(_columns(model))


def checked(model: type[pa.DataFrameModel], frame: pl.DataFrame) -> pl.DataFrame:
    """Validate values as well as schema, in the model's column order."""
    ordered = frame.select([name for name, _ in _columns(model)])
    if ordered.height == 0 and ordered.schema == polars_schema(model):
        # No values to check, and pandera's checks cost 5-40 ms a table even then
        # (every chunk of an ingest has several empty tables). Any other schema
        # goes to pandera, so the error is its own.
        return ordered
    validated: pl.DataFrame = model.validate(ordered, lazy=True)
    return validated
