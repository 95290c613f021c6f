"""Surface records as ingest hands them to ``parse_reports``, for the surface tests."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

# A rubric that is not mcp-xray's: context efficiency weighted 1, schema hygiene 3, the rest 0
# (shares 0.25 and 0.75), for the tests of custom weights.
CE1_SH3: Mapping[str, Any] = {
    "surface": {
        "weights": {
            "context_efficiency": 1,
            "schema_hygiene": 3,
            "selection_robustness": 0,
            "surface_redundancy": 0,
            "description_quality": 0,
        }
    }
}

# A small report with no run_id of its own, so its run_id is server@version@generated_at.
SMALL_REPORT: dict[str, Any] = {
    "generated_at": "2026-12-01T00:00:00+00:00",
    "server": {"name": "s", "version": "1"},
    "coverage": {"ran": ["consolidate"]},
    "findings": [{"kind": "duplicate", "target": ["a", "b"]}],
}
SMALL_REPORT_RUN_ID = "s@1@2026-12-01T00:00:00+00:00"


def surface_records(
    reports: Sequence[str | Mapping[str, Any]],
    sources: Sequence[str] | None = None,
    batch_id: str = "b1",
) -> pl.DataFrame:
    """Each report (JSON text, or an object to write as one) on its own line of
    ``reports.jsonl``, or, given ``sources``, on line 1 of each of them. The content hash
    is of the text, as ingest's: the same text twice is the same report."""
    texts = [r if isinstance(r, str) else json.dumps(r) for r in reports]
    n = len(texts)
    return pl.DataFrame(
        {
            "source": list(sources) if sources is not None else ["reports.jsonl"] * n,
            "line": [1] * n if sources is not None else list(range(1, n + 1)),
            "raw": texts,
            "content_hash": [hashlib.sha256(t.encode()).hexdigest() for t in texts],
            "batch_id": [batch_id] * n,
        },
        schema={
            "source": pl.String,
            "line": pl.Int64,
            "raw": pl.String,
            "content_hash": pl.String,
            "batch_id": pl.String,
        },
    )
