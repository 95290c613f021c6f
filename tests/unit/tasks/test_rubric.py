"""Rubric loading (CONTRACT section 6): defaults, partial files, and refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.rubric import DEFAULT_RUBRIC, RubricError, load_rubric, parse_rubric
from tests.clirunner import pipeline


def test_defaults_are_the_contract_values() -> None:
    rubric = parse_rubric({})
    assert rubric.task.minimization_multiple == 3.0
    assert rubric.task.penalty_scale == 1.0
    assert rubric.task.failure_threshold is None
    assert rubric.task.envs["exploit"].gate == "defect_matching"
    assert rubric.task.envs["patch"].gate == "patch_verified"
    assert rubric.task.envs["audit"].gate is None
    assert dict(rubric.task.envs["audit"].weights) == {"audit": 1.0}
    assert rubric.surface_weights["selection_robustness"] == 25.0
    assert rubric.is_default_surface


def test_partial_file_keeps_every_other_default(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text("[task]\nfailure_threshold = 0.5\n[task.patch.weights]\nminimization = 0.1\n")
    rubric = load_rubric(path)
    assert rubric.task.failure_threshold == 0.5
    # Only the named weight changes; the other three keep their defaults.
    assert dict(rubric.task.envs["patch"].weights) == {
        "patch_verified": 0.25,
        "number_of_attempts": 0.25,
        "size_of_patch": 0.25,
        "minimization": 0.1,
    }
    assert rubric.task.envs["exploit"].weights == DEFAULT_RUBRIC["task"]["exploit"]["weights"]


def test_rubric_id_is_given_or_a_content_hash() -> None:
    assert parse_rubric({"rubric_id": "strict-2026"}).rubric_id == "strict-2026"
    same = parse_rubric({"task": {"penalty_scale": 1.0}})
    assert same.rubric_id == parse_rubric({}).rubric_id  # equal content, equal id
    other = parse_rubric({"task": {"penalty_scale": 2.0}})
    assert other.rubric_id != same.rubric_id
    assert other.rubric_id.startswith("sha256:")


@pytest.mark.parametrize(
    ("document", "named"),
    [
        ({"task": {"exploit": {"weights": {"pov_quality": 0.3}}}}, "task.exploit.weights"),
        ({"task": {"detect": {"weights": {"defect_matching": 0.5}}}}, "task.detect.weights"),
        ({"task": {"failure_threshold": 1.5}}, "task.failure_threshold = 1.5"),
        ({"task": {"failure_threshold": -0.1}}, "task.failure_threshold = -0.1"),
        ({"task": {"minimization_multiple": 1.0}}, "task.minimization_multiple = 1.0"),
        ({"task": {"minimization_multiple": 0.5}}, "task.minimization_multiple = 0.5"),
        ({"task": {"audit": {"weights": {"audit": -1}}}}, "task.audit.weights.audit = -1.0"),
        ({"surface": {"weights": {"schema_hygiene": -5}}}, "surface.weights.schema_hygiene"),
        ({"colour": "blue"}, "colour = 'blue'"),
        ({"task": {"penalty_scal": 1.0}}, "task.penalty_scal"),
        ({"task": {"penalty_scale": "high"}}, "task.penalty_scale = 'high'"),
        ({"task": {"failure_threshold": "0.5"}}, "task.failure_threshold = '0.5'"),
        ({"task": {"exploit": {"gate": 3}}}, "task.exploit.gate = 3"),
        ({"task": {"exploit": {"gate": "nope"}}}, "task.exploit.gate = 'nope'"),
        ({"surface": {"tokens_per_tool_bad": 100.0}}, "surface.tokens_per_tool_bad"),
        ({"rubric_id": ""}, "rubric_id"),
    ],
)
def test_refused_with_the_key_named(document: dict[str, object], named: str) -> None:
    with pytest.raises(RubricError) as caught:
        parse_rubric(document)
    assert named in str(caught.value)


def test_weights_summing_to_one_within_1e_9_pass() -> None:
    weights = {
        "defect_matching": 0.6 + 5e-10,
        "pov_quality": 0.2,
        "summary_quality": 0.1,
        "target_calls": 0.1,
    }
    assert parse_rubric({"task": {"exploit": {"weights": weights}}})


def test_a_letter_band_is_open_but_a_default_letter_in_another_case_is_refused() -> None:
    # "a+" would have added a letter beside A+ (a server at 58.8 became "a+"), not moved A+.
    with pytest.raises(RubricError) as caught:
        parse_rubric({"surface": {"letter_bands": {"a+": 50}}})
    assert str(caught.value) == (
        "rubric key surface.letter_bands.a+ = 50.0: letters are case-sensitive: A+ moves "
        "that letter's cutoff, another name adds a letter"
    )
    bands = parse_rubric({"surface": {"letter_bands": {"A+": 99, "E": 50}}}).surface.letter_bands
    assert (bands["A+"], bands["E"], bands["A"]) == (99.0, 50.0, 93.0)


def test_new_env_type_is_a_table_of_its_own() -> None:
    rubric = parse_rubric({"task": {"fuzz": {"gate": "crash", "weights": {"crash": 1.0}}}})
    assert rubric.task.envs["fuzz"].gate == "crash"
    with pytest.raises(RubricError, match=r"task\.fuzz\.weights"):
        parse_rubric({"task": {"fuzz": {"gate": "crash"}}})


def test_unreadable_and_invalid_toml(tmp_path: Path) -> None:
    with pytest.raises(RubricError, match="cannot be read"):
        load_rubric(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[task\n")
    with pytest.raises(RubricError, match="not valid TOML"):
        load_rubric(bad)


@given(st.floats(min_value=-10, max_value=10, allow_nan=False))
def test_threshold_accepted_exactly_in_unit_interval(threshold: float) -> None:
    document = {"task": {"failure_threshold": threshold}}
    if 0.0 <= threshold <= 1.0:
        assert parse_rubric(document).task.failure_threshold == threshold
    else:
        with pytest.raises(RubricError):
            parse_rubric(document)


def test_cli_refuses_bad_rubric_with_exit_2_before_any_work(tmp_path: Path) -> None:
    rubric = tmp_path / "bad.toml"
    rubric.write_text("[task]\nminimization_multiple = 1.0\n")
    lake = tmp_path / "lake"
    done = pipeline("run", "--lake", lake, "--rubric", rubric)
    assert done.returncode == 2
    assert "task.minimization_multiple = 1.0" in done.stderr
    assert not lake.exists()  # nothing read, nothing written


def test_a_content_id_names_only_its_content() -> None:
    # A rubric cannot take the default's content id (the lake could then never go back to
    # the defaults: that id would name two rubrics); its own content id it may give.
    default_id = parse_rubric({}).rubric_id
    with pytest.raises(RubricError, match=r"names a rubric by its content, and this rubric's"):
        parse_rubric({"rubric_id": default_id, "task": {"penalty_scale": 5.0}})
    assert parse_rubric({"rubric_id": default_id}).rubric_id == default_id


def test_surface_weights_that_are_all_zero_are_refused() -> None:
    zero = dict.fromkeys(DEFAULT_RUBRIC["surface"]["weights"], 0)
    with pytest.raises(RubricError, match=r"surface.weights.*at least one weight must be > 0"):
        parse_rubric({"surface": {"weights": zero}})


def test_a_rubric_file_saved_with_a_bom_reads(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_bytes(b"\xef\xbb\xbf" + b'rubric_id = "bom"\n[task]\npenalty_scale = 0.5\n')
    assert load_rubric(path).rubric_id == "bom"


@pytest.mark.parametrize("rubric_id", ["v2\\u001b]0;title\\u0007", "v2\\u202e", "v2\\nv3"])
def test_a_rubric_file_naming_an_unprintable_id_is_refused(tmp_path: Path, rubric_id: str) -> None:
    # Printed by every later command: no escape sequence, bidi override or line break.
    path = tmp_path / "r.toml"
    path.write_text(f'rubric_id = "{rubric_id}"\n[task]\npenalty_scale = 0.5\n')
    with pytest.raises(RubricError, match="expected printable characters only"):
        load_rubric(path)


def test_an_unprintable_id_a_lake_already_holds_still_parses() -> None:
    # Lakes made before the file check keep working (their ids are shown escaped).
    assert parse_rubric({"rubric_id": "v2\tnow"}).rubric_id == "v2\tnow"


def test_a_sum_off_by_a_misspelt_weight_names_it_and_the_closest_default() -> None:
    # A table merges key by key: pov_qualty = 0.3 is added beside pov_quality (0.2 kept),
    # 0.5 + 0.2 + 0.1 + 0.1 + 0.3 = 1.2. The refusal had given only the sum.
    with pytest.raises(RubricError) as caught:
        parse_rubric(
            {"task": {"exploit": {"weights": {"defect_matching": 0.5, "pov_qualty": 0.3}}}}
        )
    message = str(caught.value)
    assert "must sum to 1.0, they sum to 1.2" in message
    assert "pov_qualty is not one of the default exploit weights (the closest: pov_quality)" in (
        message
    )
    # A name like none of the defaults is named without a guess; a sum off by the default
    # names alone adds nothing.
    with pytest.raises(RubricError) as caught:
        parse_rubric({"task": {"detect": {"weights": {"zzz": 0.5}}}})
    assert "zzz is not one of the default detect weights; a table merges" in str(caught.value)
    with pytest.raises(RubricError) as caught:
        parse_rubric({"task": {"detect": {"weights": {"pov_quality": 0.5}}}})
    assert str(caught.value).endswith("they sum to 1.3")
