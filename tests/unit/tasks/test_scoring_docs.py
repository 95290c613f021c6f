"""docs/scoring.md's numbers are the code's: its worked task score is what score_tasks gives,
the constants of its severity and dimension tables are the default rubric's (and the ones
finding_severity uses), its dimension weights, letter thresholds and gates are the built-in
ones, and its Wilson z is the normal 0.975 quantile the SQL macro and compare use. Every
number is read off the page, so a change on either side fails here, naming what differs."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import polars as pl
import pytest

from pipeline.compare.metrics import z_value
from pipeline.rubric import DEFAULT_RUBRIC, parse_rubric
from pipeline.surface import finding_severity, letter_grade
from pipeline.tasks.score import score_tasks
from schemas import polars_schema
from schemas.surface import DIMENSIONS, SurfaceFinding
from tests.paths import ROOT

PAGE = (ROOT / "docs" / "scoring.md").read_text("utf-8")
METRICS_SQL = (ROOT / "pipeline" / "sql" / "macros" / "metrics.sql").read_text("utf-8")
DEFAULT = parse_rubric({})
TASK: dict[str, Any] = DEFAULT_RUBRIC["task"]
SURFACE: dict[str, Any] = DEFAULT_RUBRIC["surface"]
_NUMBER = r"(-?[0-9]+(?:\.[0-9]+)?)"

RecordFn = Callable[..., dict[str, Any]]
FramesFn = Callable[[Sequence[Mapping[str, Any]]], Any]


def between(start: str, stop: str) -> str:
    """The page from ``start`` up to ``stop``, its whitespace runs made single spaces."""
    begin = PAGE.index(start)
    return " ".join(PAGE[begin : PAGE.index(stop, begin)].split())


def table(heading: str) -> list[list[str]]:
    """The body rows of the first table after ``heading``, as stripped cells."""
    lines = PAGE[PAGE.index(heading) :].splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("|"))
    body = []
    for line in lines[first + 2 :]:  # past the header and the |---| row
        if not line.startswith("|"):
            break
        body.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return body


def pattern(template: str) -> str:
    """``template`` as a regex matching it literally, each ``N`` a captured number."""
    return re.escape(template).replace("N", _NUMBER)


def constants(text: str, template: str, keys: Sequence[str]) -> dict[str, float]:
    """The numbers ``text`` writes where ``template`` has ``N``, named by ``keys``."""
    match = re.fullmatch(pattern(template), text)
    assert match is not None, f"the page's {text!r} no longer reads as {template!r}"
    return dict(zip(keys, map(float, match.groups()), strict=True))


def rubric_values(keys: Sequence[str]) -> dict[str, float]:
    return {key: SURFACE[key] for key in keys}


# --- task grades -----------------------------------------------------------------------------

EXAMPLE = (
    pattern(
        "Example, an <env> run with subscores <subscores> under the default weights, and a "
        "penalty of N: weighted = <terms> = N, score = N − N = N. With <gate> N the gate "
        "fails and the score is N."
    )
    .replace("<env>", r"([a-z]+)")
    .replace("<subscores>", r"((?:[a-z_]+ [0-9.]+, )*[a-z_]+ [0-9.]+)")
    .replace("<terms>", r"((?:[0-9.]+ \+ )*[0-9.]+)")
    .replace("<gate>", r"([a-z_]+)")
)


def test_the_worked_example_is_what_score_tasks_gives(
    task_record: RecordFn, task_frames: FramesFn
) -> None:
    paragraph = between("Sums are taken in a fixed order", "### Roll-ups")
    match = re.search(EXAMPLE, paragraph)
    assert match is not None, f"the worked example changed shape: {paragraph!r}"
    env, subs_text, penalty, terms_text, weighted, minuend, subtrahend, score = match.groups()[:8]
    gate_name, gate_value, gated_score = match.groups()[8:]
    subscores = {name: float(v) for name, v in re.findall(r"([a-z_]+) ([0-9.]+)", subs_text)}
    terms = [float(term) for term in terms_text.split(" + ")]
    # The page's own arithmetic: the terms add to weighted, weighted − penalty is the score.
    assert (float(minuend), float(subtrahend)) == (float(weighted), float(penalty))
    assert math.fsum(terms) == pytest.approx(float(weighted), abs=1e-12)
    assert float(weighted) - float(penalty) == pytest.approx(float(score), abs=1e-12)
    assert set(subscores) == set(TASK[env]["weights"]), "the example names other components"

    weights = TASK[env]["weights"]
    records = [
        task_record("doc", env, subscores, weights, penalties={"p": float(penalty)}),
        task_record(
            "gated",
            env,
            {**subscores, gate_name: float(gate_value)},
            weights,
            penalties={"p": float(penalty)},
        ),
    ]
    frames = task_frames(records)
    result = score_tasks(frames.runs, frames.components, frames.penalties, DEFAULT)
    runs = {row["run_id"]: row for row in result.runs.collect().to_dicts()}
    contributions = {
        row["component"]: row["contribution"]
        for row in result.components.collect().filter(pl.col("run_id") == "doc").to_dicts()
    }

    run = runs["doc"]
    assert run["anomalies"] == [] and run["gate_passed"] is True
    assert [contributions[name] for name in subscores] == pytest.approx(terms, abs=1e-12)
    assert run["weighted"] == pytest.approx(float(weighted), abs=1e-12)
    assert run["penalty_total"] == pytest.approx(float(penalty), abs=1e-12)
    assert run["score"] == pytest.approx(float(score), abs=1e-12)
    gated = runs["gated"]
    assert gated["gate_component"] == gate_name
    assert gated["gate_passed"] is False and gated["gated_out"] is True
    assert gated["score"] == float(gated_score)


def test_the_gates_are_the_built_in_ones() -> None:
    step = between("3. **Gate.**", "4. **Totals.**")
    match = re.search(r"\*\*Gate\.\*\* (.+?); ([a-z]+) has no gate", step)
    assert match is not None, f"step 3 changed shape: {step!r}"
    documented: dict[str, str | None] = {match.group(2): None}
    for clause in match.group(1).split(", "):
        gated = re.fullmatch(r"([a-z ]+?) (?:(?:are|is) gated )?on `([a-z_]+)`", clause)
        assert gated is not None, f"step 3's clause {clause!r} names no env type and gate"
        documented |= dict.fromkeys(gated.group(1).split(" and "), gated.group(2))
    built_in = {env: value.get("gate") for env, value in TASK.items() if isinstance(value, dict)}
    assert documented == built_in
    assert {env: e.gate for env, e in DEFAULT.task.envs.items()} == built_in


# --- surface grades: severity -------------------------------------------------------------------

# Each row of the severity table: its severity cell with N for every constant, and the
# [surface] keys those constants are, in order. schema_smell has its own test below.
SEVERITY_ROWS: dict[str, tuple[str, tuple[str, ...]]] = {
    "token_cost, `scope` = `surface`": (
        "1 − lerp01(`tokens_per_tool_avg`, N, N)",
        ("tokens_per_tool_good", "tokens_per_tool_bad"),
    ),
    "token_cost, any other scope": (
        "clamp(`share` × N), `share` defaulting to 0",
        ("token_share_multiplier",),
    ),
    "merge_candidate": (
        "clamp((N + clamp(`tokens_saved_est` / N) × N) × N if `wide_union` × N if "
        "`mixes_read_write`)",
        (
            "merge_base",
            "merge_saved_scale",
            "merge_saved_points",
            "merge_wide_union_factor",
            "merge_mixes_read_write_factor",
        ),
    ),
    "duplicate": ("N", ("duplicate_severity",)),
    "selection_error": ("clamp(1 − `pass_rate`)", ()),
    "distraction": ("clamp(`fire_rate`)", ()),
    "hidden_injector": ("clamp(`tokens_est` / N)", ("hidden_injector_scale",)),
    "resource_candidate": ("N", ("resource_candidate_severity",)),
    "jit_candidate": (
        "N if `recommend_jit` else N",
        ("jit_recommended_severity", "jit_not_recommended_severity"),
    ),
    # Not a rubric key: the code's `.otherwise(0.0)`, checked through finding_severity below.
    "any other kind": ("N (kept)", ("other_kind",)),
}
SEVERITY = {kind: cell for kind, cell in table("### Severity of a finding")}


def smells() -> tuple[dict[str, float], float]:
    """The schema_smell row: its per-smell severities, and the one of any other smell."""
    match = re.fullmatch(r"by `smell`: (.+), any other " + _NUMBER, SEVERITY["schema_smell"])
    assert match is not None, f"the schema_smell row changed shape: {SEVERITY['schema_smell']!r}"
    entries = match.group(1).split(", ")
    parsed = dict(re.findall(r"([a-z_]+) " + _NUMBER, match.group(1)))
    assert len(parsed) == len(entries), f"an entry is not `smell number`: {entries}"
    return {smell: float(value) for smell, value in parsed.items()}, float(match.group(2))


def documented_severity_constants() -> dict[str, float]:
    found: dict[str, float] = {}
    for kind, (template, keys) in SEVERITY_ROWS.items():
        found |= constants(SEVERITY[kind], template, keys)
    return found


def test_the_severity_table_has_a_row_for_each_known_kind() -> None:
    assert set(SEVERITY) == set(SEVERITY_ROWS) | {"schema_smell"}


# "any other kind" has no rubric key: test_finding_severity_computes_the_table checks its 0.
RUBRIC_SEVERITY_ROWS = [
    k for k, (_, keys) in SEVERITY_ROWS.items() if keys and k != "any other kind"
]


@pytest.mark.parametrize("kind", RUBRIC_SEVERITY_ROWS)
def test_a_severity_rows_constants_are_the_rubrics(kind: str) -> None:
    template, keys = SEVERITY_ROWS[kind]
    written = constants(SEVERITY[kind], template, keys)
    assert written == rubric_values(keys), f"severity of {kind}"


def test_the_schema_smell_severities_are_the_rubrics() -> None:
    per_smell, other = smells()
    assert per_smell == SURFACE["smell_severity"]
    assert other == SURFACE["other_smell_severity"]


def test_finding_severity_computes_the_table() -> None:
    # Rows whose severity the page's formulas give from the page's constants (`c`), missing
    # measurement values at their documented defaults (0, flags false): the code must agree.
    c = documented_severity_constants()
    per_smell, other_smell = smells()
    good, bad = c["tokens_per_tool_good"], c["tokens_per_tool_bad"]
    per_tool = good + (bad - good) / 4

    def clamp(x: float) -> float:
        return min(max(x, 0.0), 1.0)

    def merge(saved: float, wide: bool, mixes: bool) -> float:
        value = c["merge_base"] + clamp(saved / c["merge_saved_scale"]) * c["merge_saved_points"]
        value *= c["merge_wide_union_factor"] if wide else 1.0
        return clamp(value * (c["merge_mixes_read_write_factor"] if mixes else 1.0))

    saved = c["merge_saved_scale"] / 2
    cases: list[tuple[dict[str, Any], float]] = [
        (
            {"kind": "token_cost", "scope": "surface", "tokens_per_tool_avg": per_tool},
            1 - (1 - (per_tool - good) / (bad - good)),
        ),
        (
            {"kind": "token_cost", "scope": "tool", "share": 0.1},
            clamp(0.1 * c["token_share_multiplier"]),
        ),
        ({"kind": "token_cost", "scope": "tool"}, 0.0),
        *(({"kind": "schema_smell", "smell": s}, v) for s, v in per_smell.items()),
        ({"kind": "schema_smell", "smell": "no_such_smell"}, other_smell),
        (
            {
                "kind": "merge_candidate",
                "tokens_saved_est": saved,
                "wide_union": True,
                "mixes_read_write": True,
            },
            merge(saved, True, True),
        ),
        (
            {"kind": "merge_candidate", "tokens_saved_est": saved, "wide_union": True},
            merge(saved, True, False),
        ),
        ({"kind": "merge_candidate"}, merge(0.0, False, False)),
        ({"kind": "duplicate"}, c["duplicate_severity"]),
        ({"kind": "hidden_injector", "tokens_est": c["hidden_injector_scale"] / 4}, 0.25),
        ({"kind": "hidden_injector"}, 0.0),
        ({"kind": "resource_candidate"}, c["resource_candidate_severity"]),
        ({"kind": "jit_candidate", "recommend_jit": True}, c["jit_recommended_severity"]),
        ({"kind": "jit_candidate"}, c["jit_not_recommended_severity"]),
        ({"kind": "no_such_kind"}, c["other_kind"]),
    ]
    frame = pl.DataFrame([row for row, _ in cases], schema=polars_schema(SurfaceFinding))
    got = frame.select(finding_severity(DEFAULT))["severity"].to_list()
    expected = [severity for _, severity in cases]
    mismatched = [
        (row, want, have)
        for (row, want), have in zip(cases, got, strict=True)
        if have != pytest.approx(want, abs=1e-12)
    ]
    assert not mismatched, f"(finding, the page's severity, the code's): {mismatched}"
    assert got == pytest.approx(expected, abs=1e-12)


# --- surface grades: dimensions, overall, letter ------------------------------------------------

DIMENSION_ROWS: dict[str, tuple[str, tuple[str, ...]]] = {
    "context_efficiency": (
        "N × lerp(`tokens_per_tool_avg`, N, N) + N × lerp(`tokens`, N, N) − clamp(I / N) × N",
        (
            "per_tool_share",
            "tokens_per_tool_good",
            "tokens_per_tool_bad",
            "surface_share",
            "surface_tokens_good",
            "surface_tokens_bad",
            "injector_tokens_scale",
            "injector_points",
        ),
    ),
    "selection_robustness": (
        "without: 100 − clamp(confusability_proxy findings / max(n, 1)) × N; then − "
        "clamp(Σ `fire_rate` of distractions / N) × N",
        ("proxy_points", "distraction_scale", "distraction_points"),
    ),
    "surface_redundancy": (
        "100 − clamp(Σ severity of merge_candidate and duplicate / N) × 100",
        ("redundancy_scale",),
    ),
}
DIMENSIONS_TABLE = table("### Dimensions")


@pytest.mark.parametrize("dimension", list(DIMENSION_ROWS))
def test_a_dimension_formulas_constants_are_the_rubrics(dimension: str) -> None:
    (score,) = [row[2] for row in DIMENSIONS_TABLE if row[0] == dimension]
    template, keys = DIMENSION_ROWS[dimension]
    match = re.search(pattern(template), score)
    assert match is not None, f"the {dimension} formula no longer reads as {template!r}"
    written = dict(zip(keys, map(float, match.groups()), strict=True))
    assert written == rubric_values(keys), f"constants of {dimension}"


def test_the_description_smells_are_four() -> None:
    score = next(row[2] for row in DIMENSIONS_TABLE if row[0] == "schema_hygiene")
    match = re.search(r"other than the (\w+) description smells", score)
    assert match is not None
    words = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight"]
    assert words.index(match.group(1)) == len(SURFACE["description_smells"])


def test_the_default_dimension_weights_are_the_rubrics() -> None:
    dimensions = [row[0] for row in DIMENSIONS_TABLE]
    assert tuple(dimensions) == DIMENSIONS
    bullet = between("- `overall = ", "- `letter`")
    match = re.search(r"\(weights ((?:[0-9.]+, )*[0-9.]+) by default\)", bullet)
    assert match is not None, f"the weights sentence changed shape: {bullet!r}"
    weights = [float(weight) for weight in match.group(1).split(", ")]
    documented = dict(zip(dimensions, weights, strict=True))
    assert documented == SURFACE["weights"]
    assert documented == DEFAULT.surface_weights


def test_the_letter_thresholds_are_the_rubrics() -> None:
    bullet = between("- `letter` comes from", "- Under the default rubric")
    bands = {letter: float(v) for letter, v in re.findall(r"([A-F][+-]?) ≥ " + _NUMBER, bullet)}
    assert bullet.rstrip().endswith("F below."), "the letter list no longer ends in F"
    assert list(bands.items()) == list(SURFACE["letter_bands"].items())
    # And letter_grade reads them so: a cutoff reaches its letter, below the last is F.
    lowest = min(bands.values())
    frame = pl.DataFrame({"overall": [*bands.values(), lowest - 0.05]})
    letters = frame.select(letter_grade(pl.col("overall"), DEFAULT.surface.letter_bands))
    assert letters.to_series().to_list() == [*bands, "F"]


def test_the_agreement_tolerance_is_the_rubrics() -> None:
    bullet = between("- Under the default rubric", "A report that disagrees")
    match = re.search(r"`grade\.overall` within " + _NUMBER, bullet)
    assert match is not None, f"the agreement sentence changed shape: {bullet!r}"
    assert float(match.group(1)) == SURFACE["agreement_tolerance"]


# --- roll-ups: the Wilson z -------------------------------------------------------------------


def test_the_wilson_z_is_the_normal_quantile_the_code_uses() -> None:
    from scipy.stats import norm

    bullet = between("- `by_agent`", "- `cost_per_solved`")
    match = re.search(
        r"pass rate with a ([0-9]+)% Wilson.*z = ([0-9.]+) \(the normal ([0-9.]+) quantile, "
        r'which "([0-9.]+)" rounds\)',
        bullet,
    )
    assert match is not None, f"the Wilson z sentence changed shape: {bullet!r}"
    percent, digits, quantile, rounded = match.groups()
    assert float(quantile) == 0.5 + float(percent) / 200
    # The page's digits are the shortest repr of the quantile: every digit, no more.
    assert digits == repr(float(norm.ppf(float(quantile))))
    assert float(digits) == z_value(float(percent) / 100)
    sql = re.search(r"create or replace macro z95\(\) as ([0-9.]+);", METRICS_SQL)
    assert sql is not None, "pipeline/sql/macros/metrics.sql has no z95() macro"
    assert sql.group(1) == digits
    assert round(float(digits), len(rounded.split(".")[1])) == float(rounded)
