"""Every ``PIPELINE_*`` setting, declared once: its variable, default, unit and why.

A command resolves them from the environment once, at its entry (the CLI, or a job
called as a library), and hands them down; no other module reads the environment
for them. A bad value is refused before any work, naming the variable and the value
(exit 2 at the CLI). docs/settings.md's table is generated from these declarations
(``python -m tools.settings_docs --write``), and a test keeps the two in step.

``PIPELINE_CRASH_AT`` is not a setting: it is the crash tests' fault-injection hook
(pipeline/storage/lake.py), read at each file write so a test can kill a subprocess
at a chosen step; a user never sets it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import Field, dataclass, field, fields, replace
from typing import Any

MIB = 1024**2
GIB = 1024**3
# Variables that are not settings (see the module's docstring).
CRASH_AT_ENV = "PIPELINE_CRASH_AT"
TEST_HOOKS = (CRASH_AT_ENV,)
# Whole numbers of at most 20 digits: past 4300 digits int() itself refuses, uncaught.
_WHOLE = re.compile(r"[0-9]{1,20}")
# The variables: messages name them (set_by: "set by --max-depth or PIPELINE_MAX_DEPTH"),
# tests set them.
MAX_RECORD_BYTES_ENV = "PIPELINE_MAX_RECORD_BYTES"
MAX_REPORT_BYTES_ENV = "PIPELINE_MAX_REPORT_BYTES"
MAX_DEPTH_ENV = "PIPELINE_MAX_DEPTH"
MAX_EXPANDED_BYTES_ENV = "PIPELINE_MAX_EXPANDED_BYTES"
KEEP_BAD_LINES_ENV = "PIPELINE_KEEP_BAD_LINES"
DUCKDB_MEMORY_ENV = "PIPELINE_DUCKDB_MEMORY_BYTES"
DUCKDB_THREADS_ENV = "PIPELINE_DUCKDB_THREADS"
QUERY_MEMORY_ENV = "PIPELINE_QUERY_MEMORY_BYTES"
QUERY_THREADS_ENV = "PIPELINE_QUERY_THREADS"
QUERY_SECONDS_ENV = "PIPELINE_QUERY_SECONDS"


# The largest value a setting of each unit takes: past them DuckDB or the OS refused later,
# mid-command (a thread count of 100000: "can't start new thread", exit 1 instead of 2).
MAXIMA = {
    "bytes": 2**50,  # 1 PiB
    "levels": 100_000,
    "lines": 2**31,
    "threads": 1024,
    "seconds": 10**7,  # ~116 days
}


class SettingError(ValueError):
    """A ``PIPELINE_*`` variable holding a value the setting does not take."""


@dataclass(frozen=True)
class Declared:
    """One setting as documented: what the docs table shows for it."""

    name: str
    env: str
    default: str
    unit: str
    why: str
    flag: str | None
    largest: str = ""


def _setting(
    env: str,
    default: int,
    unit: str,
    why: str,
    *,
    flag: str | None = None,
    shown: str | None = None,
) -> Any:  # a dataclass field, typed by the annotation it is assigned to
    meta = {"env": env, "unit": unit, "why": why, "flag": flag, "shown": shown}
    return field(default=default, metadata=meta)


def _in_range(value: int, spec: Field[Any]) -> bool:
    return 1 <= value <= MAXIMA[spec.metadata["unit"]]


def _refusal(name: str, value: object, spec: Field[Any]) -> str:
    """A bad value as a refusal names it: the variable (or field) and what it takes."""
    return f"{name}={value!r}: expected a whole number from 1 to {MAXIMA[spec.metadata['unit']]}"


def _cores() -> int:
    return min(os.cpu_count() or 1, MAXIMA["threads"])


@dataclass(frozen=True)
class Settings:
    """Every limit a command applies, each from 1 to its unit's largest (MAXIMA)."""

    max_record_bytes: int = _setting(
        MAX_RECORD_BYTES_ENV,
        16 * MIB,
        "bytes",
        "A line over it is quarantined with its first KiB: a line stops being buffered "
        "once it passes the limit.",
        flag="--max-record-bytes",
    )
    max_report_bytes: int = _setting(
        MAX_REPORT_BYTES_ENV,
        128 * MIB,
        "bytes",
        "Report files (one report per .json) have their own limit, sized for what mcp-xray "
        "writes: ~36 kB a tool, a 600-tool report is 21.5 MB.",
    )
    max_depth: int = _setting(
        MAX_DEPTH_ENV,
        64,
        "levels",
        "A record nested deeper is quarantined, measured on the text without parsing "
        "(json_tree paths grow with depth squared).",
        flag="--max-depth",
    )
    max_expanded_bytes: int = _setting(
        MAX_EXPANDED_BYTES_ENV,
        8 * GIB,
        "bytes",
        "A compressed input is expanded up to this size; past it the rest of the file is "
        "quarantined as one counted block with a reason. An Inspect .eval log (a ZIP) is "
        "bounded by the sizes its ZIP directory records: a sample past what is left is "
        "quarantined in its place, unread.",
    )
    keep_bad_lines: int = _setting(
        KEEP_BAD_LINES_ENV,
        1000,
        "lines",
        "A file's first bad lines, this many, are quarantined in full, the rest as counted "
        "line ranges with their reason.",
    )
    duckdb_memory_bytes: int = _setting(
        DUCKDB_MEMORY_ENV,
        4 * GIB,
        "bytes",
        "DuckDB's memory per pipeline connection (ingest, scoring, the warehouse build, "
        "check's run of each view); past it an input file alone is quarantined whole, a build "
        "writes blocks to its file, and check names the view. The 600-tool report needs just "
        "over 2 GiB; a dense report near the report limit (200k findings in 120 MB) needs more "
        "than the default, and its reason says so.",
    )
    duckdb_threads: int = field(
        default_factory=_cores,
        metadata={
            "env": DUCKDB_THREADS_ENV,
            "unit": "threads",
            "why": "DuckDB's threads per pipeline connection.",
            "flag": None,
            "shown": "the machine's cores",
        },
    )
    query_memory_bytes: int = _setting(
        QUERY_MEMORY_ENV,
        2 * GIB,
        "bytes",
        "`query` runs with a memory limit, a thread count and a time limit: an analyst's "
        "query must not starve the nightly job.",
    )
    query_threads: int = _setting(
        QUERY_THREADS_ENV, 2, "threads", "DuckDB's threads for one `query`."
    )
    query_seconds: int = _setting(
        QUERY_SECONDS_ENV,
        300,
        "seconds",
        "A `query` running longer is interrupted (exit 1): an endless recursive CTE ran on before.",
    )

    def __post_init__(self) -> None:
        bad = [
            _refusal(f.name, getattr(self, f.name), f)
            for f in fields(self)
            if not _in_range(getattr(self, f.name), f)
        ]
        if bad:
            raise SettingError("; ".join(bad))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Each setting from its variable, else its default; SettingError names every bad one."""
        source = os.environ if environ is None else environ
        chosen: dict[str, int] = {}
        bad: list[str] = []
        for spec in fields(cls):
            text = source.get(spec.metadata["env"], "").strip()
            if not text:
                continue
            if _WHOLE.fullmatch(text) and _in_range(int(text), spec):
                chosen[spec.name] = int(text)
            else:
                bad.append(_refusal(spec.metadata["env"], text, spec))
        if bad:
            raise SettingError("; ".join(bad))
        return cls(**chosen)

    def with_flags(self, **given: int | None) -> Settings:
        """These settings with the command line's values where it gave one."""
        return replace(self, **{name: value for name, value in given.items() if value is not None})


