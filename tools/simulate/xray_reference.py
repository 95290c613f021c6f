"""mcp-xray's grading in plain Python: the independent oracle.

A port of mcp-xray's ``Grader.grade`` (grade.py), rounding exactly where it rounds,
written without Polars and sharing no code with ``pipeline.surface``'s vectorized
regrade. The sample's reports carry the grade this module computes, and the tests
compare the pipeline's regrade against it (within mcp-xray's 0.1 rounding), so a
mistake in one implementation shows up as a disagreement with the other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

_XRAY_SMELLS = {
    "missing_description": 0.9,
    "tiny_description": 0.7,
    "short_description": 0.4,
    "vague_description": 0.45,
    "deep_nesting": 0.6,
    "enum_bloat": 0.55,
    "wide_schema": 0.5,
}
_XRAY_DESC = {"missing_description", "tiny_description", "short_description", "vague_description"}
_XRAY_WEIGHTS = {
    "context_efficiency": 0.30,
    "surface_redundancy": 0.15,
    "schema_hygiene": 0.15,
    "description_quality": 0.15,
    "selection_robustness": 0.25,
}
BANDS = (
    (97, "A+"),
    (93, "A"),
    (90, "A-"),
    (87, "B+"),
    (83, "B"),
    (80, "B-"),
    (77, "C+"),
    (73, "C"),
    (70, "C-"),
    (67, "D+"),
    (63, "D"),
    (60, "D-"),
)


def _xc(x: float) -> float:
    return max(0.0, min(1.0, x))


def lerp(value: float, good: float, bad: float) -> float:
    if value <= good:
        return 100.0
    if value >= bad:
        return 0.0
    return round(100.0 * (1 - (value - good) / (bad - good)), 1)


def letter(score: float) -> str:
    return next((letter for cutoff, letter in BANDS if score >= cutoff), "F")


def severity(f: Mapping[str, Any]) -> float:
    m, kind = f["measurement"], f["kind"]
    if kind == "token_cost":
        if m.get("scope") == "surface":
            return round(1 - lerp(m.get("tokens_per_tool_avg", 0), 150, 600) / 100, 3)
        return round(_xc(m.get("share", 0) * 3), 3)
    if kind == "schema_smell":
        return _XRAY_SMELLS.get(m.get("smell", ""), 0.4)
    if kind == "merge_candidate":
        base = 0.4 + _xc(m.get("tokens_saved_est", 0) / 800) * 0.4
        base *= 0.7 if m.get("wide_union") else 1.0
        base *= 0.6 if m.get("mixes_read_write") else 1.0
        return round(_xc(base), 3)
    fixed = {"duplicate": 0.6, "resource_candidate": 0.3}
    if kind in fixed:
        return fixed[kind]
    if kind == "selection_error":
        return round(_xc(1 - m.get("pass_rate", 1.0)), 3)
    if kind == "distraction":
        return round(_xc(m.get("fire_rate", 0)), 3)
    if kind == "hidden_injector":
        return round(_xc(m.get("tokens_est", 0) / 1000), 3)
    if kind == "jit_candidate":
        return 0.5 if m.get("recommend_jit") else 0.1
    return 0.0


def _sub(score: float | None, dim: str, rationale: str, count: int = 0) -> dict[str, Any]:
    return {
        "score": score,
        "measured": score is not None,
        "weight": _XRAY_WEIGHTS[dim],
        "rationale": rationale,
        "finding_count": count,
    }


def _of(
    findings: Sequence[Mapping[str, Any]], finding_kind: str, /, **where: Any
) -> list[Mapping[str, Any]]:
    """The findings of one kind whose measurement matches ``where``."""
    return [
        f
        for f in findings
        if f["kind"] == finding_kind and all(f["measurement"].get(k) == v for k, v in where.items())
    ]


Finding = Mapping[str, Any]
Subscore = dict[str, Any]


def _tool_count(findings: Sequence[Finding], surface: Finding | None) -> int:
    if surface is not None:
        return int(surface["measurement"]["tool_count"])
    per_tool = _of(findings, "token_cost", scope="tool")
    return len({f["target"] for f in per_tool if isinstance(f["target"], str)})


def _context_efficiency(findings: Sequence[Finding], surface: Finding | None) -> Subscore:
    if surface is None:
        return _sub(None, "context_efficiency", "no token data")
    m = surface["measurement"]
    score = round(
        0.6 * lerp(m["tokens_per_tool_avg"], 150, 600) + 0.4 * lerp(m["tokens"], 1500, 12000),
        1,
    )
    inj = sum(
        f["measurement"].get("tokens_est", 0)
        for f in _of(findings, "hidden_injector", kind="instructions")
    )
    if inj:
        score = round(max(0.0, score - _xc(inj / 2000) * 10), 1)
    return _sub(score, "context_efficiency", f"{m['tokens']} surface tokens", 1)


def _surface_redundancy(findings: Sequence[Finding], ran: Sequence[str]) -> Subscore:
    if "consolidate" not in ran:
        return _sub(None, "surface_redundancy", "consolidate probe not run")
    items = _of(findings, "merge_candidate") + _of(findings, "duplicate")
    score = round(max(0.0, 100 - _xc(sum(f["severity"] for f in items) / 4) * 100), 1)
    return _sub(score, "surface_redundancy", f"{len(items)} merge/duplicate", len(items))


def _schema_and_descriptions(findings: Sequence[Finding], n: int) -> dict[str, Subscore]:
    """schema_hygiene and description_quality: smells (and proxy selection errors) per tool."""
    if n == 0:
        return {
            "schema_hygiene": _sub(None, "schema_hygiene", "no tools"),
            "description_quality": _sub(None, "description_quality", "no tools"),
        }
    smells = _of(findings, "schema_smell")
    structural = [f for f in smells if f["measurement"].get("smell") not in _XRAY_DESC]
    desc = [f for f in smells if f["measurement"].get("smell") in _XRAY_DESC]
    proxy = _of(findings, "selection_error", mode="confusability_proxy")
    hygiene = round(
        max(0.0, 100 - _xc(sum(f["severity"] for f in structural) / max(1, n)) * 100), 1
    )
    bad = sum(f["severity"] for f in desc) + sum(f["severity"] for f in proxy)
    quality = round(max(0.0, 100 - _xc(bad / max(1, n)) * 100), 1)
    return {
        "schema_hygiene": _sub(
            hygiene,
            "schema_hygiene",
            f"{len(structural)} structural smell(s) over {n} tools",
            len(structural),
        ),
        "description_quality": _sub(
            quality,
            "description_quality",
            f"{len(desc)} description smell(s)",
            len(desc) + len(proxy),
        ),
    }


def _selection_robustness(findings: Sequence[Finding], ran: Sequence[str], n: int) -> Subscore:
    if "noise" not in ran:
        return _sub(None, "selection_robustness", "behavioral probe not run (no LLM)")
    labeled = _of(findings, "selection_error", mode="labeled")
    distractions = _of(findings, "distraction")
    proxy = _of(findings, "selection_error", mode="confusability_proxy")
    if labeled:
        base = sum(f["measurement"].get("pass_rate", 1.0) for f in labeled) / len(labeled) * 100
    else:
        base = max(0.0, 100 - _xc(len(proxy) / (n or 1)) * 60)
    penalty = _xc(sum(f["measurement"].get("fire_rate", 0) for f in distractions) / 2) * 40
    score = round(max(0.0, base - penalty), 1)
    return _sub(
        score,
        "selection_robustness",
        f"{len(labeled)} labeled, {len(distractions)} distraction failure(s)",
        len(labeled) + len(distractions),
    )


def grade(findings: list[dict[str, Any]], ran: Sequence[str]) -> dict[str, Any]:
    """mcp-xray's Grader.grade (grade.py), rounding exactly where it rounds.

    Sets each finding's ``severity`` in place, as mcp-xray does before grading.
    """
    for f in findings:
        f["severity"] = severity(f)
    surface = next(iter(_of(findings, "token_cost", scope="surface")), None)
    n = _tool_count(findings, surface)
    subs: dict[str, Subscore] = {
        "context_efficiency": _context_efficiency(findings, surface),
        "surface_redundancy": _surface_redundancy(findings, ran),
        **_schema_and_descriptions(findings, n),
        "selection_robustness": _selection_robustness(findings, ran, n),
    }
    measured = [s for s in subs.values() if s["measured"]]
    total_weight = sum(s["weight"] for s in measured) or 1.0
    overall = round(sum(s["score"] * s["weight"] for s in measured) / total_weight, 1)
    return {"overall": overall, "letter": letter(overall), "subscores": subs}
