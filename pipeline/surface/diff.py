"""surface-diff: what changed between two versions of an MCP server (CONTRACT 7).

Findings are matched across versions by the warehouse (``int_surface_finding_keys``: kind,
target tools, identifying measurement keys, occurrence); this module picks the versions,
reads the matched findings and the grade deltas, decides ``--fail-on-new``, and writes SARIF.
The command and its printing are pipeline/cli/comparison.py's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipeline.core.sql import sql_text
from pipeline.storage import lake as lk
from pipeline.warehouse import reading

NEW, WORSE, RESOLVED, BETTER, SAME = "new", "worse", "resolved", "better", "same"
# The changes --fail-on-new looks at: a finding the new version brought or made worse.
FAILING_CHANGES = (NEW, WORSE)
# Severity bands (severity_display, 0–1), highest first: name, lower bound, SARIF level.
SEVERITY_BANDS = (("high", 0.7, "error"), ("medium", 0.4, "warning"), ("low", 0.0, "note"))
# SARIF's baselineState for each change.
BASELINE_STATE = {NEW: "new", WORSE: "updated", BETTER: "updated", SAME: "unchanged"}
BASELINE_STATE[RESOLVED] = "absent"
SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"


class DiffUsageError(ValueError):
    """Bad usage of surface-diff: unknown server or version, a bad severity (exit 2)."""


def parse_severity(text: str) -> float:
    """``--fail-on-new``: a band name (low, medium, high: its lower bound) or a number in
    [0, 1]. A finding reaches it when its severity is at least that much."""
    bands = {name: bound for name, bound, _ in SEVERITY_BANDS}
    if text.lower() in bands:
        return bands[text.lower()]
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 <= value <= 1.0:
        names = ", ".join(f"{name} (>= {bound})" for name, bound, _ in SEVERITY_BANDS)
        raise DiffUsageError(
            f"--fail-on-new {text!r}: expected a severity in [0, 1] or one of {names}"
        )
    return value


def band(severity: float | None) -> tuple[str, str]:
    """(band name, SARIF level) of a severity."""
    for name, bound, level in SEVERITY_BANDS:
        if severity is not None and severity >= bound:
            return name, level
    return SEVERITY_BANDS[-1][0], SEVERITY_BANDS[-1][2]


@dataclass(frozen=True)
class SurfaceDiff:
    server: str
    from_version: str
    to_version: str
    versions: list[str]
    # every finding of either version, matched (change = ... | same); unmeasured: new or
    # resolved only because its probe ran in one version (see unmeasured_probes)
    findings: pl.DataFrame
    grade: dict[str, Any]  # a surface_version_changes row
    from_ran: list[str]  # coverage.ran of the --from version's report
    to_ran: list[str]

    @property
    def changes(self) -> pl.DataFrame:
        return self.findings.filter(pl.col("change") != SAME)

    def counts(self) -> dict[str, int]:
        counted = self.findings.group_by("change").len()
        found = dict(zip(counted["change"].to_list(), counted["len"].to_list(), strict=True))
        return {change: int(found.get(change, 0)) for change in (NEW, WORSE, RESOLVED, BETTER)}

    def failing(self, threshold: float) -> pl.DataFrame:
        """New or worse findings whose severity reaches ``threshold``."""
        return self.findings.filter(
            pl.col("change").is_in(FAILING_CHANGES) & (pl.col("severity_after") >= threshold)
        )

    def unmeasured_probes(self) -> list[dict[str, Any]]:
        """Each probe that ran in one version only, oldest named first (the --from
        version's, then the --to's), with how many of its findings are new or resolved for
        that alone: a finding missing from a version that did not look for it is not fixed,
        and one found by a probe its other version never ran is not new to the server."""
        counted = self.findings.filter("unmeasured").group_by("probe").len()
        found = dict(zip(counted["probe"].to_list(), counted["len"].to_list(), strict=True))
        sides = (
            (self.from_ran, self.to_ran, self.from_version, self.to_version, RESOLVED),
            (self.to_ran, self.from_ran, self.to_version, self.from_version, NEW),
        )
        return [
            {
                "probe": probe,
                "ran_in": ran_in,
                "not_in": not_in,
                "change": change,
                "findings": found.get(probe, 0),
            }
            for ran, other, ran_in, not_in, change in sides
            for probe in ran_only_in(ran, other)
        ]

    def to_dict(self, threshold: float | None = None) -> dict[str, Any]:
        result: dict[str, Any] = {
            "server": self.server,
            "from": self.from_version,
            "to": self.to_version,
            "versions": self.versions,
            "grade": self.grade,
            "counts": self.counts(),
            "coverage": {"from": self.from_ran, "to": self.to_ran},
            "unmeasured": self.unmeasured_probes(),
            "changes": self.changes.drop("finding_index_before", "finding_index_after").to_dicts(),
        }
        if threshold is not None:
            result["fail_on_new"] = {
                "threshold": threshold,
                "failing": self.failing(threshold).height,
            }
        return result


def _fetch(con: duckdb.DuckDBPyConnection, query: str, params: list[Any]) -> pl.DataFrame:
    relation = con.sql(sql_text(f"queries/{query}.sql"), params=params)
    if relation is None:
        raise ValueError(f"sql/queries/{query}.sql is not a query")
    frame: pl.DataFrame = relation.pl()
    return frame


def fetch_diff(
    lake: Path, server: str, from_version: str | None, to_version: str | None
) -> SurfaceDiff:
    """The two versions (default: the latest two) of ``server`` and what changed."""
    with reading(lake) as con:
        versions = _fetch(con, "surface_diff_versions", [server])
        labels = versions["version_label"].to_list()
        chosen = _choose(server, labels, from_version, to_version)
        # Read by the run_ids standing for the two versions: a label can name two versions
        # (a null server.version and the version 'unversioned'), a run_id names one report.
        runs = [versions["run_id"][i] for i in chosen]
        findings = _fetch(con, "surface_diff_findings", [server, *runs])
        grades = _fetch(con, "surface_diff_grades", [server, *runs]).to_dicts()
        coverage = _fetch(con, "surface_diff_coverage", runs)
    ran = dict(zip(coverage["run_id"].to_list(), coverage["ran"].to_list(), strict=True))
    from_ran, to_ran = ran[runs[0]], ran[runs[1]]
    unmeasured = (
        (pl.col("change") == RESOLVED) & pl.col("probe").is_in(ran_only_in(from_ran, to_ran))
    ) | ((pl.col("change") == NEW) & pl.col("probe").is_in(ran_only_in(to_ran, from_ran)))
    return SurfaceDiff(
        server,
        labels[chosen[0]],
        labels[chosen[1]],
        labels,
        findings.with_columns(unmeasured=unmeasured.fill_null(False)),
        grades[0],
        from_ran,
        to_ran,
    )


def ran_only_in(ran: list[str], other: list[str]) -> list[str]:
    """The probes one report ran and the other did not: what they found is unmeasured in the
    other, neither fixed there nor new here."""
    return [probe for probe in ran if probe not in other]


def _choose(
    server: str, versions: list[str], from_version: str | None, to_version: str | None
) -> tuple[int, int]:
    """The places in ``versions`` (labels, oldest first) of the two versions to compare."""
    if not versions:
        raise DiffUsageError(f"no surface grades for server {server!r} in the warehouse")
    if (from_version is None) != (to_version is None):
        raise DiffUsageError("give both --from and --to, or neither (the latest two versions)")
    if from_version is None or to_version is None:
        if len(versions) < 2:
            raise DiffUsageError(
                f"server {server!r} has one version ({versions[0]}): nothing to compare"
            )
        return len(versions) - 2, len(versions) - 1
    unknown = [v for v in (from_version, to_version) if v not in versions]
    if unknown:
        raise DiffUsageError(
            f"server {server!r} has no version {', '.join(map(repr, unknown))}; "
            f"its versions: {', '.join(versions)}"
        )
    shared = [v for v in dict.fromkeys((from_version, to_version)) if versions.count(v) > 1]
    if shared:
        raise DiffUsageError(
            f"{shared[0]!r} names {versions.count(shared[0])} versions of server {server!r} "
            f"(reports without server.version and reports of version {shared[0]!r}); "
            f"surface_versions tells them apart by server_version and run_id"
        )
    if from_version == to_version:
        raise DiffUsageError(f"--from and --to are the same version ({from_version})")
    return versions.index(from_version), versions.index(to_version)


# ------------------------------------------------------------------------------- SARIF


def _rules(kinds: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "id": kind,
            "name": kind,
            "shortDescription": {"text": f"mcp-xray finding kind {kind}"},
            "helpUri": "https://pypi.org/project/mcp-xray-audit/",
        }
        for kind in kinds
    ]


def _escaped(part: str) -> str:
    return part.replace("\\", "\\\\").replace("|", "\\|").replace(",", "\\,")


def fingerprint(row: dict[str, Any]) -> str:
    """A finding's match key (kind, match_tools, identity, occurrence) as one string, the same
    in every version that has the finding, so a code-scanning tool follows one alert across
    versions. Separators inside a part are escaped with a backslash, so no two keys share a
    string (a tool named ``a,b`` is not the tools ``a`` and ``b``), and a key with none of
    ``\\ | ,`` in its parts reads as the plain join it always was. A tool named "" is written
    ``\\0`` (no escape makes it), so it is not the whole surface's empty list."""
    tools = ",".join(_escaped(tool) or "\\0" for tool in row["match_tools"] or [])
    parts = [_escaped(row["kind"]), tools, _escaped(row["identity"]), str(row["occurrence"])]
    return "|".join(parts)


