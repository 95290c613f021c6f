"""Comparing versions of an agent: the statistics, the release gate, the comparison and
the history as data, and their rendering (terminal blocks, an HTML page).

Reading order, each module using only those before it: ``text`` (number formats),
``stats`` (paired t, bootstrap, McNemar) → ``metrics`` (the four metrics of a version)
→ ``gate`` (verdicts per env type, Holm) → ``pairing`` → ``reasons`` → ``documents``
→ ``versions`` (the comparison and the history) → ``fetch`` (the same, read from the
warehouse); ``regressions`` writes the lake's ``version_regressions`` table; ``render``
and ``html`` draw a report.

Names load on first use: every ingest and score imports ``regressions``, and must not pay
for the comparison, its rendering and the warehouse reader (~0.25 s) to do so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.core.lazy import by_name, lazy_getattr

if TYPE_CHECKING:
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

_HOMES = by_name(
    {
        "fetch": ("check_versions", "fetch_comparison", "fetch_history"),
        "html": ("render_comparison",),
        "reasons": ("failure_reasons",),
        "versions": (
            "DEFAULT_SETTINGS",
            "CompareSettings",
            "Comparison",
            "compare_versions",
            "history_document",
            "version_history",
        ),
    }
)

# Literal, not derived from _HOMES: the type checkers' imports above count as used only
# through it. ``render`` is a module: ``from pipeline.compare import render``.
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
    "render_comparison",
    "version_history",
]
__getattr__ = lazy_getattr(__name__, _HOMES)
