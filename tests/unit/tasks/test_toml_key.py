"""The unknown-env-type hint names a rubric table a person can paste: its key, bare or
quoted, reads back as the env type (and for the one name no rubric may take, it says so)."""

from __future__ import annotations

import tomllib

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.tasks.validate import _env_type_rule, toml_key
from tests.examples import examples


def test_bare_when_it_may_be_quoted_when_not() -> None:
    keys = pl.select(toml_key(pl.Series(["fuzz", "_a-9", "../exploit", 'a"b']))).to_series()
    assert keys.to_list() == ["fuzz", "_a-9", '"../exploit"', '"a\\"b"']


@given(st.text(st.characters(exclude_categories=["Cc", "Cs"]), min_size=1))
@settings(max_examples=examples(200), deadline=None)
def test_the_table_read_back_is_the_env_type(name: str) -> None:
    key = pl.select(toml_key(pl.lit(name))).item()
    assert list(tomllib.loads(f"[task.{key}]\nx = 1\n")["task"]) == [name]


def test_an_env_type_named_all_is_told_no_rubric_can_accept_it() -> None:
    # 'all' is the row over every env type in compare and version_regressions, and the
    # rubric refuses a [task.all] table: advising one would send the reader to a refusal.
    lines = pl.DataFrame(
        {"env_type": ["all", "fuzz", "exploit"], "env_type__type": ["VARCHAR"] * 3}
    )
    reasons = lines.select(_env_type_rule(["exploit", "patch"])).to_series().to_list()
    assert reasons == [
        "env_type 'all' is the name compare, history and version_regressions give every env "
        "type together, so no rubric can accept it: the grader must name the env type otherwise",
        "unknown env_type 'fuzz': expected one of exploit, patch; to accept it, add a "
        "[task.fuzz] table (gate, weights) to the rubric, then run replay-quarantine",
        None,
    ]
