"""The whole deterministic sample (``data/sample``), and its quarantine demonstration file."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from tools.simulate.flat import flat_ndjson_bytes, write_bytes
from tools.simulate.sample_tasks import sample_task_flat, write_tasks
from tools.simulate.surface import write_surface

# ---------------------------------------------------------------------------
# The quarantine demonstration file.
# ---------------------------------------------------------------------------
_NON_FINITE = "__non_finite__"


def _dump(record: Mapping[str, Any]) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":")).replace(
        f'"{_NON_FINITE}"', "1e999"
    )


def _variant(anchor: Mapping[str, Any], run_id: str) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(json.dumps(anchor))
    record["run_id"] = run_id
    return record


def bad_lines(anchor_line: str) -> list[str]:
    """One line per bad-input class of CONTRACT section 8 (see the module docstring)."""
    anchor: dict[str, Any] = json.loads(anchor_line)
    rid = anchor["run_id"]

    missing = _variant(anchor, "bad-missing-graded-at")
    del missing["graded_at"]
    wrong_type = _variant(anchor, "bad-wrong-type-trial")
    wrong_type["trial"] = "two"
    out_of_range = _variant(anchor, "bad-subscore-out-of-range")
    out_of_range["grade"]["subscores"]["pov_quality"] = 1.5
    non_finite = _variant(anchor, "bad-non-finite-cost")
    non_finite["cost_usd"] = _NON_FINITE
    negative_weight = _variant(anchor, "bad-negative-weight")
    negative_weight["grade"]["weights"].update(summary_quality=-0.1, target_calls=0.3)
    negative_penalty = _variant(anchor, "bad-negative-penalty")
    negative_penalty["grade"]["penalties"] = {"functionality_loss": -0.2}
    key_mismatch = _variant(anchor, "bad-keys-differ")
    key_mismatch["grade"]["weights"]["pov_size"] = key_mismatch["grade"]["weights"].pop(
        "pov_quality"
    )
    unknown_env = _variant(anchor, "bad-unknown-env-type")
    unknown_env["env_type"] = "fuzz"
    conflict = _variant(anchor, rid)
    conflict["grade"]["subscores"]["pov_quality"] = 0.0
    conflict["cost_usd"] = round(float(conflict.get("cost_usd", 0.0)) + 1.0, 4)
    truncated = _dump(_variant(anchor, "bad-not-json"))[:90]
    return [
        anchor_line,
        anchor_line,
        truncated,
        _dump(missing),
        _dump(wrong_type),
        _dump(out_of_range),
        _dump(non_finite),
        _dump(negative_weight),
        _dump(negative_penalty),
        _dump(key_mismatch),
        _dump(unknown_env),
        _dump(conflict),
    ]


def _write_bad(out: Path, flat: pl.DataFrame) -> Path:
    anchor = flat.filter(pl.col("role") == "anchor").drop("role", "__agent")
    anchor_line = flat_ndjson_bytes(anchor).decode().rstrip("\n")
    text = "\n".join(bad_lines(anchor_line)) + "\n"
    return write_bytes(out / "bad" / "malformed.jsonl", text.encode())


DEFAULT_SEED = 7


def write_sample(out: Path, seed: int = DEFAULT_SEED) -> list[Path]:
    """Write the whole deterministic sample under ``out``; returns the files written."""
    flat = sample_task_flat(seed)
    return [*write_tasks(out, flat), _write_bad(out, flat), *write_surface(out, seed)]
