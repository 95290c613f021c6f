"""The comparison and the history read from the warehouse (read-only), through the
parameterised queries ``sql/queries/compare_*.sql``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipeline.compare.reasons import failure_reasons
from pipeline.compare.text import UTC, invisible_differences
from pipeline.compare.versions import (
    DEFAULT_SETTINGS,
    CompareSettings,
    Comparison,
    compare_versions,
    version_history,
)
from pipeline.core.jsonsafe import json_safe
from pipeline.core.sql import run_sql
from pipeline.warehouse import reading

# How many known agents (and versions) the message for an unknown one names.
KNOWN_SHOWN = 10


def _query(con: duckdb.DuckDBPyConnection, name: str, params: Sequence[Any]) -> pl.DataFrame:
    """The query's rows, every instant in UTC: DuckDB hands a TIMESTAMPTZ over in the
    session's TimeZone, the reading machine's own, and one lake must read the same on every
    machine (``history``'s first graded run was the reader's local time)."""
    import polars.selectors as cs

    frame = run_sql(f"queries/{name}.sql", {}, list(params), con=con)
    return frame.with_columns(cs.datetime(time_zone="*").dt.convert_time_zone(UTC))


def check_versions(lake: Path, agent: str, wanted: Sequence[str]) -> list[str] | str:
    """The agent's known versions (in order of first graded run), or a message naming
    what is unknown: a usage error, for the CLI to say."""
    with reading(lake) as con:
        known = _query(con, "compare_versions", [agent])["agent_version"].to_list()
        agents = [] if known else _query(con, "known_agents", [agent])["agent"].to_list()
    if not known:
        shown = ", ".join(map(repr, agents[:KNOWN_SHOWN])) + (
            ", ..." if len(agents) > KNOWN_SHOWN else ""
        )
        looks = _looks_like(agent, agents, "agent")
        return f"no runs of agent {agent!r}{looks} in the warehouse at {lake}" + (
            f"; known agents: {shown}" if agents else "; it holds no task runs"
        )
    versions = [str(v) for v in known]
    missing = [v for v in wanted if v not in versions]
    if missing:
        # Quoted as Python quotes them, so a name holding ', ' or a line break reads as one
        # name and the message stays on one line; the latest ones, the likely meant.
        latest = versions[-KNOWN_SHOWN:]
        which = (
            f", the latest {len(latest)} of {len(versions)}" if len(latest) < len(versions) else ""
        )
        said = ", ".join(f"{v!r}{_looks_like(v, versions, 'version')}" for v in missing)
        return (
            f"agent {agent!r} has no runs of version(s) {said}; "
            f"known versions{which}: {', '.join(map(repr, latest))}"
        )
    return versions


def _looks_like(given: str, known: Sequence[str], what: str) -> str:
    """`` (the known <what> 'X' differs from it only in ...)`` for a known name a reader may
    take for the one given (text.invisible_differences); else ''."""
    for name in known:
        if differences := invisible_differences(given, name):
            return f" (the known {what} {name!r} differs from it only in {differences})"
    return ""


def fetch_comparison(
    lake: Path,
    *,
    agent: str,
    baseline: str,
    candidate: str,
    settings: CompareSettings = DEFAULT_SETTINGS,
) -> Comparison:
    """Run the comparison on the warehouse: fetch runs and components, then the reasons
    from the metadata of the regressed problems' worst trials only."""
    with reading(lake) as con:
        versions = [baseline, candidate]
        result = compare_versions(
            _query(con, "compare_runs", [agent, versions]),
            _query(con, "compare_components", [agent, versions]),
            None,
            agent=agent,
            baseline=baseline,
            candidate=candidate,
            settings=settings,
        )
        run_ids = [r for r in result.regressed["candidate_run_id"].to_list() if r is not None]
        if not run_ids:
            return result
        metadata = _query(con, "compare_metadata", [run_ids])
    regressed = failure_reasons(result.regressed.drop("failing_reason"), metadata.lazy())
    report = {**result.report, "regressed_problems": [json_safe(r) for r in regressed.to_dicts()]}
    return Comparison(report=report, pairs=result.pairs, regressed=regressed)


def fetch_history(lake: Path, agent: str, versions: Sequence[str]) -> list[dict[str, Any]]:
    """Every version of ``agent`` with its metrics and its step against the one before."""
    with reading(lake) as con:
        runs = _query(con, "compare_runs", [agent, list(versions)])
    return version_history(runs, agent=agent)