def _result(row: dict[str, Any], rule_index: int) -> dict[str, Any]:
    severity = row["severity_after"] if row["change"] != RESOLVED else row["severity_before"]
    name, level = band(severity)
    tools = row["tools"] or []
    where = ", ".join(tools) if tools else "the whole surface"
    was = "" if row["severity_before"] is None else f" (was {row['severity_before']})"
    text = f"{row['kind']} on {where}: {row['change']}, severity {severity}{was}"
    result: dict[str, Any] = {
        "ruleId": row["kind"],
        "ruleIndex": rule_index,
        "level": level,
        "message": {"text": text},
        "baselineState": BASELINE_STATE[row["change"]],
        "partialFingerprints": {"surfaceFinding/v1": fingerprint(row)},
        "properties": {
            "change": row["change"],
            "severity": severity,
            "severityBand": name,
            "severityBefore": row["severity_before"],
            "severityAfter": row["severity_after"],
            "identity": row["identity"],
            "probe": row["probe"],
            "unmeasured": row["unmeasured"],
        },
    }
    if tools:
        result["locations"] = [
            {"logicalLocations": [{"name": tool, "kind": "function"} for tool in tools]}
        ]
    return result


def automation_id(diff: SurfaceDiff) -> str:
    """SARIF's run id, ``category/instance`` split at its last ``/`` (SARIF 2.1.0, 3.17.4):
    the category ``surface-diff/<server>/`` is the same for every diff of a server (a
    code-scanning tool replaces its results with each upload), the instance names the pair.
    A ``/`` in a version (``release/2.0``) would move the split into the instance, so the
    versions' ``%`` and ``/`` are percent-encoded."""
    pair = "..".join(
        v.replace("%", "%25").replace("/", "%2F") for v in (diff.from_version, diff.to_version)
    )
    return f"surface-diff/{diff.server}/{pair}"


def to_sarif(diff: SurfaceDiff) -> dict[str, Any]:
    """SARIF 2.1.0: one result per finding of either version (a rule per kind; level from
    the severity band; baselineState new / updated / unchanged / absent)."""
    kinds = sorted(set(diff.findings["kind"].to_list()))
    index = {kind: i for i, kind in enumerate(kinds)}
    results = [_result(row, index[row["kind"]]) for row in diff.findings.to_dicts()]
    return {
        "$schema": SARIF_SCHEMA_URI,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "pipeline surface-diff",
                        "informationUri": "https://pypi.org/project/mcp-xray-audit/",
                        "rules": _rules(kinds),
                    }
                },
                "automationDetails": {"id": automation_id(diff)},
                "properties": {
                    "server": diff.server,
                    "fromVersion": diff.from_version,
                    "toVersion": diff.to_version,
                },
                "results": results,
            }
        ],
    }


def write_sarif(diff: SurfaceDiff, path: Path) -> None:
    lk.write_text_atomic(json.dumps(to_sarif(diff), indent=2, default=str), path)
