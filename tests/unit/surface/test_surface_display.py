"""Surface grades as mcp-xray shows them (CONTRACT 5): Python's round at each stage where
mcp-xray rounds, its order of sums, its division; and the fixtures regraded by mcp-xray
itself.

``fixtures/mcp-xray-expected.json`` holds what mcp-xray-audit 1.5.0 computed for each fixture
report: its own ``mcp_xray.grade.Grader().grade(findings, ran=coverage.ran)``, run offline in
a separate virtualenv (mcp-xray is not a dependency of this project), recorded 2026-12-03.
``fixtures/mcp-xray-edge/boundary_reports.jsonl``: 48 reports written for these tests (random
tool surfaces graded by that Grader, kept when its overall sits on a letter boundary or 0.1
below one); 4 of them get a different letter when the unrounded overall is rounded once.
``fixtures/mcp-xray-generated/``: genuine mcp-xray 1.5.0 output (a tool dump without a
server name, a server with no tools).
"""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import hypothesis.strategies as st
import polars as pl
import pytest
from hypothesis import given, settings

from pipeline.core.expr import true_div, with_py_round
from pipeline.rubric import parse_rubric
from pipeline.surface import letter_grade, ordered_sum, parse_reports, score_surfaces
from schemas import checked
from schemas.surface import DIMENSIONS, SurfaceFindingScore, SurfaceRun, SurfaceScore
from tests.examples import examples
from tests.paths import FIXTURES
from tests.surface_records import CE1_SH3, surface_records
from tools.simulate import xray_reference as xray

DEFAULT = parse_rubric({})
EXPECTED = json.loads((FIXTURES / "mcp-xray-expected.json").read_text())["reports"]


def one(expr: pl.Expr, **columns: list[Any]) -> list[Any]:
    frame = pl.DataFrame(columns, schema={k: pl.Float64 for k in columns})
    return frame.lazy().select(expr).collect().to_series().to_list()


def py_round(xs: list[float], decimals: int) -> list[float]:
    frame = pl.LazyFrame({"x": xs}, schema={"x": pl.Float64})
    return with_py_round(frame, decimals, r=pl.col("x")).collect()["r"].to_list()


# ------------------------------------------------------------------------ py_round


@pytest.mark.parametrize(
    ("x", "decimals", "expected"),
    [
        # 89.95 is 89.9500000000000028421709430404007434844970703125 in binary: above the half
        (89.95, 1, 90.0),
        (86.95, 1, 87.0),  # 86.95000000000000284...
        (79.95, 1, 80.0),  # 79.95000000000000284...
        (66.95, 1, 67.0),
        (67.0, 1, 67.0),
        (87.0, 1, 87.0),
        (97.0, 1, 97.0),
        # 4.35 is 4.34999999999999964...: below the half, so 4.3 (Polars' round gives 4.4)
        (4.35, 1, 4.3),
        # 0.25 is exact in binary: a true tie, to even
        (0.25, 1, 0.2),
        (0.35, 1, 0.3),  # 0.34999999999999997779...
        (0.0625, 3, 0.062),  # exact tie at 3 decimals, to even
        (2.675, 2, 2.67),  # 2.67499999999999982236...
        (0.0015, 3, 0.002),  # 0.00150000000000000003...
        (-4.35, 1, -4.3),
        (0.0, 1, 0.0),
        (100.0, 1, 100.0),
    ],
)
def test_with_py_round_by_hand(x: float, decimals: int, expected: float) -> None:
    assert py_round([x], decimals) == [expected]
    assert round(x, decimals) == expected  # the hand value is Python's


def test_polars_round_is_not_pythons() -> None:
    # why with_py_round exists: Polars rounds x * 10**d, whose own error lands on the half
    assert pl.Series([4.35]).round(1, mode="half_to_even").item() == 4.4
    assert round(4.35, 1) == 4.3


