"""Pandera models of every table the pipeline writes, checked before each write."""

from __future__ import annotations

import functools

import pandera.polars as pa
import polars as pl


@functools.cache
def polars_schema(model: type[pa.DataFrameModel]) -> pl.Schema:
    """The Polars schema a model describes, for empty frames and typed scans.

    One shared object per model (read it, never change it): pandera rebuilds its schema
    on each to_schema() and a pl.Schema validates its dtypes when made, about 1.5 ms
    together, and a run asks some 600 times.
    """
    columns = model.to_schema().columns
    return pl.Schema({name: column.dtype.type for name, column in columns.items()})


def checked(model: type[pa.DataFrameModel], frame: pl.DataFrame) -> pl.DataFrame:
    """Validate values as well as schema, in the model's column order."""
    ordered = frame.select(list(polars_schema(model)))
    if ordered.height == 0 and ordered.schema == polars_schema(model):
        # No values to check, and pandera's checks cost 5-40 ms a table even then
        # (every chunk of an ingest has several empty tables). Any other schema
        # goes to pandera, so the error is its own.
        return ordered
    validated: pl.DataFrame = model.validate(ordered, lazy=True)
    return validated
