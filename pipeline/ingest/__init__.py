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

from pipeline.core.lazy import lazy_getattr

_HOMES = {
    "Batch": "batch",
    "build_batch": "batch",
    "landed_frames": "batch",
    "FileFailure": "quarantine",
    "compact_quarantine": "quarantine",
    "failed_block": "quarantine",
    "guarded": "quarantine",
    "quarantined_lines": "quarantine",
    "Deduped": "dedupe",
    "dedupe_failed": "dedupe",
    "touching": "dedupe",
}

__all__ = sorted(_HOMES)
__getattr__ = lazy_getattr(__name__, _HOMES)