@settings(max_examples=examples(300), deadline=None)
@given(
    xs=st.lists(
        st.floats(allow_nan=False, allow_infinity=False)
        | st.integers(0, 200_000).map(lambda k: k / 2000),
        min_size=1,
        max_size=50,
    ),
    decimals=st.integers(0, 4),
)
def test_with_py_round_equals_python_round(xs: list[float], decimals: int) -> None:
    assert py_round(xs, decimals) == [round(x, decimals) for x in xs]


@settings(max_examples=examples(200), deadline=None)
@given(
    # the scores' range, and every double (±inf: a sum past the largest one)
    xs=st.lists(
        st.floats(-1e12, 1e12, allow_nan=False) | st.floats(allow_nan=False),
        min_size=1,
        max_size=30,
    ),
    divisor=st.sampled_from([3.0, 10.0, 450.0, 800.0, 1000.0, 2000.0, 10500.0, 7.0, 0.5]),
)
def test_true_div_equals_python_division(xs: list[float], divisor: float) -> None:
    assert one(true_div(pl.col("x"), divisor), x=xs) == [x / divisor for x in xs]


@pytest.mark.parametrize(
    ("x", "divisor", "quotient"),
    [
        # inf * 0.0 is NaN: a divisor made of it gave inf / 2 = NaN, and the shown dimension
        # built on it 100.0 (NaN sorts above every number in Polars)
        (math.inf, 2.0, math.inf),
        (-math.inf, 2.0, -math.inf),
        (-math.inf, 450.0, -math.inf),
        (1.7e308, 0.5, math.inf),  # overflows, as 1.7e308 / 0.5 does in Python
        (3.0, 10.0, 0.3),
        (0.0, 7.0, 0.0),
    ],
)
def test_true_div_by_hand(x: float, divisor: float, quotient: float) -> None:
    assert one(true_div(pl.col("x"), divisor), x=[x]) == [quotient]
    assert one(true_div(pl.col("x"), pl.col("d")), x=[x], d=[divisor]) == [quotient]
    assert x / divisor == quotient


def test_true_div_keeps_nan_and_null() -> None:
    got = one(true_div(pl.col("x"), 2.0), x=[math.nan, None])
    assert math.isnan(got[0]) and got[1] is None


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.sampled_from([0.1, 0.2, 0.3, 0.45, 0.55, 0.7, 1e16, -1e16, 0.001]), max_size=40))
def test_ordered_sum_adds_in_order_like_python(values: list[float]) -> None:
    frame = pl.DataFrame(
        {"g": [1] * len(values), "i": list(range(len(values)))[::-1], "v": values[::-1]},
        schema={"g": pl.Int64, "i": pl.Int64, "v": pl.Float64},
    )
    if not values:
        return
    got = frame.group_by("g").agg(s=ordered_sum(pl.col("v"), pl.lit(True), "i"))["s"].item()
    # the rows arrive reversed; ordered by i they are ``values`` in order
    assert got == sum(values)


# ------------------------------------------------------------- reports, worked by hand


def _report(n: int, per_tool: float, tokens: float, smells: list[str]) -> dict[str, Any]:
    surface = {
        "scope": "surface",
        "tokens": tokens,
        "tool_count": n,
        "tokens_per_tool_avg": per_tool,
    }
    findings = [{"probe": "t", "kind": "token_cost", "target": ["a"], "measurement": surface}]
    findings += [
        {"probe": "t", "kind": "schema_smell", "target": "a", "measurement": {"smell": smell}}
        for smell in smells
    ]
    return {
        "generated_at": "2026-12-03T10:00:00+00:00",
        "server": {"name": "s", "version": f"{n}-{per_tool}", "fingerprint": "f"},
        "coverage": {"ran": ["static_hygiene", "consolidate"]},
        "findings": findings,
    }


def _records(texts: list[str], sources: list[str]) -> pl.DataFrame:
    return surface_records(texts, sources, batch_id="b")


