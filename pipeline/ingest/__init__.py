"""Lines to landed tables (CONTRACT 8: every line lands, is quarantined or is skipped).

Reading order, each module using only those before it: ``classify`` (JSON kinds and the
reasons a line is refused before its fields are read) → ``quarantine`` (quarantine rows,
counted blocks, a file that fails whole) → ``batch`` (a chunk of lines to landed-shape
tables, with ``pipeline.tasks.parse`` and ``pipeline.surface.parse``) → ``dedupe`` (what
the lake holds already); ``evolution`` notes new names (schema news).

The names below are loaded on first use, so importing the package stays cheap (the
functions ``classify`` and ``dedupe`` share their modules' names: import them from there).
"""

from __future__ import annotations

from pipeline.core.lazy import by_name, lazy_getattr

_HOMES = by_name(
    {
        "batch": ("Batch", "build_batch", "landed_frames"),
        "quarantine": (
            "FileFailure",
            "compact_quarantine",
            "failed_block",
            "guarded",
            "quarantined_lines",
        ),
        "dedupe": ("Deduped", "dedupe_failed", "touching"),
    }
)

__all__ = sorted(_HOMES)
__getattr__ = lazy_getattr(__name__, _HOMES)
