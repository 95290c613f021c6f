"""Surface grades (CONTRACT 3 and 5): severities, dimensions, overall, letter, parsing.

Every expected value is worked by hand in the comment beside it, from the contract's
formulas and the default rubric's constants.
"""

from __future__ import annotations

import json
import math
from typing import Any

import hypothesis.strategies as st
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings

from pipeline.rubric import Rubric, parse_rubric
from pipeline.surface import (
    SurfaceBatch,
    finding_severity,
    letter_grade,
    parse_reports,
    score_surfaces,
)
from pipeline.surface.dimensions import XRAY_DIMENSION_ORDER
from schemas import checked, polars_schema
from schemas.surface import (
    DIMENSIONS,
    SurfaceFinding,
    SurfaceFindingScore,
    SurfacePhaseScore,
    SurfaceRun,
    SurfaceScore,
)
from schemas.tasks import Quarantine
from tests.examples import examples
from tests.paths import ROOT
from tests.surface_records import CE1_SH3, surface_records

DEFAULT = parse_rubric({})
OFFLINE = ("static_hygiene", "consolidate")
WITH_NOISE = ("static_hygiene", "consolidate", "noise")


def finding(kind: str, target: Any = "tool_a", **measurement: Any) -> dict[str, Any]:
    return {
        "probe": "test",
        "kind": kind,
        "target": target,
        "measurement": measurement,
        "severity": 0.123,
        "confidence": 0.9,
        "detail": {},
    }


def injector(kind: str, tokens_est: float, target: str = "server.instructions") -> dict[str, Any]:
    """A hidden_injector finding (its measurement has a key named ``kind``)."""
    found = finding("hidden_injector", target, tokens_est=tokens_est)
    found["measurement"]["kind"] = kind
    return found


def surface(tokens: float, tool_count: int, per_tool: float, **extra: Any) -> dict[str, Any]:
    return finding(
        "token_cost",
        ["tool_a"],
        scope="surface",
        tokens=tokens,
        tool_count=tool_count,
        tokens_per_tool_avg=per_tool,
        **extra,
    )


def report(
    findings: list[dict[str, Any]],
    ran: tuple[str, ...] = OFFLINE,
    name: str = "srv",
    version: str = "1.0.0",
    **top: Any,
) -> dict[str, Any]:
    return {
        "tool": "mcp-xray",
        "generated_at": "2026-12-02T13:42:50+00:00",
        "server": {"name": name, "version": version, "fingerprint": "f00", "tool_count": 2},
        "coverage": {"ran": list(ran)},
        "findings": findings,
        **top,
    }


def records(*raws: str | dict[str, Any]) -> pl.DataFrame:
    return surface_records(raws)


def parse(*raws: str | dict[str, Any]) -> SurfaceBatch:
    batch = parse_reports(records(*raws))
    # What lands must pass the models the lake writes with.
    checked(SurfaceRun, batch.runs)
    checked(SurfaceFinding, batch.findings)
    checked(Quarantine, batch.quarantine)
    return batch


def grade(
    findings: list[dict[str, Any]],
    ran: tuple[str, ...] = OFFLINE,
    rubric: Rubric = DEFAULT,
    **top: Any,
) -> dict[str, Any]:
    """The one surface_scores row of a single report."""
    batch = parse(report(findings, ran, **top))
    assert batch.quarantine.is_empty(), batch.quarantine["reason"].to_list()
    scoring = score_surfaces(batch.runs.lazy(), batch.findings.lazy(), rubric)
    rows = checked(SurfaceScore, scoring.runs.collect())
    assert rows.height == 1
    return rows.row(0, named=True)


def severities(findings: list[dict[str, Any]], rubric: Rubric = DEFAULT) -> list[float]:
    batch = parse(report(findings))
    assert batch.quarantine.is_empty(), batch.quarantine["reason"].to_list()
    scoring = score_surfaces(batch.runs.lazy(), batch.findings.lazy(), rubric)
    rows = checked(SurfaceFindingScore, scoring.findings.collect()).sort("finding_index")
    return rows["severity"].to_list()


def phases(findings: list[dict[str, Any]], ran: tuple[str, ...] = OFFLINE) -> pl.DataFrame:
    batch = parse(report(findings, ran))
    scoring = score_surfaces(batch.runs.lazy(), batch.findings.lazy(), DEFAULT)
    return checked(SurfacePhaseScore, scoring.phases.collect()).sort("finding_index")


# ------------------------------------------------------------------------- severity


def test_token_cost_surface_severity() -> None:
    # lerp(375, 150, 600) = 100 * (1 - 225/450) = 50 -> 1 - 0.5 = 0.5
    # lerp(100, ...) = 100 -> 0;  lerp(700, ...) = 0 -> 1
    got = severities([surface(3000, 8, 375), surface(800, 8, 100), surface(5600, 8, 700)])
    assert got == pytest.approx([0.5, 0.0, 1.0])


def test_token_cost_other_scope_severity() -> None:
    # clamp(0.2 * 3) = 0.6;  clamp(0.5 * 3 = 1.5) = 1;  share missing -> 0 * 3 = 0
    got = severities(
        [
            finding("token_cost", scope="tool", tokens=10, share=0.2),
            finding("token_cost", scope="tool", tokens=10, share=0.5),
            finding("token_cost", scope="tool", tokens=10),
        ]
    )
    assert got == pytest.approx([0.6, 1.0, 0.0])


