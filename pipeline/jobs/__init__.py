"""One module per command, wiring the stages together; the lake's I/O through its store.

The lock-taking entry points of ingest, score and run are in ``pipeline.jobs.commands``
(those names are this package's submodules); nightly, replay and check have their own
modules. Names load on first use, so importing this package stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.core.lazy import by_name, lazy_getattr

if TYPE_CHECKING:
    from pipeline.jobs.check import CheckReport, check_lake
    from pipeline.jobs.commands import dry_run
    from pipeline.jobs.ingest import ingest_locked
    from pipeline.jobs.lineage import RescoreDiff, rescore_diff
    from pipeline.jobs.nightly import NightlySummary
    from pipeline.jobs.prepare import prepare
    from pipeline.jobs.replay import ReplayReport, replay_quarantine
    from pipeline.jobs.results import IngestReport, RunSummary, ScoreResult
    from pipeline.jobs.score import score_locked

_HOMES = by_name(
    {
        "check": ("CheckReport", "check_lake"),
        "commands": ("dry_run",),
        "ingest": ("ingest_locked",),
        "lineage": ("RescoreDiff", "rescore_diff"),
        "nightly": ("NightlySummary",),
        "prepare": ("prepare",),
        "replay": ("ReplayReport", "replay_quarantine"),
        "results": ("IngestReport", "RunSummary", "ScoreResult"),
        "score": ("score_locked",),
    }
)

__all__ = [
    "CheckReport",
    "IngestReport",
    "NightlySummary",
    "ReplayReport",
    "RescoreDiff",
    "RunSummary",
    "ScoreResult",
    "check_lake",
    "dry_run",
    "ingest_locked",
    "prepare",
    "replay_quarantine",
    "rescore_diff",
    "score_locked",
]


__getattr__ = lazy_getattr(__name__, _HOMES)
