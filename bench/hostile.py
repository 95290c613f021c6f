"""Hostile input shapes (issue 12), written at any scale, for the tests and ``make bench``.

Each writer puts one file into a folder and returns its path. ``scale`` is the
shape's size knob (components, list items, findings, lines, bytes), so a test
can write a small one and the bench the size that once took a run down.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

BASE_RECORD: dict[str, Any] = {
    "agent": "hostile",
    "agent_version": "1.0.0",
    "env_type": "exploit",
    "problem_id": "exploit-hostile-00",
    "graded_at": "2025-01-16T23:46:58+00:00",
    "trial": 0,
    "grade": {
        "metadata": {"defect_matching": {"reason": "ok"}},
        "subscores": {
            "defect_matching": 1.0,
            "pov_quality": 0.5,
            "summary_quality": 0.5,
            "target_calls": 0.5,
        },
        "weights": {
            "defect_matching": 0.6,
            "pov_quality": 0.2,
            "summary_quality": 0.1,
            "target_calls": 0.1,
        },
    },
}


def task_record(run_id: str, **grade: Any) -> dict[str, Any]:
    """A valid exploit record; ``grade`` keys replace the grade's."""
    record = json.loads(json.dumps(BASE_RECORD))
    record["run_id"] = run_id
    record["grade"].update(grade)
    return record


def _write_lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def many_components(folder: Path, scale: int) -> Path:
    """One task record with ``scale`` components (weights sum to 1)."""
    names = [f"c{i}" for i in range(scale)]
    record = task_record(
        f"components-{scale}",
        subscores=dict.fromkeys(names, 0.5),
        weights=dict.fromkeys(names, 1.0 / scale),
    )
    return _write_lines(folder / f"components-{scale}.jsonl", [record])


def long_metadata_list(folder: Path, scale: int) -> Path:
    """One task record whose metadata holds a list of ``scale`` small items."""
    record = task_record(
        f"metalist-{scale}",
        metadata={"defect_matching": {"reason": "ok"}, "items": list(range(scale))},
    )
    return _write_lines(folder / f"metalist-{scale}.jsonl", [record])


def report(findings: int) -> dict[str, Any]:
    """An mcp-xray report with ``findings`` merge candidates and one surface token cost."""
    surface = {
        "probe": "static_hygiene",
        "kind": "token_cost",
        "target": ["t0", "t1"],
        "measurement": {
            "scope": "surface",
            "tokens": 900,
            "tool_count": 10,
            "tokens_per_tool_avg": 90.0,
        },
        "severity": 0.0,
    }
    merge = {
        "probe": "consolidate",
        "kind": "merge_candidate",
        "target": ["a", "b"],
        "measurement": {"tokens_saved_est": 79, "wide_union": False, "mixes_read_write": False},
        "severity": 0.44,
    }
    return {
        "tool": "mcp-xray",
        "generated_at": "2026-12-03T11:05:04+00:00",
        "server": {"name": f"many-{findings}", "version": "1.0.0", "tool_count": 10},
        "findings": [surface] + [merge] * (findings - 1),
    }


def many_findings(folder: Path, scale: int) -> Path:
    path = folder / f"findings-{scale}.json"
    path.write_text(json.dumps(report(scale)), encoding="utf-8")
    return path


def empty_objects(folder: Path, scale: int) -> Path:
    """``scale`` lines of ``{}``: each a bad record."""
    path = folder / f"empty-objects-{scale}.jsonl"
    path.write_bytes(b"{}\n" * scale)
    return path


def gzip_bomb(folder: Path, scale: int) -> Path:
    """A gzip file expanding to ``scale`` bytes of ``{}`` lines."""
    path = folder / f"bomb-{scale}.jsonl.gz"
    block = b"{}\n" * (1 << 18)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as out:
        for _ in range(max(1, scale // len(block))):
            out.write(compressor.compress(block))
        out.write(compressor.flush())
    return path


def gzip_renamed(folder: Path, scale: int) -> Path:
    """The same gzip bomb under a plain .jsonl name (`gzip -c x > y.jsonl`): a reader that
    takes the name's word reads it as text, and Polars' line scanner inflated it whole."""
    bomb = gzip_bomb(folder, scale)
    return bomb.rename(folder / f"renamed-bomb-{scale}.jsonl")


def one_long_line(folder: Path, scale: int) -> Path:
    """A gzip file expanding to one line of ``scale`` bytes (no newline inside)."""
    path = folder / f"long-line-{scale}.jsonl.gz"
    block = b"a" * (1 << 20)
    with gzip.open(path, "wb", compresslevel=9) as out:
        for _ in range(max(1, scale // len(block))):
            out.write(block)
    return path


def sparse_file(folder: Path, scale: int) -> Path:
    """A file of ``scale`` zero bytes that uses no disk (one line, no newline)."""
    path = folder / f"sparse-{scale}.jsonl"
    with open(path, "wb") as out:
        out.truncate(scale)
    return path


def int64_overflow(folder: Path, scale: int) -> Path:
    """``scale`` records whose trial is 2^63 (one past int64)."""
    records = [task_record(f"overflow-{i}") for i in range(scale)]
    text = "".join(
        json.dumps(r).replace('"trial": 0', '"trial": 9223372036854775808') + "\n" for r in records
    )
    path = folder / "int64-overflow.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def good_records(folder: Path, scale: int) -> Path:
    """``scale`` valid task records, each its own run."""
    return _write_lines(
        folder / f"good-{scale}.jsonl", [task_record(f"good-{i}") for i in range(scale)]
    )


REAL_600_TOOLS = (
    Path(__file__).resolve().parents[1]
    / "tests/fixtures/mcp-xray-generated/server_600_tools.json.gz"
)


def real_600_tools(folder: Path, scale: int) -> Path:
    """The genuine 600-tool mcp-xray report (21.5 MB, 30,666 findings), ``scale`` copies
    under their own server names."""
    text = gzip.decompress(REAL_600_TOOLS.read_bytes())
    for copy in range(scale):
        named = text.replace(b'"name": "huge-srv"', f'"name": "huge-srv-{copy}"'.encode(), 1)
        (folder / f"server_600_tools-{copy}.json").write_bytes(named)
    return folder / "server_600_tools-0.json"


SHAPES: dict[str, Callable[[Path, int], Path]] = {
    "components": many_components,
    "metadata_list": long_metadata_list,
    "findings": many_findings,
    "empty_objects": empty_objects,
    "gzip_bomb": gzip_bomb,
    "gzip_renamed": gzip_renamed,
    "long_line": one_long_line,
    "sparse": sparse_file,
    "int64": int64_overflow,
    "good": good_records,
    "real_600_tools": real_600_tools,
}