def declared() -> list[Declared]:
    """Every setting as the docs show it, in declaration order."""
    return [_declared(spec) for spec in fields(Settings)]


def set_by(env: str) -> str:
    """How a user sets the setting of variable ``env``, as a message names it: the flag
    first when commands take one ("--max-depth or PIPELINE_MAX_DEPTH"), else the variable."""
    for setting in declared():
        if setting.env == env:
            return f"{setting.flag} or {env}" if setting.flag else env
    raise KeyError(env)


def _declared(spec: Field[Any]) -> Declared:
    meta = spec.metadata
    default = spec.default
    shown = meta["shown"] or (_sized(default) if meta["unit"] == "bytes" else str(default))
    most = MAXIMA[meta["unit"]]
    largest = _sized(most) if meta["unit"] == "bytes" else str(most)
    return Declared(spec.name, meta["env"], shown, meta["unit"], meta["why"], meta["flag"], largest)


def _sized(value: object) -> str:
    """16777216 as "16 MiB (16777216)": people read the first, scripts copy the second."""
    number = int(str(value))
    for size, unit in ((1024 * 1024 * GIB, "PiB"), (1024 * GIB, "TiB"), (GIB, "GiB"), (MIB, "MiB")):
        if number % size == 0:
            return f"{number // size} {unit} ({number})"
    return str(number)


# The settings of the command running now: set once at its entry (use_settings), read
# where a limit applies deep below it (a DuckDB connection opened by any stage).
_ACTIVE: ContextVar[Settings | None] = ContextVar("pipeline_settings", default=None)


@contextmanager
def use_settings(settings: Settings) -> Iterator[Settings]:
    """Run the block under ``settings``: current_settings() answers them inside it."""
    token = _ACTIVE.set(settings)
    try:
        yield settings
    finally:
        _ACTIVE.reset(token)


def current_settings() -> Settings:
    """The running command's settings; outside a command (a library call, a test),
    the environment's, resolved now."""
    active = _ACTIVE.get()
    return Settings.from_env() if active is None else active