def _documented_smell_severities() -> dict[str, float]:
    """docs/scoring.md's schema_smell row (``by `smell`: name value, ..., any other value``)
    as name -> severity, the fallback under "any other"."""
    row = next(
        line
        for line in (ROOT / "docs" / "scoring.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("| schema_smell |")
    )
    pairs = row.partition("by `smell`:")[2].strip(" |").split(", ")
    return {name: float(value) for name, value in (pair.rsplit(" ", 1) for pair in pairs)}


def test_schema_smell_severity_is_the_documented_table_and_fallback() -> None:
    table = _documented_smell_severities()
    fallback = table.pop("any other")
    # Read back whole: seven smells from missing_description 0.9 on, any other 0.4.
    assert (len(table), table["missing_description"], fallback) == (7, 0.9, 0.4)
    smells = [finding("schema_smell", smell=name) for name in table]
    # an unknown smell and a smell-less schema_smell are "any other smell"
    smells += [finding("schema_smell", smell="odd_smell"), finding("schema_smell")]
    assert severities(smells) == pytest.approx([*table.values(), fallback, fallback])


def test_merge_candidate_severity() -> None:
    # saved 400: 0.4 + clamp(400/800) * 0.4 = 0.4 + 0.2 = 0.6
    # wide_union: 0.6 * 0.7 = 0.42;  mixes_read_write: 0.6 * 0.6 = 0.36
    # both: 0.6 * 0.7 * 0.6 = 0.252;  saved 1600: 0.4 + clamp(2) * 0.4 = 0.8;  no saved: 0.4
    got = severities(
        [
            finding("merge_candidate", ["a", "b"], tokens_saved_est=400),
            finding("merge_candidate", ["a", "b"], tokens_saved_est=400, wide_union=True),
            finding("merge_candidate", ["a", "b"], tokens_saved_est=400, mixes_read_write=True),
            finding(
                "merge_candidate",
                ["a", "b"],
                tokens_saved_est=400,
                wide_union=True,
                mixes_read_write=True,
            ),
            finding("merge_candidate", ["a", "b"], tokens_saved_est=1600, wide_union=False),
            finding("merge_candidate", ["a", "b"]),
        ]
    )
    assert got == pytest.approx([0.6, 0.42, 0.36, 0.252, 0.8, 0.4])


def test_fixed_and_rate_severities() -> None:
    got = severities(
        [
            finding("duplicate", ["a", "b"]),  # 0.6
            finding("selection_error", mode="labeled", pass_rate=0.25),  # 1 - 0.25 = 0.75
            finding("selection_error", mode="labeled", pass_rate=1.2),  # clamp(-0.2) = 0
            finding("distraction", ["a"], fire_rate=0.3),  # 0.3
            finding("distraction", ["a"], fire_rate=1.4),  # clamp(1.4) = 1
            injector("instructions", 250, "server.instructions"),
            # 250 / 1000 = 0.25 above; 3000 / 1000 = 3 -> clamp 1 below
            injector("prompts", 3000, "server.prompts"),
            finding("resource_candidate"),  # 0.3
            finding("jit_candidate", ["a"], recommend_jit=True),  # 0.5
            finding("jit_candidate", ["a"], recommend_jit=False),  # 0.1
        ]
    )
    assert got == pytest.approx([0.6, 0.75, 0.0, 0.3, 1.0, 0.25, 1.0, 0.3, 0.5, 0.1])


@pytest.mark.slow
def test_unknown_kind_is_kept_with_severity_zero() -> None:
    findings = [finding("result_size", bytes=5000), finding("brand_new_kind", anything=[1, 2])]
    assert severities(findings) == [0.0, 0.0]
    batch = parse(report(findings))
    assert batch.findings["kind"].to_list() == ["result_size", "brand_new_kind"]
    assert json.loads(batch.findings["measurement"][1]) == {"anything": [1, 2]}


def test_severity_constants_come_from_the_rubric() -> None:
    rubric = parse_rubric({"surface": {"duplicate_severity": 0.25, "smell_severity": {"x": 0.8}}})
    got = severities([finding("duplicate", ["a", "b"]), finding("schema_smell", smell="x")], rubric)
    assert got == pytest.approx([0.25, 0.8])


def test_finding_severity_is_one_expression() -> None:
    frame = pl.DataFrame(
        {"kind": ["duplicate", "zzz"], "scope": [None, None]},
        schema={"kind": pl.String, "scope": pl.String},
    )
    frame = frame.with_columns(
        [
            pl.lit(None, dtype).alias(name)
            for name, dtype in polars_schema(SurfaceFinding).items()
            if name not in frame.columns
        ]
    )
    assert frame.select(finding_severity(DEFAULT))["severity"].to_list() == [0.6, 0.0]


# ----------------------------------------------------------------------- dimensions


@pytest.mark.slow
def test_context_efficiency_and_instruction_injector_shave() -> None:
    # 0.6 * lerp(375, 150, 600) + 0.4 * lerp(3000, 1500, 12000)
    # = 0.6 * 50 + 0.4 * 100 * (1 - 1500/10500) = 30 + 34.285714 = 64.285714
    base = 30 + 0.4 * 100 * (1 - 1500 / 10500)
    plain = grade([surface(3000, 4, 375)])
    assert plain["context_efficiency"] == pytest.approx(base)
    assert plain["injector_tokens"] == 0.0
    # instructions, 1000 tokens: - clamp(1000/2000) * 10 = -5 -> 59.285714
    shaved = grade(
        [
            surface(3000, 4, 375),
            injector("instructions", 1000, "server.instructions"),
        ]
    )
    assert shaved["context_efficiency"] == pytest.approx(base - 5)
    assert shaved["injector_tokens"] == 1000.0
    # prompt and resource listings are fetched on demand: no shave
    lazy = grade(
        [
            surface(3000, 4, 375),
            injector("prompts", 1000, "server.prompts"),
            injector("resources", 5000, "server.resources"),
        ]
    )
    assert lazy["context_efficiency"] == pytest.approx(base)


def test_context_efficiency_never_below_zero() -> None:
    # 0.6 * lerp(900) + 0.4 * lerp(20000) = 0; minus clamp(4000/2000) * 10 = -10 -> max(0, -10) = 0
    row = grade(
        [
            surface(20000, 4, 900),
            injector("instructions", 4000, "server.instructions"),
        ]
    )
    assert row["context_efficiency"] == 0.0


@pytest.mark.slow
def test_surface_redundancy() -> None:
    # merge 0.6 (saved 400) + duplicate 0.6 = 1.2 -> 100 - clamp(1.2/4) * 100 = 70
    findings = [
        surface(1500, 2, 150),
        finding("merge_candidate", ["a", "b"], tokens_saved_est=400),
        finding("duplicate", ["a", "c"]),
    ]
    assert grade(findings)["surface_redundancy"] == pytest.approx(70.0)
    # nothing to merge: 100
    assert grade([surface(1500, 2, 150)])["surface_redundancy"] == 100.0
    # five duplicates: 3.0 / 4 = 0.75 -> 25; ten: clamp(6/4) = 1 -> 0
    many = [surface(1500, 2, 150)] + [finding("duplicate", ["a", "b"])] * 10
    assert grade(many)["surface_redundancy"] == 0.0


def test_a_probe_that_did_not_run_leaves_its_dimension_null_and_renormalises() -> None:
    # consolidate did not run: surface_redundancy is null (not 100, not 0).
    # n = 2; CE = 100 (150/tool, 1500 tokens); SH = 100 - 0.6/2 * 100 = 70; DQ = 100.
    # overall = (30*100 + 15*70 + 15*100) / (30 + 15 + 15) = 5550 / 60 = 92.5
    row = grade(
        [surface(1500, 2, 150), finding("schema_smell", smell="deep_nesting")],
        ran=("static_hygiene",),
    )
    assert row["surface_redundancy"] is None
    assert row["selection_robustness"] is None
    assert row["schema_hygiene"] == pytest.approx(70.0)
    assert row["measured_weight"] == 60.0
    assert row["overall"] == pytest.approx(92.5)
    assert row["letter"] == "A-"


def test_schema_hygiene_and_description_quality() -> None:
    # n = 4. structural: deep_nesting 0.6 + wide_schema 0.5 = 1.1 -> 100 - 1.1/4 * 100 = 72.5
    # description: missing 0.9 + vague 0.45 = 1.35, plus the confusability_proxy
    # selection_error (1 - 0.5 = 0.5) = 1.85 -> 100 - 1.85/4 * 100 = 53.75;
    # the labeled selection_error (0.8) does not count toward description quality.
    row = grade(
        [
            surface(1500, 4, 150),
            finding("schema_smell", smell="deep_nesting"),
            finding("schema_smell", smell="wide_schema"),
            finding("schema_smell", smell="missing_description"),
            finding("schema_smell", smell="vague_description"),
            finding("selection_error", mode="confusability_proxy", pass_rate=0.5),
            finding("selection_error", mode="labeled", pass_rate=0.2),
        ],
        ran=WITH_NOISE,
    )
    assert row["schema_hygiene"] == pytest.approx(72.5)
    assert row["description_quality"] == pytest.approx(53.75)


def test_tool_count_from_tool_scope_targets_without_a_surface_finding() -> None:
    # no surface finding: CE is null; n = distinct string targets of scope-tool token_cost
    # = {a, b} = 2 (a list target does not count) -> SH = 100 - 0.6/2 * 100 = 70
    row = grade(
        [
            finding("token_cost", "a", scope="tool", tokens=10, share=0.5),
            finding("token_cost", "b", scope="tool", tokens=10, share=0.5),
            finding("token_cost", "a", scope="tool", tokens=10, share=0.5),
            finding("token_cost", ["c"], scope="tool", tokens=10, share=0.5),
            finding("schema_smell", smell="deep_nesting"),
        ]
    )
    assert row["context_efficiency"] is None
    assert row["n_tools"] == 2
    assert row["schema_hygiene"] == pytest.approx(70.0)


@pytest.mark.parametrize(
    ("pass_rates", "fire_rates"),
    [
        # mean 0.7 -> 70; fire rates 0.3 + 0.2 = 0.5 -> clamp(0.5/2) * 40 = 10 -> 60
        ((0.8, 0.6), (0.3, 0.2)),
        # past their range, used as the formulas write them: mean(pass_rate) is not clamped,
        # (2.0 + 0.0) / 2 = 1.0 -> 100; clamp(3.0 / 2) * 40 = 40 -> 60 (clamping each rate
        # first would give 50 - 20 = 30)
        ((2.0, 0.0), (3.0, 0.0)),
    ],
)
def test_labeled_selection_robustness_with_distraction(
    pass_rates: tuple[float, float], fire_rates: tuple[float, float]
) -> None:
    row = grade(
        [
            surface(1500, 4, 150),
            *(finding("selection_error", mode="labeled", pass_rate=r) for r in pass_rates),
            finding("selection_error", mode="confusability_proxy", pass_rate=0.0),
            *(finding("distraction", [f"t{i}"], fire_rate=r) for i, r in enumerate(fire_rates)),
        ],
        ran=WITH_NOISE,
    )
    assert row["selection_robustness"] == pytest.approx(60.0)


# Sums past the largest double are ±inf, as Python's sum gives them in mcp-xray; the shown
# value then follows its arithmetic (inf / 2 = inf, clamp gives 0 or 1), not NaN. Before,
# each shown value below was 100.0 and its overall an A+ or A.


def test_labeled_pass_rates_summing_to_minus_infinity_show_0_and_f() -> None:
    # SR: -1e308 + -1e308 = -inf (past -1.8e308); -inf / 2 * 100 = -inf -> max(0, -inf) = 0.0.
    # Only noise ran and n = 0: SR is the one dimension, overall 0.0 / 0.25 * 0.25 = 0.0, F.
    row = grade(
        [
            finding("selection_error", "a", mode="labeled", pass_rate=-1e308),
            finding("selection_error", "b", mode="labeled", pass_rate=-1e308),
        ],
        ran=("noise",),
    )
    assert (row["selection_robustness"], row["selection_robustness_display"]) == (0.0, 0.0)
    assert (row["overall"], row["overall_display"], row["letter"]) == (0.0, 0.0, "F")


def test_fire_rates_summing_to_infinity_take_the_full_distraction_penalty() -> None:
    # 1.7e308 * 3 sums to inf: clamp(inf / 2) * 40 = 40; SR = 100 - 40 = 60.0 (no labeled,
    # no proxy). CE, redundancy, SH, DQ 100: overall (0.3 + 0.15 * 3) * 100 + 0.25 * 60
    # = 75 + 15 = 90.0, A-.
    row = grade(
        [surface(1500, 4, 150)]
        + [finding("distraction", [f"t{i}"], fire_rate=1.7e308) for i in range(3)],
        ran=WITH_NOISE,
    )
    assert (row["selection_robustness"], row["selection_robustness_display"]) == (60.0, 60.0)
    assert (row["overall_display"], row["letter"]) == (90.0, "A-")


def test_injector_tokens_summing_to_infinity_take_the_full_shave() -> None:
    # I = 1e308 + 1e308 = inf: CE = 100 - clamp(inf / 2000) * 10 = 90.0, here and on the
    # by_phase row "all". Redundancy, SH, DQ 100: overall (0.3 * 90 + 0.45 * 100) / 0.75
    # = 72 / 0.75 = 96.0, A.
    found = [
        surface(1500, 4, 150),
        injector("instructions", 1e308),
        injector("instructions", 1e308),
    ]
    row = grade(found)
    assert (row["context_efficiency"], row["context_efficiency_display"]) == (90.0, 90.0)
    assert (row["overall_display"], row["letter"]) == (96.0, "A")
    phase = phases(found).row(0, named=True)
    assert (phase["phase"], phase["context_efficiency"]) == ("all", 90.0)
    assert phase["context_efficiency_display"] == 90.0


def test_a_negative_tokens_saved_estimate_lands_and_clamps_to_0() -> None:
    # an estimate, not a count: 0.4 + clamp(-5 / 800) * 0.4 = 0.4
    assert severities([finding("merge_candidate", ["a", "b"], tokens_saved_est=-5)]) == [0.4]


def test_the_documented_dimension_order_is_the_one_summed() -> None:
    order = ", ".join(XRAY_DIMENSION_ORDER)
    for page in (ROOT / "docs" / "scoring.md", ROOT / "README.md"):
        text = " ".join(page.read_text(encoding="utf-8").split())
        assert f"({order})" in text or f"order, {order}," in text, page


def test_a_pass_rate_past_1_shows_no_dimension_past_100() -> None:
    # labeled pass rate 1.5: mcp-xray's uncapped mean would show 150 and the overall above
    # 100 (an A+ from bad input); both the unrounded and the shown dimension stop at 100.
    row = grade(
        [
            surface(1500, 4, 150),
            finding("selection_error", mode="labeled", pass_rate=1.5),
        ],
        ran=WITH_NOISE,
    )
    assert row["selection_robustness"] == row["selection_robustness_display"] == 100.0
    assert row["overall_display"] <= 100.0


def test_a_rubric_whose_shares_pass_1_shows_no_dimension_past_100() -> None:
    # 1.0 x per-tool + 1.0 x total, both lerps at 100: 200 unclipped.
    rubric = parse_rubric({"surface": {"per_tool_share": 1.0, "surface_share": 1.0}})
    row = grade([surface(1500, 4, 150)], rubric=rubric)
    assert row["context_efficiency"] == row["context_efficiency_display"] == 100.0
    assert row["overall_display"] <= 100.0


def _letter_by_chain(shown: float | None, bands: dict[str, float]) -> str:
    """The rule as the contract states it: the highest cutoff reached, first named on a tie."""
    reached = [
        (c, -i, letter)
        for i, (letter, c) in enumerate(bands.items())
        if shown is not None and shown >= c
    ]
    return max(reached)[2] if reached else "F"


@given(
    st.dictionaries(
        st.sampled_from(["A+", "A", "B", "C", "F", "Z", "L1", "L2"]),
        st.sampled_from([0.0, 50.0, 60.0, 89.95, 90.0, 97.0, 100.0]),
        max_size=6,
    ),
    st.lists(st.sampled_from([None, 0.0, 49.9, 50.0, 60.0, 89.9, 89.95, 90.0, 99.9, 100.0])),
)
@settings(max_examples=examples(200), deadline=None)
def test_the_letter_is_the_highest_cutoff_reached(
    bands: dict[str, float], shown: list[float | None]
) -> None:
    frame = pl.DataFrame({"shown": shown}, schema={"shown": pl.Float64})
    got = frame.select(letter_grade(pl.col("shown"), bands)).to_series().to_list()
    assert got == [_letter_by_chain(x, bands) for x in shown]


def test_ten_thousand_bands_grade_at_once() -> None:
    # A when/then per band took minutes and gigabytes to plan at this size.
    bands = {f"L{i}": i / 100 for i in range(10_000)}
    frame = pl.DataFrame({"shown": [0.0, 59.9, 99.995, 1000.0]})
    got = frame.select(letter_grade(pl.col("shown"), bands)).to_series().to_list()
    assert got == ["L0", "L5990", "L9999", "L9999"]


def test_proxy_only_selection_robustness() -> None:
    # no labeled findings: 100 - clamp(2 proxies / max(4, 1)) * 60 = 100 - 30 = 70; no distraction
    row = grade(
        [
            surface(1500, 4, 150),
            finding("selection_error", "a", mode="confusability_proxy", pass_rate=0.5),
            finding("selection_error", "b", mode="confusability_proxy", pass_rate=0.5),
        ],
        ran=WITH_NOISE,
    )
    assert row["selection_robustness"] == pytest.approx(70.0)
    # noise ran and found nothing at all: 100 - 0 = 100
    assert grade([surface(1500, 4, 150)], ran=WITH_NOISE)["selection_robustness"] == 100.0


def test_overall_weighted_over_measured_dimensions() -> None:
    # n = 2. CE = 100; redundancy: one duplicate 0.6/4 -> 85; SH: deep_nesting 0.6/2 -> 70;
    # DQ: missing_description 0.9/2 -> 55; SR labeled 0.9 -> 90.
    # overall = (30*100 + 25*90 + 15*85 + 15*70 + 15*55) / 100 = 8400 / 100 = 84.0 -> B
    findings = [
        surface(1500, 2, 150),
        finding("duplicate", ["a", "b"]),
        finding("schema_smell", smell="deep_nesting"),
        finding("schema_smell", smell="missing_description"),
        finding("selection_error", mode="labeled", pass_rate=0.9),
    ]
    row = grade(findings, ran=WITH_NOISE)
    assert [row[d] for d in DIMENSIONS] == pytest.approx([100.0, 90.0, 85.0, 70.0, 55.0])
    assert row["overall"] == pytest.approx(84.0)
    assert row["letter"] == "B"
    # without noise: (3000 + 1275 + 1050 + 825) / 75 = 6150 / 75 = 82.0 -> B-
    offline = grade(findings[:-1])
    assert offline["overall"] == pytest.approx(82.0)
    assert offline["letter"] == "B-"


def test_no_dimension_measured_gives_null_overall_shown_as_zero_and_f() -> None:
    # nothing ran, no findings: every dimension null, overall null; mcp-xray shows 0.0 and F
    row = grade([], ran=())
    assert all(row[d] is None and row[f"{d}_display"] is None for d in DIMENSIONS)
    assert row["overall"] is None
    assert (row["overall_display"], row["letter"], row["nothing_measured"]) == (0.0, "F", True)
    assert row["measured_weight"] == 0.0
    assert grade([surface(1500, 2, 150)])["nothing_measured"] is False


def test_custom_weights_renormalise_and_disable_the_agreement_check() -> None:
    # weights CE 1, SH 3, others 0: SH = 70, CE = 100 -> (100 + 3*70) / 4 = 77.5 -> C+
    rubric = parse_rubric(CE1_SH3)
    row = grade(
        [surface(1500, 2, 150), finding("schema_smell", smell="deep_nesting")],
        rubric=rubric,
        grade={"overall": 92.5, "letter": "A-"},
    )
    assert row["overall"] == pytest.approx(77.5)
    assert row["letter"] == "C+"
    assert row["agrees_with_report"] is None
    assert row["letter_agrees"] is None


@pytest.mark.slow
def test_agreement_with_the_report() -> None:
    findings = [surface(1500, 2, 150), finding("schema_smell", smell="deep_nesting")]
    # ours (offline, n=2): (30*100 + 15*100 + 15*70 + 15*100) / 75 = 7050/75 = 94.0 -> A
    same = grade(findings, grade={"overall": 94.0, "letter": "A"})
    assert same["overall"] == pytest.approx(94.0)
    assert same["agrees_with_report"] is True
    assert same["letter_agrees"] is True
    # 94.0 - 94.1 = -0.1: within the tolerance
    assert grade(findings, grade={"overall": 94.1, "letter": "A"})["agrees_with_report"] is True
    # 94.0 - 94.3 = -0.3: flagged
    off = grade(findings, grade={"overall": 94.3, "letter": "A"})
    assert off["agrees_with_report"] is False
    assert off["overall_delta"] == pytest.approx(-0.3)
    # no reported grade: nothing to compare
    assert grade(findings)["agrees_with_report"] is None


@pytest.mark.parametrize(
    ("shown", "letter"),
    [
        (90.0, "A-"),
        (89.9, "B+"),
        (97.0, "A+"),
        (93.0, "A"),
        (87.0, "B+"),
        (86.9, "B"),
        (67.0, "D+"),
        (60.0, "D-"),
        (59.9, "F"),
        (0.0, "F"),
        (100.0, "A+"),
    ],
)
def test_letter_from_overall_display(shown: float, letter: str) -> None:
    bands = DEFAULT.surface.letter_bands
    frame = pl.DataFrame({"shown": [shown]}, schema={"shown": pl.Float64})
    assert frame.select(letter_grade(pl.col("shown"), bands)).item() == letter


def test_by_phase_rows_and_worst_phase() -> None:
    # phases: small (2 tools, 300 tokens, 150/tool) and big (4 tools, 3000 tokens, 375/tool);
    # the surface finding describes the worst phase (big). Instructions of 1000 tokens shave
    # 5 points from every phase row: small = 100 - 5 = 95; big = 64.285714 - 5 = 59.285714.
    rows = phases(
        [
            surface(3000, 4, 375, phased=True, worst_phase="big"),
            finding(
                "token_cost",
                ["a", "b"],
                scope="phase",
                phase="small",
                tokens=300,
                tool_count=2,
                tokens_per_tool_avg=150,
            ),
            finding(
                "token_cost",
                ["c", "d", "e", "f"],
                scope="phase",
                phase="big",
                tokens=3000,
                tool_count=4,
                tokens_per_tool_avg=375,
            ),
            injector("instructions", 1000, "server.instructions"),
        ]
    )
    big = 30 + 0.4 * 100 * (1 - 1500 / 10500) - 5
    assert rows["phase"].to_list() == ["small", "big"]
    assert rows["context_efficiency"].to_list() == pytest.approx([95.0, big])
    assert rows["is_worst_phase"].to_list() == [False, True]
    row = grade(
        [
            surface(3000, 4, 375, phased=True, worst_phase="big"),
            injector("instructions", 1000, "server.instructions"),
        ]
    )
    assert row["worst_phase"] == "big"
    assert row["context_efficiency"] == pytest.approx(big)


def test_worst_phase_is_the_one_the_surface_finding_names() -> None:
    # The surface finding carries the worst phase's numbers and its name; a phase with more
    # tokens does not overrule it, and a finding naming none marks no row.
    def phase(name: str, tokens: int) -> dict[str, Any]:
        return finding(
            "token_cost",
            ["a"],
            scope="phase",
            phase=name,
            tokens=tokens,
            tool_count=4,
            tokens_per_tool_avg=tokens / 4,
        )

    named = phases([surface(5000, 4, 1250, worst_phase="p1"), phase("p1", 5000), phase("p2", 6000)])
    assert named["is_worst_phase"].to_list() == [True, False]
    unnamed = phases([surface(6000, 4, 1500), phase("p1", 5000), phase("p2", 6000)])
    assert unnamed["is_worst_phase"].to_list() == [False, False]
    assert (
        grade([surface(6000, 4, 1500), phase("p1", 5000), phase("p2", 6000)])["worst_phase"] is None
    )


def test_unphased_server_has_one_phase_row_named_all() -> None:
    rows = phases([surface(3000, 4, 375)])
    assert rows.select("phase", "tool_count", "tokens", "tokens_per_tool_avg").rows() == [
        ("all", 4, 3000.0, 375.0)
    ]
    assert rows["context_efficiency"][0] == pytest.approx(30 + 0.4 * 100 * (1 - 1500 / 10500))
    # no surface finding: no phase row at all
    assert phases([finding("schema_smell", smell="deep_nesting")]).is_empty()


# -------------------------------------------------------------------------- parsing


def test_parse_keeps_fields_and_provenance() -> None:
    raw = report(
        [
            surface(1500, 2, 150),
            finding("merge_candidate", ["a", "b"], tokens_saved_est=10, mixes_read_write=True),
            finding("schema_smell", "a", smell="deep_nesting", words=3),
        ],
        grade={"overall": 90.0, "letter": "A-", "subscores": {"x": {"score": 1}}},
        headline={"phased": False, "worst_phase": None, "phase_tokens": None},
        unknown_top={"kept": True},
    )
    batch = parse(raw)
    run = batch.runs.row(0, named=True)
    assert run["run_id"] == "srv@1.0.0@2026-12-02T13:42:50+00:00"
    assert (run["server"], run["server_version"], run["fingerprint"]) == ("srv", "1.0.0", "f00")
    assert run["tool_count"] == 2
    assert run["generated_at"].isoformat() == "2026-12-02T13:42:50+00:00"
    assert run["coverage_ran"] == list(OFFLINE)
    assert (run["reported_overall"], run["reported_letter"]) == (90.0, "A-")
    assert json.loads(run["reported_subscores"]) == {"x": {"score": 1}}
    assert run["phased"] is False
    assert run["finding_count"] == 3
    assert json.loads(run["record"])["unknown_top"] == {"kept": True}
    assert (run["source"], run["line"], run["batch_id"]) == ("reports.jsonl", 1, "b1")
    findings = batch.findings.sort("finding_index")
    assert findings["target"].to_list() == [["tool_a"], ["a", "b"], ["a"]]
    assert findings["target_is_list"].to_list() == [True, True, False]
    assert findings["mixes_read_write"].to_list() == [None, True, None]
    assert findings["reported_severity"].to_list() == [0.123] * 3
    assert json.loads(findings["measurement"][2]) == {"smell": "deep_nesting", "words": 3}


def test_report_run_id_wins_when_present() -> None:
    batch = parse(report([], run_id="my-run-7"))
    assert batch.runs["run_id"].to_list() == ["my-run-7"]


def test_generated_at_under_server_is_accepted() -> None:
    raw = report([])
    del raw["generated_at"]
    raw["server"]["generated_at"] = "2026-01-01T00:00:00Z"
    batch = parse(raw)
    assert batch.runs["run_id"].to_list() == ["srv@1.0.0@2026-01-01T00:00:00Z"]


def reasons(*raws: str | dict[str, Any]) -> list[str]:
    batch = parse(*raws)
    assert batch.runs.is_empty()
    assert batch.quarantine["record_kind"].to_list() == ["surface"] * len(raws)
    return batch.quarantine["reason"].to_list()


def test_quarantine_malformed_server() -> None:
    no_key = report([])
    del no_key["server"]["name"]
    del no_key["server"]["fingerprint"]
    null_key = report([])
    null_key["server"].update(name=None, fingerprint=None)
    numeric_version = report([])
    numeric_version["server"]["version"] = 2
    not_object = report([])
    not_object["server"] = "srv"
    got = reasons(no_key, null_key, numeric_version, not_object)
    expected = "expected a non-empty string in one of them"
    assert got[0].startswith(
        f"server.name is missing and server.fingerprint is missing: {expected}"
    )
    assert got[1].startswith(f"server.name is null and server.fingerprint is null: {expected}")
    assert got[2] == "server.version = 2: expected a non-empty string"
    assert got[3] == 'server = "srv": expected an object'


def test_null_server_name_lands_under_its_fingerprint() -> None:
    # CONTRACT 3: the server key is server.name, else server.fingerprint; version may be null
    bare = report([surface(1500, 2, 150)])
    bare["server"].update(name=None, version=None, fingerprint="9395e700610419bf")
    absent = report([surface(1500, 2, 150)], generated_at="2026-12-03T11:10:23+00:00")
    del absent["server"]["name"]
    del absent["server"]["version"]
    runs = parse(bare, absent).runs
    assert runs["server"].to_list() == ["9395e700610419bf", "f00"]
    assert runs["server_version"].to_list() == [None, None]
    assert runs["run_id"].to_list() == [
        "9395e700610419bf@unversioned@2026-12-02T13:42:50+00:00",
        "f00@unversioned@2026-12-03T11:10:23+00:00",
    ]


def test_a_null_field_is_called_null_and_an_absent_one_missing() -> None:
    null_kind = report([surface(1500, 2, 150), {"probe": "x", "kind": None}])
    no_time = report([])
    no_time["generated_at"] = None
    got = reasons(null_kind, no_time)
    assert got[0] == "findings[1].kind is null: expected a non-empty string"
    assert got[1].startswith("generated_at is null: expected an RFC 3339 timestamp")


def test_quarantine_findings_not_a_list_and_finding_without_kind() -> None:
    not_list = report([])
    not_list["findings"] = {"kind": "token_cost"}
    no_kind = report([surface(1500, 2, 150), {"probe": "x", "target": "a"}])
    not_object = report(["token_cost"])
    got = reasons(not_list, no_kind, not_object)
    assert got[0].startswith("findings = {")
    assert got[0].endswith(": expected a list")
    assert got[1] == "findings[1].kind is missing: expected a non-empty string"
    assert got[2] == 'findings[0] = "token_cost": expected an object'


def test_quarantine_wrong_measurement_types() -> None:
    got = reasons(
        report([finding("token_cost", scope="tool", share="0.5")]),
        report([finding("merge_candidate", ["a", 3])]),
        report([finding("merge_candidate", ["a", "b"], wide_union="yes")]),
        report([surface(1500, -1, 150)]),
        report([finding("token_cost", scope="surface", tokens=10, tool_count=1)]),
        report(
            [finding("token_cost", scope="phase", tokens=10, tool_count=1, tokens_per_tool_avg=10)]
        ),
    )
    assert got == [
        'findings[0].measurement.share = "0.5": expected a finite number',
        'findings[0].target = ["a",3]: expected a tool name or a list of tool names',
        'findings[0].measurement.wide_union = "yes": expected true or false',
        "findings[0].measurement.tool_count = -1: expected a whole number from 0 to 2^63-1",
        "findings[0].measurement.tokens_per_tool_avg is missing: expected a finite number >= 0",
        "findings[0].measurement.phase is missing: expected a non-empty string",
    ]


def test_a_size_is_checked_only_on_the_scope_whose_formula_reads_it() -> None:
    # CONTRACT 3 reads tokens, tool_count and tokens_per_tool_avg of a surface (or phase)
    # token_cost only, and a phase of a phase one; on a tool's, only share: the rest is
    # informational there, and lands as null when it is not a number.
    tool = finding("token_cost", scope="tool", share=0.2, tokens="n/a", tool_count=-1, phase=7)
    tool["measurement"]["tokens_per_tool_avg"] = "x"
    other = finding("duplicate", ["a", "b"], scope="surface", tokens="n/a")
    batch = parse(report([tool, other]))
    assert batch.quarantine.is_empty(), batch.quarantine["reason"].to_list()
    landed = batch.findings.sort("finding_index")
    assert landed.select("share", "tokens", "tool_count", "tokens_per_tool_avg", "phase").row(
        0
    ) == (0.2, None, -1, None, None)  # as reported where a whole number, else null
    assert severities([tool]) == [pytest.approx(0.6)]  # clamp(0.2 x 3)
    assert reasons(report([finding("token_cost", scope="tool", share="0.2")])) == [
        'findings[0].measurement.share = "0.2": expected a finite number'
    ]


def test_quarantine_non_finite_numbers() -> None:
    text = json.dumps(report([injector("instructions", 1.0, "s")])).replace(
        '"tokens_est": 1.0', '"tokens_est": NaN'
    )
    overflow = json.dumps(report([], grade={"overall": 1.0})).replace(
        '"overall": 1.0', '"overall": 1e999'
    )
    got = reasons(text, overflow)
    assert got == [
        "findings[0].measurement.tokens_est = NaN: expected a finite number >= 0",
        "grade.overall = 1e999: expected a finite number",
    ]


def tool_counts(server: str, measured: str = "3", version: str = "1.0.0") -> str:
    """A report whose server.tool_count and surface measurement.tool_count are written as
    the JSON literals given (json.dumps would respell 1e19 and round 2^63 - 1.0)."""
    text = json.dumps(report([surface(1500, 1234567, 150)], version=version))
    return text.replace('"tool_count": 2', f'"tool_count": {server}', 1).replace(
        '"tool_count": 1234567', f'"tool_count": {measured}', 1
    )


def test_a_tool_count_past_the_64_bit_range_quarantines_its_report_alone() -> None:
    # Each a whole number no Int64 holds: before, the cast of the column failed and took
    # every report of the file with it. The value shown is the double as read.
    past = [
        tool_counts("1e19", version="a"),
        tool_counts("1e300", version="b"),
        tool_counts("18446744073709551615.0", version="c"),
        # 2^63 - 1 written with a fraction is a double: 9223372036854775808 = 2^63
        tool_counts("9223372036854775807.0", version="d"),
        tool_counts("3", measured="1e19", version="e"),
        # an integer literal past 2^63 - 1 (ingest's reading of the line refuses it first)
        tool_counts("9223372036854775808", version="f"),
    ]
    batch = parse(tool_counts("3", version="ok"), *past)
    assert batch.runs["server_version"].to_list() == ["ok"]
    assert batch.quarantine["line"].to_list() == [2, 3, 4, 5, 6, 7]
    assert batch.quarantine["raw"].to_list() == past
    expected = "expected a whole number from 0 to 2^63-1"
    assert batch.quarantine["reason"].to_list() == [
        f"server.tool_count = 10000000000000000000.0: {expected}",
        f"server.tool_count = 1e300: {expected}",
        f"server.tool_count = 18446744073709552000.0: {expected}",
        f"server.tool_count = 9223372036854776000.0: {expected}",
        f"findings[0].measurement.tool_count = 10000000000000000000.0: {expected}",
        f"server.tool_count = 9223372036854775808: {expected}",
    ]


@pytest.mark.parametrize(
    ("server", "measured", "landed"),
    [
        # the largest Int64, and 2^53 + 1 (a double rounds it to 2^53): read from the digits
        ("9223372036854775807", "9007199254740993", (9223372036854775807, 9007199254740993)),
        # whole doubles: 10.0 = 10, 1e2 = 100, 9.2e18 is a whole double below 2^63, -0.0 = 0
        ("10.0", "1e2", (10, 100)),
        ("9.2e18", "-0.0", (9200000000000000000, 0)),
    ],
)
def test_a_whole_tool_count_lands_exactly(
    server: str, measured: str, landed: tuple[int, int]
) -> None:
    batch = parse(tool_counts(server, measured))
    assert batch.quarantine.is_empty(), batch.quarantine["reason"].to_list()
    assert (batch.runs["tool_count"].item(), batch.findings["tool_count"].item()) == landed


def test_the_largest_tool_count_is_graded() -> None:
    # n = 2^63 - 1: SH = 100 - clamp(0.6 / n) * 100 = 100 - 6.5e-18 = 100.0 in a double;
    # CE, SR, DQ 100: overall (30 + 15 + 15 + 15) * 100 / 75 = 100.0, A+
    row = grade([surface(1500, 2**63 - 1, 150), finding("schema_smell", smell="deep_nesting")])
    assert row["n_tools"] == 2**63 - 1
    assert (row["schema_hygiene"], row["schema_hygiene_display"]) == (100.0, 100.0)
    assert (row["overall_display"], row["letter"]) == (100.0, "A+")


@settings(max_examples=examples(100), deadline=None)
@given(
    st.lists(
        st.integers(-(2**63), 2**64 - 1).map(str)
        | st.floats(allow_nan=False, allow_infinity=False).map(repr)
        | st.integers(-(2**63), 2**63).map(lambda k: f"{k}.0"),
        min_size=1,
        max_size=20,
    )
)
def test_a_tool_count_lands_as_the_whole_number_it_is_or_is_refused(literals: list[str]) -> None:
    # A JSON number lands as a count when it is a whole number from 0 to 2^63 - 1: an
    # integer literal exactly, one with a fraction or exponent as the double it is.
    batch = parse(*(tool_counts(x, version=str(i)) for i, x in enumerate(literals)))
    landed = dict(zip(batch.runs["server_version"], batch.runs["tool_count"], strict=True))
    for i, x in enumerate(literals):
        value = int(x) if x.lstrip("-").isdigit() else float(x)
        whole = value == int(value) and 0 <= int(value) <= 2**63 - 1
        assert landed.get(str(i)) == (int(value) if whole else None), x
    assert batch.runs.height + batch.quarantine.height == len(literals)


def test_a_stored_severity_of_any_value_lands_and_is_not_used() -> None:
    # CONTRACT 3: "The stored severity is ignored". A report is not kept out by it: one
    # that is not a finite number is a null reported_severity, and the record keeps it.
    def stored(at: int, value: str) -> str:
        findings = [finding("duplicate", ["a", "b"]), finding("resource_candidate")]
        text = json.dumps(report(findings, version=f"1.{at}"))
        return text.replace('"severity": 0.123', f'"severity": {value}', 1)

    values = ['"high"', "null", '{"v": 1}', "[0.5]", "true", "NaN", "1e999", "0.75"]
    batch = parse(*(stored(at, value) for at, value in enumerate(values)))
    assert batch.quarantine.is_empty()
    assert batch.runs.height == len(values)
    first = batch.findings.filter(pl.col("finding_index") == 0).join(
        batch.runs.select("run_id", "line"), on="run_id"
    )
    assert first.sort("line")["reported_severity"].to_list() == [None] * 7 + [0.75]
    assert batch.findings.filter(pl.col("finding_index") == 1)["reported_severity"].to_list() == [
        0.123
    ] * len(values)
    assert '"severity": "high"' in batch.runs.sort("line")["record"][0]
    # the pipeline's own severities, whatever was stored
    assert severities([dict(finding("duplicate", ["a", "b"]), severity="high")]) == [0.6]


def test_quarantine_timestamps_and_run_id() -> None:
    naive = report([])
    naive["generated_at"] = "2026-12-02T13:42:50"
    missing = report([])
    del missing["generated_at"]
    garbage = report([])
    garbage["generated_at"] = "yesterday"
    got = reasons(naive, missing, garbage, report([], run_id=""), report([], run_id="x" * 300))
    assert got[0] == (
        'generated_at = "2026-12-02T13:42:50": expected an RFC 3339 timestamp with offset'
    )
    assert got[1].startswith("generated_at is missing")
    assert got[2] == 'generated_at = "yesterday": expected an RFC 3339 timestamp with offset'
    assert got[3] == 'run_id = "": expected a non-empty string'
    assert got[4] == "run_id has 300 characters: expected at most 256"
    # with its own run_id a report needs no generated_at
    assert parse(dict(missing, run_id="r1")).runs["run_id"].to_list() == ["r1"]


def test_one_bad_report_does_not_spoil_the_batch_and_keys_are_kept_apart() -> None:
    good = report([surface(1500, 2, 150)], name="good")
    bad = report([surface(1500, 2, 150), finding("distraction", fire_rate=[1])], name="bad")
    batch = parse(good, bad)
    assert batch.runs["server"].to_list() == ["good"]
    assert batch.findings["run_id"].unique().to_list() == [batch.runs["run_id"][0]]
    q = batch.quarantine.row(0, named=True)
    assert (q["source"], q["line"]) == ("reports.jsonl", 2)
    assert q["reason"] == "findings[1].measurement.fire_rate = [1]: expected a finite number"
    assert json.loads(q["raw"])["server"]["name"] == "bad"


def test_many_problems_are_listed_then_counted() -> None:
    raw = report([{"probe": 1} for _ in range(12)])
    (reason,) = reasons(raw)
    # each finding: probe wrong type + kind missing = 24 problems; 8 shown, 16 counted
    assert reason.count("findings[") == 8
    assert reason.endswith("; and 16 more problem(s)")


def test_same_run_id_twice_in_a_batch() -> None:
    # Whether a repeat is a duplicate or a clash depends on the lake (the first may clash
    # with a run landed before): parsing only sets the repeats apart, for dedupe to judge
    # (tests/unit/ingest/test_dedupe.py).
    first = report([surface(1500, 2, 150)])
    changed = report([surface(1600, 2, 150)])
    batch = parse(first, json.dumps(first), changed)
    assert batch.runs["line"].to_list() == [1]
    assert batch.repeats.schema == batch.runs.schema
    assert batch.repeats.select("line", "run_id").rows() == [
        (2, batch.runs["run_id"][0]),
        (3, batch.runs["run_id"][0]),
    ]
    assert batch.repeats["content_hash"].to_list() == [
        batch.runs["content_hash"][0],  # the same text
        records(changed)["content_hash"][0],
    ]
    assert batch.quarantine.is_empty()
    # the first report's findings alone: a repeat never lands
    assert batch.findings.height == 1


def test_empty_batch() -> None:
    batch = parse_reports(records())
    assert batch.runs.schema == polars_schema(SurfaceRun)
    assert batch.findings.schema == polars_schema(SurfaceFinding)
    assert batch.quarantine.is_empty()
    # The empty batch (no query run) has the schemas a batch with reports has.
    some = parse_reports(records(report([]), {"server": {}, "findings": []}))
    assert some.runs.height == 1 and some.quarantine.height == 1
    for empty, full in zip(
        (batch.runs, batch.findings, batch.quarantine, batch.repeats),
        (some.runs, some.findings, some.quarantine, some.repeats),
        strict=True,
    ):
        assert empty.schema == full.schema


# ----------------------------------------------------------------------- properties

_NUMBER = st.floats(min_value=0, max_value=5000, allow_nan=False)
_RATE = st.floats(min_value=0, max_value=1, allow_nan=False)
_FINDINGS = st.one_of(
    st.builds(
        lambda t, n, p: surface(t, n, p),
        _NUMBER,
        st.integers(min_value=0, max_value=50),
        _NUMBER,
    ),
    st.builds(lambda s: finding("token_cost", scope="tool", tokens=1, share=s), _RATE),
    st.builds(
        lambda s: finding("schema_smell", smell=s),
        st.sampled_from(["missing_description", "deep_nesting", "enum_bloat", "odd"]),
    ),
    st.builds(
        lambda s, w, m: finding(
            "merge_candidate", ["a", "b"], tokens_saved_est=s, wide_union=w, mixes_read_write=m
        ),
        _NUMBER,
        st.booleans(),
        st.booleans(),
    ),
    st.just(finding("duplicate", ["a", "b"])),
    st.builds(
        lambda m, p: finding("selection_error", mode=m, pass_rate=p),
        st.sampled_from(["labeled", "confusability_proxy"]),
        _RATE,
    ),
    st.builds(lambda f: finding("distraction", ["a"], fire_rate=f), _RATE),
    st.builds(
        lambda k, t: injector(k, t, "s"),
        st.sampled_from(["instructions", "prompts"]),
        _NUMBER,
    ),
)
_REPORTS = st.lists(
    st.tuples(
        st.lists(_FINDINGS, max_size=8),
        st.sets(st.sampled_from(["static_hygiene", "consolidate", "noise"])),
    ),
    min_size=1,
    max_size=12,
)


# A scoring's cost is mostly fixed: 12 examples of up to 12 reports see as many reports as
# 25 of up to 6 did.
@pytest.mark.slow
@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_REPORTS)
def test_dimensions_in_range_and_overall_between_them(
    reports: list[tuple[list[dict[str, Any]], set[str]]],
) -> None:
    raws = [
        report(found, tuple(sorted(ran)), name=f"s{i}") for i, (found, ran) in enumerate(reports)
    ]
    batch = parse(*raws)
    assert batch.quarantine.is_empty()
    scored = score_surfaces(batch.runs.lazy(), batch.findings.lazy(), DEFAULT)
    scores = checked(SurfaceScore, scored.runs.collect())
    for row in scores.iter_rows(named=True):
        measured = [row[d] for d in DIMENSIONS if row[d] is not None]
        assert all(0.0 <= v <= 100.0 for v in measured)
        if measured:
            assert min(measured) - 1e-9 <= row["overall"] <= max(measured) + 1e-9
            assert row["letter"] is not None
        else:
            assert row["overall"] is None
    values = scored.findings.collect()["severity"]
    assert values.is_between(0.0, 1.0).all()
    assert not any(math.isnan(v) for v in values)


def test_rubric_constants_cannot_push_past_the_ranges() -> None:
    rubric = parse_rubric({"surface": {"per_tool_share": 0.9, "duplicate_severity": 1.5}})
    # CE: 0.9 * 100 + 0.4 * 100 = 130 -> capped at 100; duplicate 1.5 -> clamp 1
    row = grade([surface(1500, 2, 150)], rubric=rubric)
    assert row["context_efficiency"] == 100.0
    assert severities([finding("duplicate", ["a", "b"])], rubric) == [1.0]
    # a labeled pass rate above 1: mean 1.2 * 100 = 120 -> capped at 100
    over = grade(
        [surface(1500, 2, 150), finding("selection_error", mode="labeled", pass_rate=1.2)],
        ran=WITH_NOISE,
    )
    assert over["selection_robustness"] == 100.0