def _grade(texts: list[str], sources: list[str]) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    batch = parse_reports(_records(texts, sources))
    assert batch.quarantine.is_empty(), batch.quarantine["reason"].to_list()
    scoring = score_surfaces(batch.runs.lazy(), batch.findings.lazy(), DEFAULT)
    runs = checked(SurfaceRun, batch.runs)
    scores = checked(SurfaceScore, scoring.runs.collect()).join(
        runs.select("run_id", "source", "server", "server_version"), on="run_id"
    )
    severities = checked(SurfaceFindingScore, scoring.findings.collect())
    return runs, scores, severities


@pytest.mark.parametrize(
    ("n", "per_tool", "tokens", "smells", "unrounded", "display", "letter"),
    [
        # lerp(395) = 100 × (1 − 245/450) = 45.555… shown 45.6; total 790 ≤ 1500: 100.
        # CE shown = round(0.6 × 45.6 + 0.4 × 100) = round(67.36) = 67.4 (unrounded 67.333…)
        # overall = (0.3 × 67.4 + 0.15 × 100 × 3) / 0.75 = 65.22 / 0.75 = 86.96 -> 87.0 B+;
        # unrounded (0.3 × 67.333… + 45) / 0.75 = 86.933… would be 86.9 and B.
        (2, 395, 790, [], 86.93333, 87.0, "B+"),
        # lerp(524) = 100 × (1 − 374/450) = 16.888… -> 16.9; lerp(1572) = 100 × (1 − 72/10500)
        # = 99.314… -> 99.3; CE = round(10.14 + 39.72) = 49.9; overall = (14.97 + 45) / 0.75
        # = 79.96 -> 80.0 B-; unrounded CE 49.859…, overall 79.944… would be 79.9 and C+.
        (3, 524, 1572, [], 79.94362, 80.0, "B-"),
        # lerp(554) = 100 × (1 − 404/450) = 10.222… -> 10.2; CE = round(6.12 + 40) = 46.1;
        # SH = 100 − (0.6 + 0.55)/2 × 100 = 42.5; overall = (0.3 × 46.1 + 15 + 0.15 × 42.5
        # + 15) / 0.75 = 50.205 / 0.75 = 66.94 -> 66.9 D; unrounded 66.953… would be 67.0, D+.
        (2, 554, 1108, ["deep_nesting", "enum_bloat"], 66.95333, 66.9, "D"),
    ],
)
def test_letters_split_at_boundaries_as_mcp_xray_shows_them(
    n: int,
    per_tool: float,
    tokens: float,
    smells: list[str],
    unrounded: float,
    display: float,
    letter: str,
) -> None:
    _, scores, _ = _grade([json.dumps(_report(n, per_tool, tokens, smells))], ["r"])
    row = scores.row(0, named=True)
    assert row["overall"] == pytest.approx(unrounded, abs=1e-5)
    assert (row["overall_display"], row["letter"]) == (display, letter)


# ---------------------------------------------------------- against mcp-xray's own values


def _fixture_reports() -> list[tuple[str, str]]:
    """(key in mcp-xray-expected.json, report text) for every fixture report present."""
    found = [
        (f"boundary_reports.jsonl:{i}", line)
        for i, line in enumerate(
            (FIXTURES / "mcp-xray-edge" / "boundary_reports.jsonl").read_text().splitlines(), 1
        )
    ]
    for folder in ("mcp-xray-generated", "mcp-xray"):
        for path in sorted((FIXTURES / folder).glob("*.json")):
            if path.name in EXPECTED:
                found.append((path.name, path.read_text(encoding="utf-8")))
    return found


@pytest.fixture(scope="module")
def regraded() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    keys, texts = zip(*_fixture_reports(), strict=True)
    return _grade(list(texts), list(keys))


