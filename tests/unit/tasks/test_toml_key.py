"""The unknown-env-type hint names a rubric table a person can paste: its key, bare or
quoted, reads back as the env type."""

from __future__ import annotations

import tomllib

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.tasks.validate import toml_key
from tests.examples import examples


def test_bare_when_it_may_be_quoted_when_not() -> None:
    keys = pl.select(toml_key(pl.Series(["fuzz", "_a-9", "../exploit", 'a"b']))).to_series()
    assert keys.to_list() == ["fuzz", "_a-9", '"../exploit"', '"a\\"b"']


@given(st.text(st.characters(exclude_categories=["Cc", "Cs"]), min_size=1))
@settings(max_examples=examples(200), deadline=None)
def test_the_table_read_back_is_the_env_type(name: str) -> None:
    key = pl.select(toml_key(pl.lit(name))).item()
    assert list(tomllib.loads(f"[task.{key}]\nx = 1\n")["task"]) == [name]
