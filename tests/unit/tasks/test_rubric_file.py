"""rubrics/default.toml is the built-in default rubric, complete, key for key."""

from __future__ import annotations

import tomllib

from pipeline.rubric import DEFAULT_RUBRIC, load_rubric, parse_rubric
from tests.paths import ROOT

FILE = ROOT / "rubrics" / "default.toml"


def test_the_file_gives_every_default_key_with_its_value() -> None:
    # Compared before any merging: a key missing from the file would be filled in
    # by the defaults and go unnoticed after it.
    assert tomllib.loads(FILE.read_text(encoding="utf-8")) == DEFAULT_RUBRIC


def test_the_file_scores_like_no_file_at_all() -> None:
    from_file, built_in = load_rubric(FILE), parse_rubric({})
    assert from_file.resolved == built_in.resolved
    assert from_file.rubric_id == built_in.rubric_id
    assert from_file.task == built_in.task
    assert from_file.is_default_surface
