"""A plain-Python, row-by-row scorer of CONTRACT section 4.

Two jobs: the baseline ``make bench`` times the vectorized pipeline against,
and an independent oracle for the property tests (``pipeline.tasks.score`` must
agree with it to 1e-9). It reads raw contract records (CONTRACT section 2)
directly and shares no code with ``pipeline.tasks.score`` beyond the Rubric, so a
mistake in one is unlikely to be repeated in the other.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from pipeline.rubric import Rubric

WEIGHT_SUM_TOLERANCE = 1e-6
AUDIT_TOLERANCE = 1e-6
# README, "Totals are finite": a total past this is out of range, like a non-finite one.
TOTAL_LIMIT = 1e12


def lerp01(value: float, good: float, bad: float) -> float:
    """Seed 002's lerp scaled to [0, 1]: 1 at value <= good, 0 at value >= bad."""
    if value <= good:
        return 1.0
    if value >= bad:
        return 0.0
    return 100.0 * (1.0 - (value - good) / (bad - good)) / 100.0


def clamp01(value: float) -> float:
    return min(max(value, 0.0), 1.0)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def score_record(record: Mapping[str, Any], rubric: Rubric) -> dict[str, Any]:
    """Score one raw task-grade record: the TaskScore fields plus ``components``,
    a list of TaskComponentScore dicts sorted by component name."""
    grade = _mapping(record["grade"])
    env_type: str = record["env_type"]
    subscores = {name: float(v) for name, v in _mapping(grade.get("subscores")).items()}
    record_weights = {name: float(v) for name, v in _mapping(grade.get("weights")).items()}
    penalties = [float(v) for v in _mapping(grade.get("penalties")).values()]
    metadata = _mapping(grade.get("metadata"))
    minimization = _mapping(metadata.get("minimization"))
    final_size = _number(minimization.get("final_size"))
    minimal_size = _number(minimization.get("minimal_size"))
    recall = _number(metadata.get("recall"))
    precision = _number(metadata.get("precision"))
    grader_error = bool(grade.get("env_internal_failure", False))
    unbounded = bool(grade.get("allow_unbounded", False))

    env = rubric.task.envs.get(env_type)
    rubric_weights: Mapping[str, float] = env.weights if env is not None else {}
    gate = env.gate if env is not None else None
    anomalies: list[str] = []
    if env is None:
        anomalies.append(f"unknown_env_type:{env_type}")

    # Gate decisions first: every other component depends on them.
    def rescored(name: str) -> float:
        if name == "minimization" and final_size is not None and minimal_size is not None:
            return lerp01(final_size / minimal_size, 1.0, rubric.task.minimization_multiple)
        return subscores.get(name, 0.0)

    gate_ok = gate is not None and rescored(gate) > 0.0
    stored_gate_ok = gate is not None and subscores.get(gate, 0.0) > 0.0

    components: list[dict[str, Any]] = []
    weighted = 0.0
    weighted_as_graded = 0.0
    for name in sorted(set(subscores) | set(rubric_weights)):
        in_record = name in subscores
        in_rubric = name in rubric_weights
        is_gate = name == gate
        subscore = rescored(name)
        weight = rubric_weights.get(name, 0.0)
        weight_as_graded = record_weights.get(name) if in_record else None
        gated_out = (not grader_error) and gate is not None and not gate_ok and not is_gate
        gated_as_graded = gate is not None and not stored_gate_ok and not is_gate
        contribution: float | None = None
        contribution_as_graded: float | None = None
        if not grader_error:
            contribution = 0.0 if gated_out else subscore * weight
            contribution_as_graded = (
                0.0 if gated_as_graded else subscores.get(name, 0.0) * (weight_as_graded or 0.0)
            )
            weighted += contribution
            weighted_as_graded += contribution_as_graded
        if not in_rubric:
            anomalies.append(f"unknown_component:{name}")
        elif not in_record:
            anomalies.append(f"missing_component:{name}")
        components.append(
            {
                "run_id": record["run_id"],
                "rubric_id": rubric.rubric_id,
                "component": name,
                "subscore": subscore,
                "stored_subscore": subscores.get(name),
                "weight": weight,
                "weight_as_graded": weight_as_graded,
                "is_gate": is_gate,
                "in_record": in_record,
                "in_rubric": in_rubric,
                "gated_out": gated_out,
                "contribution": contribution,
                "contribution_as_graded": contribution_as_graded,
            }
        )

    weight_sum = sum(record_weights[name] for name in subscores if name in record_weights)
    if abs(weight_sum - 1.0) > WEIGHT_SUM_TOLERANCE:
        anomalies.append(f"weights_sum:{weight_sum}")
    if gate is not None and not stored_gate_ok:
        nonzero = sorted(n for n, v in subscores.items() if n != gate and v > 0.0)
        if nonzero:
            anomalies.append(f"gate_failed_with_nonzero:{','.join(nonzero)}")
    if gate is not None and gate in subscores and subscores[gate] not in (0.0, 1.0):
        anomalies.append(f"non_binary_gate:{subscores[gate]}")
    audit = subscores.get("audit")
    if env_type == "audit" and audit is not None and recall is not None and precision is not None:
        expected = recall * precision
        if abs(audit - expected) > AUDIT_TOLERANCE:
            anomalies.append(f"audit_mismatch:{audit} vs {expected}")
    fractions = (("recall", recall), ("precision", precision))
    missing = [name for name, value in fractions if value is None]
    if env_type == "audit" and not grader_error and missing:
        anomalies.append(f"audit_unverified:{','.join(missing)}")

    result: dict[str, Any] = {
        "run_id": record["run_id"],
        "rubric_id": rubric.rubric_id,
        "status": "grader_error" if grader_error else "scored",
        "gate_component": gate,
        "gate_passed": None,
        "gated_out": None,
        "weighted": None,
        "penalty_total": None,
        "score": None,
        "weighted_as_graded": None,
        "score_as_graded": None,
        "passed": None,
        "anomalies": sorted(anomalies),
        "components": components,
    }
    if grader_error:
        return result

    penalty_total = math.fsum(penalties) * rubric.task.penalty_scale

    def total(weighted_sum: float) -> float:
        raw = weighted_sum - penalty_total
        return raw if unbounded else clamp01(raw)

    score = total(weighted)
    threshold = rubric.task.failure_threshold
    if threshold is not None:
        passed = (gate is None or gate_ok) and score >= threshold
    elif gate is None:
        passed = score > 0.0
    else:
        passed = gate_ok
    totals = {
        "weighted": weighted,
        "penalty_total": penalty_total,
        "score": score,
        "weighted_as_graded": weighted_as_graded,
        "score_as_graded": total(weighted_as_graded),
    }
    result.update(
        gate_passed=gate_ok if gate is not None else None,
        gated_out=gate is not None and not gate_ok,
        passed=passed,
        **totals,
    )
    out_of_range = [k for k, v in totals.items() if not math.isfinite(v) or abs(v) > TOTAL_LIMIT]
    if out_of_range:
        result.update(
            status="total_out_of_range",
            passed=None,
            anomalies=sorted([*anomalies, f"total_out_of_range:{','.join(out_of_range)}"]),
            **dict.fromkeys(totals),
        )
    return result


def score_records(records: Iterable[Mapping[str, Any]], rubric: Rubric) -> list[dict[str, Any]]:
    """Score every record, one at a time (the benchmark baseline)."""
    return [score_record(record, rubric) for record in records]
