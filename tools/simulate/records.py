"""One task record or mcp-xray report as a dict: the builders every test generator calls.

The field lists here are the generator's statement of CONTRACT sections 2 and 3:
``tasks.build_task_flat`` selects ``TASK_FIELDS`` as its top-level columns, and the
tests' record makers (``tests/conftest.py``'s builder, ``tests/strategies.py``'s
seeded and hypothesis generators, ``tests/unit/tasks/test_score_properties.py``) build through
``task_record`` / ``surface_report`` / ``finding``. A new field is added here once;
an unknown keyword is refused, so a typo cannot build a record the test did not mean.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TASK_REQUIRED = ("run_id", "agent", "agent_version", "problem_id", "env_type", "graded_at")
TASK_OPTIONAL = ("project", "defect_id", "cwe", "trial", "cost_usd", "tokens", "wall_seconds")
TASK_FIELDS = TASK_REQUIRED + TASK_OPTIONAL
# Inside ``grade``, besides ``subscores`` and ``weights``.
GRADE_OPTIONAL = (
    "penalties",
    "metadata",
    "env_internal_failure",
    "env_internal_failure_logs",
    "allow_unbounded",
)

XRAY_TOOL = "mcp-xray"
XRAY_TOOL_VERSION = "1.5.0"
FINDING_FIELDS = ("probe", "kind", "target", "measurement", "severity", "confidence", "detail")
# Report keys besides tool, version, generated_at, server, grade, headline, coverage, findings.
REPORT_OPTIONAL = ("llm", "run_id")


def _refuse_unknown(given: Mapping[str, Any], known: tuple[str, ...], what: str) -> None:
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise TypeError(f"{what}: unknown field(s) {unknown}; known: {list(known)}")


def task_record(
    *,
    run_id: str,
    agent: str,
    agent_version: str,
    problem_id: str,
    env_type: str,
    graded_at: str,
    subscores: Mapping[str, Any],
    weights: Mapping[str, Any],
    **optional: Any,
) -> dict[str, Any]:
    """A CONTRACT section 2 record. ``optional`` holds ``TASK_OPTIONAL`` fields (top level)
    and ``GRADE_OPTIONAL`` fields (inside ``grade``); a field given as None is left out."""
    _refuse_unknown(optional, TASK_OPTIONAL + GRADE_OPTIONAL, "task_record")
    grade: dict[str, Any] = {"subscores": dict(subscores), "weights": dict(weights)}
    grade.update((key, optional[key]) for key in GRADE_OPTIONAL if optional.get(key) is not None)
    record: dict[str, Any] = {
        "run_id": run_id,
        "agent": agent,
        "agent_version": agent_version,
        "problem_id": problem_id,
        "env_type": env_type,
        "graded_at": graded_at,
        "grade": grade,
    }
    record.update((key, optional[key]) for key in TASK_OPTIONAL if optional.get(key) is not None)
    return record


def finding(
    *,
    probe: str,
    kind: str,
    target: str | list[str],
    measurement: Mapping[str, Any],
    severity: float = 0.0,
    confidence: float,
    detail: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One mcp-xray finding (keys in ``FINDING_FIELDS``' order)."""
    return {
        "probe": probe,
        "kind": kind,
        "target": target,
        "measurement": dict(measurement),
        "severity": severity,
        "confidence": confidence,
        "detail": dict(detail or {}),
    }


def surface_report(
    *,
    generated_at: str,
    server: Mapping[str, Any],
    grade: Mapping[str, Any],
    headline: Mapping[str, Any],
    coverage: Mapping[str, Any],
    findings: list[dict[str, Any]],
    version: str = XRAY_TOOL_VERSION,
    **optional: Any,
) -> dict[str, Any]:
    """An mcp-xray report.json (CONTRACT section 3); ``optional``: ``REPORT_OPTIONAL``
    fields, left out when None."""
    _refuse_unknown(optional, REPORT_OPTIONAL, "surface_report")
    report: dict[str, Any] = {
        "tool": XRAY_TOOL,
        "version": version,
        "generated_at": generated_at,
        "server": dict(server),
        "grade": dict(grade),
        "headline": dict(headline),
        "coverage": dict(coverage),
        "findings": findings,
    }
    report.update((key, optional[key]) for key in REPORT_OPTIONAL if optional.get(key) is not None)
    return report