@pytest.mark.slow
def test_every_fixture_report_shows_what_mcp_xray_shows(
    regraded: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame],
) -> None:
    _, scores, severities = regraded
    assert scores.height >= 48 + 2
    for row in scores.iter_rows(named=True):
        expected = EXPECTED[row["source"]]
        shown = {d: row[f"{d}_display"] for d in DIMENSIONS}
        assert shown == expected["subscores"], row["source"]
        assert (row["overall_display"], row["letter"]) == (
            expected["overall"],
            expected["letter"],
        ), row["source"]
        assert row["nothing_measured"] == all(v is None for v in expected["subscores"].values())
        got = severities.filter(pl.col("run_id") == row["run_id"]).sort("finding_index")
        assert got["severity_display"].to_list() == expected["severities"], row["source"]


def test_agreement_flags_are_consistent_with_the_display(
    regraded: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame],
) -> None:
    _, scores, _ = regraded
    # every fixture report carries mcp-xray's own grade: both checks hold everywhere
    assert scores["agrees_with_report"].to_list() == [True] * scores.height
    assert scores["letter_agrees"].to_list() == [True] * scores.height
    # and the unrounded overall stays within mcp-xray's rounding of the shown one
    measured = scores.filter(pl.col("overall").is_not_null())
    assert (measured["overall"] - measured["overall_display"]).abs().max() < 0.1  # type: ignore[operator]


def test_the_boundary_fixture_holds_letters_a_single_rounding_gets_wrong(
    regraded: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame],
) -> None:
    _, scores, _ = regraded
    bands = DEFAULT.surface.letter_bands
    once = scores.filter(pl.col("overall").is_not_null()).with_columns(
        once=letter_grade(pl.col("overall").round(1), bands)
    )
    assert once.filter(pl.col("once") != pl.col("letter")).height >= 3


def test_a_bare_tool_dump_lands_under_its_fingerprint(
    regraded: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame],
) -> None:
    runs, scores, _ = regraded
    bare = runs.filter(pl.col("source") == "bare_dump_no_server_name.json").row(0, named=True)
    # the report: "name": null, "version": null, "fingerprint": "9395e700610419bf"
    assert (bare["server"], bare["server_version"]) == ("9395e700610419bf", None)
    assert bare["run_id"] == "9395e700610419bf@unversioned@2026-12-03T11:10:22+00:00"
    empty = scores.filter(pl.col("source") == "zero_tools.json").row(0, named=True)
    # no tools: n = 0, so schema hygiene and description quality are not measured
    assert empty["schema_hygiene"] is None and empty["description_quality_display"] is None
    assert (empty["overall_display"], empty["letter"]) == (100.0, "A+")


def test_rounding_stages_hold_under_a_rubric_that_is_not_mcp_xrays() -> None:
    # weights CE 1, SH 3 (the rest 0): shares 0.25 and 0.75; CE 100, SH 100 - 0.6/2 × 100 = 70
    # overall_display = round((100 × 0.25 + 70 × 0.75) / 1.0, 1) = 77.5 -> C+
    rubric = parse_rubric(CE1_SH3)
    report = _report(2, 150, 300, ["deep_nesting"])
    batch = parse_reports(_records([json.dumps(report)], ["r"]))
    row = (
        score_surfaces(batch.runs.lazy(), batch.findings.lazy(), rubric)
        .runs.collect()
        .row(0, named=True)
    )
    assert (row["overall_display"], row["letter"]) == (77.5, "C+")
    assert math.isclose(row["overall"], 77.5)


# --------------------------------------------- numbers at the ends of a double, as mcp-xray

_ANY = st.floats(allow_nan=False, allow_infinity=False)
# Values whose sums overflow: two of them pass the largest double (1.8e308).
_HUGE = st.sampled_from([1.7e308, 1e308, -1e308, -1.7e308])
_NOT_NEGATIVE = st.floats(0.0, 1.7e308) | st.sampled_from([1e308, 1.7e308])


def _xray_finding(kind: str, target: Any = "a", /, **measurement: Any) -> dict[str, Any]:
    return {"probe": "t", "kind": kind, "target": target, "measurement": measurement}


