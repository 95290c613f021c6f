"""Comparing versions of an agent: the statistics, the release gate, the comparison and
the history as data, and their rendering (terminal blocks, an HTML page).

Reading order, each module using only those before it: ``text`` (number formats),
``stats`` (paired t, bootstrap, McNemar) → ``metrics`` (the four metrics of a version)
→ ``gate`` (verdicts per env type, Holm) → ``pairing`` → ``reasons`` → ``documents``
→ ``versions`` (the comparison and the history) → ``fetch`` (the same, read from the
warehouse); ``regressions`` writes the lake's ``version_regressions`` table; ``render``
and ``html`` draw a report.
"""

from __future__ import annotations

from pipeline.compare import render
from pipeline.compare.fetch import check_versions, fetch_comparison, fetch_history
from pipeline.compare.html import render_comparison
from pipeline.compare.reasons import failure_reasons
from pipeline.compare.versions import (
    DEFAULT_SETTINGS,
    CompareSettings,
    Comparison,
    compare_versions,
    history_document,
    version_history,
)

__all__ = [
    "DEFAULT_SETTINGS",
    "CompareSettings",
    "Comparison",
    "check_versions",
    "compare_versions",
    "failure_reasons",
    "fetch_comparison",
    "fetch_history",
    "history_document",
    "render",
    "render_comparison",
    "version_history",
]
