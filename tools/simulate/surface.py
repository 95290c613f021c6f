"""Synthetic mcp-xray reports (CONTRACT section 3), graded by ``xray_reference``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from tools.simulate import records, xray_reference
from tools.simulate.flat import write_bytes
from tools.simulate.servers import ALL_TOOLS, EXTRA_SERVERS, SAMPLE_SERVERS, ServerSpec
from tools.simulate.tasks import EPOCH

INPUT_PRICE_PER_MTOK = 3.0
NOISE_MODEL = "claude-sonnet-4-5"


def _resolve(value: Any, version: int, tools: Sequence[str]) -> Any:
    if isinstance(value, tuple):
        return value[version]
    if value == ALL_TOOLS:
        return len(tools)
    return value


def _spec_findings(spec: ServerSpec, version: int, ran: Sequence[str]) -> list[dict[str, Any]]:
    findings = []
    for item in spec.findings:
        if (item.versions is not None and version not in item.versions) or (
            item.probe in {"consolidate", "noise", "mcp_checkup", "result_size"}
            and item.probe not in ran
        ):
            continue
        target: Any = (
            list(spec.tools)
            if item.target == ALL_TOOLS
            else list(item.target)
            if isinstance(item.target, tuple)
            else item.target
        )
        measurement = {
            key: _resolve(value, version, spec.tools) for key, value in item.measurement.items()
        }
        findings.append(
            records.finding(
                probe=item.probe,
                kind=item.kind,
                target=target,
                measurement=measurement,
                confidence=item.confidence,
                detail=item.detail,
            )
        )
    return findings


def _tool_tokens(spec: ServerSpec, version: int, seed: int, server_index: int) -> dict[str, int]:
    rng = np.random.default_rng([seed, 2, server_index])
    low, high = spec.tokens_per_tool
    base = rng.integers(low, high, len(spec.tools))
    scaled = np.round(base * spec.growth**version).astype(np.int64)
    return dict(zip(spec.tools, (int(v) for v in scaled), strict=True))


def _token_cost(
    probe: str, target: str | list[str], measurement: dict[str, Any], detail: dict[str, Any]
) -> dict[str, Any]:
    return records.finding(
        probe=probe,
        kind="token_cost",
        target=target,
        measurement=measurement,
        confidence=0.7,
        detail=detail,
    )


def _tool_token_findings(
    spec: ServerSpec, tokens: Mapping[str, int], common: Mapping[str, Any]
) -> list[dict[str, Any]]:
    union_total = sum(tokens.values())
    findings = []
    for name, count in tokens.items():
        phases = [p for p, ts in spec.phases.items() if name in ts] if spec.phases else None
        measurement = {
            "scope": "tool",
            "tokens": count,
            "share": round(count / union_total, 3),
            **common,
            **({"phases": phases} if phases is not None else {}),
        }
        findings.append(_token_cost("static_hygiene", name, measurement, {}))
    return findings


def _unphased_surface(
    spec: ServerSpec, tokens: Mapping[str, int], common: Mapping[str, Any], model: str | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The surface finding of a server that loads every tool at once, and its headline."""
    total = sum(tokens.values())
    measurement = {
        "scope": "surface",
        "tokens": total,
        "tool_count": len(spec.tools),
        "tokens_per_tool_avg": round(total / len(spec.tools), 1),
        **common,
        "model": model,
    }
    detail = {"empty_baseline": 3, "full": total + 3}
    headline: dict[str, Any] = {
        "phased": False,
        "worst_phase": None,
        "phase_tokens": None,
        "union_tool_count": None,
        "carried_tools": None,
    }
    return _token_cost("static_hygiene", list(spec.tools), measurement, detail), headline


def _phase_findings(
    phases: Mapping[str, tuple[str, ...]],
    phase_tokens: Mapping[str, int],
    common: Mapping[str, Any],
) -> list[dict[str, Any]]:
    return [
        _token_cost(
            "phase_surface",
            list(ts),
            {
                "scope": "phase",
                "phase": phase,
                "tokens": phase_tokens[phase],
                "tool_count": len(ts),
                "tokens_per_tool_avg": round(phase_tokens[phase] / len(ts), 1),
                **common,
            },
            {},
        )
        for phase, ts in phases.items()
    ]