_EXTREME_FINDINGS = st.one_of(
    st.builds(
        lambda tokens, n, per_tool: _xray_finding(
            "token_cost",
            ["a"],
            scope="surface",
            tokens=tokens,
            tool_count=n,
            tokens_per_tool_avg=per_tool,
        ),
        _NOT_NEGATIVE,
        st.integers(0, 2**63 - 1),
        _NOT_NEGATIVE,
    ),
    # a pass rate at most 1 keeps mcp-xray's uncapped labeled mean within 100 (the pipeline
    # caps it there, README "Ranges"), so every shown value can be mcp-xray's own
    st.builds(
        lambda rate: _xray_finding("selection_error", mode="labeled", pass_rate=rate),
        st.floats(max_value=1.0, allow_nan=False, allow_infinity=False)
        | _HUGE.filter(lambda x: x < 0),
    ),
    st.builds(
        lambda rate: _xray_finding("selection_error", mode="confusability_proxy", pass_rate=rate),
        _ANY | _HUGE,
    ),
    st.builds(lambda rate: _xray_finding("distraction", fire_rate=rate), _ANY | _HUGE),
    st.builds(
        lambda tokens: _xray_finding("hidden_injector", kind="instructions", tokens_est=tokens),
        _NOT_NEGATIVE,
    ),
    st.builds(
        lambda saved: _xray_finding("merge_candidate", ["a", "b"], tokens_saved_est=saved),
        _ANY | _HUGE,
    ),
    st.builds(lambda share: _xray_finding("token_cost", scope="tool", share=share), _ANY | _HUGE),
    st.builds(
        lambda smell: _xray_finding("schema_smell", smell=smell),
        st.sampled_from(["missing_description", "deep_nesting"]),
    ),
)


@settings(max_examples=examples(40), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(_EXTREME_FINDINGS, max_size=6),
            st.sets(st.sampled_from(["static_hygiene", "consolidate", "noise"])),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_sums_past_a_double_show_what_mcp_xray_shows(
    reports: list[tuple[list[dict[str, Any]], set[str]]],
) -> None:
    # Python's sums give ±inf there, and its clamp 0 or 1: each shown dimension, the overall
    # and the letter are mcp-xray's (its grading, ported in tools/simulate/xray_reference),
    # and a shown value is a number in [0, 100], never NaN.
    texts = [
        json.dumps(
            {
                "generated_at": "2026-12-03T10:00:00+00:00",
                "server": {"name": f"s{i}", "version": "1"},
                "coverage": {"ran": sorted(ran)},
                "findings": findings,
            }
        )
        for i, (findings, ran) in enumerate(reports)
    ]
    batch = parse_reports(_records(texts, [f"r{i}" for i in range(len(texts))]))
    assert batch.quarantine.is_empty(), batch.quarantine["reason"].to_list()
    scoring = score_surfaces(batch.runs.lazy(), batch.findings.lazy(), DEFAULT)
    scores = checked(SurfaceScore, scoring.runs.collect()).join(
        batch.runs.select("run_id", "server"), on="run_id"
    )
    for row in scores.iter_rows(named=True):
        findings, ran = reports[int(row["server"][1:])]
        expected = xray.grade(copy.deepcopy(findings), sorted(ran))
        shown = {d: row[f"{d}_display"] for d in DIMENSIONS}
        assert shown == {d: s["score"] for d, s in expected["subscores"].items()}
        assert (row["overall_display"], row["letter"]) == (expected["overall"], expected["letter"])
        for value in (*shown.values(), row["overall_display"]):
            assert value is None or 0.0 <= value <= 100.0


def test_the_probes_one_report_ran_alone_keep_its_order() -> None:
    from pipeline.surface.diff import ran_only_in

    ran = ["noise", "static_hygiene", "injection"]
    assert ran_only_in(ran, ["static_hygiene"]) == ["noise", "injection"]
    assert ran_only_in(["static_hygiene"], ran) == []
    assert ran_only_in(ran, []) == ran