def _phased_surface(
    spec: ServerSpec,
    phases: Mapping[str, tuple[str, ...]],
    phase_tokens: dict[str, int],
    common: Mapping[str, Any],
    model: str | None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The per-turn tax of a phased server is its worst phase; the union is never loaded."""
    worst = max(phase_tokens, key=lambda phase: phase_tokens[phase])
    worst_tools = phases[worst]
    measurement = {
        "scope": "surface",
        "tokens": phase_tokens[worst],
        "tool_count": len(worst_tools),
        "tokens_per_tool_avg": round(phase_tokens[worst] / len(worst_tools), 1),
        **common,
        "model": model,
        "phased": True,
        "worst_phase": worst,
    }
    detail = {"phases": phase_tokens, "note": "per-turn tax = worst phase; union never co-loaded"}
    headline = {
        "phased": True,
        "worst_phase": worst,
        "phase_tokens": phase_tokens,
        "union_tool_count": len(spec.tools),
        "carried_tools": [],
    }
    return _token_cost("phase_surface", sorted(worst_tools), measurement, detail), headline


def _token_findings(
    spec: ServerSpec,
    tokens: Mapping[str, int],
    authoritative: bool,
    backend: str,
    model: str | None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Surface, phase and per-tool token_cost findings, and the headline's phase fields."""
    common = {"authoritative": authoritative, "backend": backend}
    tools = _tool_token_findings(spec, tokens, common)
    if spec.phases is None:
        surface, headline = _unphased_surface(spec, tokens, common, model)
        return [surface, *tools], headline
    phase_tokens = {phase: sum(tokens[t] for t in ts) for phase, ts in spec.phases.items()}
    surface, headline = _phased_surface(spec, spec.phases, phase_tokens, common, model)
    return [surface, *_phase_findings(spec.phases, phase_tokens, common), *tools], headline


def _coverage(spec: ServerSpec, version: int) -> tuple[list[str], list[dict[str, Any]]]:
    probes = {
        item.probe for item in spec.findings if item.versions is None or version in item.versions
    }
    ran = ["static_hygiene", "consolidate"]
    ran += ["noise"] if spec.noise else []
    ran += [probe for probe in ("mcp_checkup", "result_size") if probe in probes]
    not_run = set((spec.not_run or {}).get(version, ()))
    ran = [probe for probe in ran if probe not in not_run]
    skipped: list[dict[str, Any]] = [
        {"probe": probe, "missing": ["disabled"]} for probe in sorted(not_run)
    ]
    if not spec.noise:
        skipped.append({"probe": "noise", "missing": ["api_key", "llm"]})
    skipped += [
        {"probe": probe, "missing": ["config_path"]}
        for probe in ("mcp_checkup", "token_analyzer")
        if probe not in ran
    ]
    return ran, skipped


def build_report(spec: ServerSpec, version: int, seed: int, server_index: int) -> dict[str, Any]:
    """One mcp-xray report.json for one version of a server, graded as mcp-xray grades."""
    name, server_version = spec.name, spec.versions[version]
    backend = "anthropic" if spec.noise else "offline"
    model = NOISE_MODEL if spec.noise else None
    ran, skipped = _coverage(spec, version)
    tokens = _tool_tokens(spec, version, seed, server_index)
    token_findings, phase_headline = _token_findings(spec, tokens, spec.noise, backend, model)
    findings = token_findings + _spec_findings(spec, version, ran)
    grade = xray_reference.grade(findings, ran)
    per_turn = token_findings[0]["measurement"]["tokens"]
    generated = EPOCH + timedelta(
        days=(seed % 50) + server_index * 3 + version * 30, minutes=17 * server_index
    )
    server = {
        "name": name,
        "version": server_version,
        "transport": spec.transport,
        "source": "+".join(spec.phases) if spec.phases else f"servers/{name}.json",
        "fingerprint": hashlib.sha256(f"{seed}:{name}@{server_version}".encode()).hexdigest()[:16],
        "tool_count": len(spec.tools),
    }
    headline = {
        "surface_tokens_per_turn": per_turn,
        "est_cost_per_1k_turns_usd": round(per_turn * INPUT_PRICE_PER_MTOK / 1000, 2),
        "input_price_per_mtok": INPUT_PRICE_PER_MTOK,
        "input_price_known": False,
        "price_source": "built-in",
        "authoritative": spec.noise,
        "token_backend": backend,
        "model": model,
        **phase_headline,
    }
    llm = {
        "model": model,
        "token_backend": backend,
        "behavioral_probe": spec.noise,
        "samples": 5 if spec.noise else None,
    }
    return records.surface_report(
        generated_at=generated.isoformat(),
        server=server,
        grade=grade,
        headline=headline,
        coverage={"ran": ran, "skipped": skipped, "available": ["inventory"]},
        findings=findings,
        llm=llm,
        run_id=(spec.run_id or {}).get(version),
    )


def sample_reports(seed: int) -> list[dict[str, Any]]:
    return [
        build_report(spec, version, seed, index)
        for index, spec in enumerate(SAMPLE_SERVERS)
        for version in range(len(spec.versions))
    ]


def extra_reports(seed: int) -> list[dict[str, Any]]:
    offset = len(SAMPLE_SERVERS)
    return [
        build_report(spec, version, seed, offset + index)
        for index, spec in enumerate(EXTRA_SERVERS)
        for version in range(len(spec.versions))
    ]


def write_surface(out: Path, seed: int) -> list[Path]:
    written = []
    for report in sample_reports(seed):
        folder = f"{report['server']['name']}-{report['server']['version']}"
        text = json.dumps(report, indent=2, sort_keys=True) + "\n"
        written.append(write_bytes(out / "surface" / folder / "report.json", text.encode()))
    lines = [
        json.dumps(report, sort_keys=True, separators=(",", ":")) for report in extra_reports(seed)
    ]
    written.append(write_bytes(out / "surface" / "extra.jsonl", ("\n".join(lines) + "\n").encode()))
    return written
