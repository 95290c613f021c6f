"""Settings: declared once, resolved from the environment once per command, refused by name
when bad, and documented exactly (docs/settings.md is generated from the declarations)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipeline.core import sql
from pipeline.core.settings import (
    MAX_DEPTH_ENV,
    MAX_RECORD_BYTES_ENV,
    MAXIMA,
    QUERY_MEMORY_ENV,
    QUERY_SECONDS_ENV,
    QUERY_THREADS_ENV,
    TEST_HOOKS,
    SettingError,
    Settings,
    current_settings,
    declared,
    set_by,
    use_settings,
)
from tests.clirunner import pipeline
from tests.paths import ROOT
from tools.settings_docs import DOCS, table, with_table

# Every variable the pipeline reads: a PIPELINE_ name in capitals.
VARIABLE = re.compile(r"\bPIPELINE_[A-Z_]+[A-Z]\b")


def test_a_limit_is_named_by_every_way_a_user_sets_it() -> None:
    # A record over --max-record-bytes 100 had been told "the limit is
    # PIPELINE_MAX_RECORD_BYTES", a variable the user never set.
    assert set_by(MAX_RECORD_BYTES_ENV) == "--max-record-bytes or PIPELINE_MAX_RECORD_BYTES"
    assert set_by(MAX_DEPTH_ENV) == "--max-depth or PIPELINE_MAX_DEPTH"
    # No command takes a flag for the report limit: the variable alone.
    assert set_by("PIPELINE_MAX_REPORT_BYTES") == "PIPELINE_MAX_REPORT_BYTES"
    with pytest.raises(KeyError):
        set_by("PIPELINE_NO_SUCH_SETTING")


def test_the_defaults_are_those_the_readme_states() -> None:
    defaults = Settings.from_env({})
    assert defaults.max_record_bytes == 16_777_216  # 16 MiB
    assert defaults.max_report_bytes == 134_217_728  # 128 MiB
    assert defaults.max_depth == 64
    assert defaults.max_expanded_bytes == 8_589_934_592  # 8 GiB
    assert defaults.keep_bad_lines == 1000
    assert defaults.duckdb_memory_bytes == 4_294_967_296  # 4 GiB
    assert defaults.duckdb_threads >= 1
    assert defaults.query_memory_bytes == 2_147_483_648  # 2 GiB
    assert (defaults.query_threads, defaults.query_seconds) == (2, 300)


def test_a_variable_overrides_its_default_and_no_other() -> None:
    chosen = Settings.from_env({MAX_DEPTH_ENV: " 5 ", QUERY_SECONDS_ENV: "", "OTHER": "x"})
    assert chosen.max_depth == 5
    assert chosen.query_seconds == 300  # empty: the default
    assert chosen.max_record_bytes == 16_777_216


def test_the_environment_is_read_when_none_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MAX_RECORD_BYTES_ENV, "4096")
    assert Settings.from_env().max_record_bytes == 4096


@pytest.mark.parametrize("value", ["0", "-5", "lots", "1.5", "1e3", "²", "0x10", "9" * 5000])
def test_a_bad_value_is_refused_naming_the_variable_and_the_value(value: str) -> None:
    with pytest.raises(SettingError) as refused:
        Settings.from_env({MAX_DEPTH_ENV: value})
    assert str(refused.value) == (
        f"{MAX_DEPTH_ENV}={value!r}: expected a whole number from 1 to {MAXIMA['levels']}"
    )


@pytest.mark.parametrize(
    ("env", "value", "most"),
    [
        (QUERY_THREADS_ENV, "100000", "1024"),
        (QUERY_MEMORY_ENV, "9" * 23, str(2**50)),
        (QUERY_SECONDS_ENV, str(10**7 + 1), str(10**7)),
    ],
)
def test_a_value_past_its_units_most_is_refused_before_any_work(
    env: str, value: str, most: str
) -> None:
    # 100000 threads had failed mid-command ("can't start new thread", exit 1); a 23-digit
    # memory, DuckDB's "out of range".
    with pytest.raises(SettingError) as refused:
        Settings.from_env({env: value})
    assert str(refused.value) == f"{env}={value!r}: expected a whole number from 1 to {most}"


def test_every_bad_value_is_named_in_the_one_error() -> None:
    with pytest.raises(SettingError, match=f"{MAX_DEPTH_ENV}='x': .*; {QUERY_SECONDS_ENV}='0': "):
        Settings.from_env({MAX_DEPTH_ENV: "x", QUERY_SECONDS_ENV: "0"})


def test_settings_built_in_code_are_held_to_the_same_bound() -> None:
    with pytest.raises(SettingError, match="max_depth=0: expected a whole number from 1 to "):
        Settings(max_depth=0)


def test_a_flag_given_wins_over_the_variable_and_one_not_given_does_not() -> None:
    from_env = Settings.from_env({MAX_DEPTH_ENV: "5", MAX_RECORD_BYTES_ENV: "100"})
    chosen = from_env.with_flags(max_depth=7, max_record_bytes=None)
    assert (chosen.max_depth, chosen.max_record_bytes) == (7, 100)


def test_a_command_s_settings_hold_below_it_and_end_with_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(MAX_DEPTH_ENV, "9")
    with use_settings(Settings(max_depth=3)):
        # The environment is not read again inside the command.
        monkeypatch.setenv(MAX_DEPTH_ENV, "11")
        assert current_settings().max_depth == 3
    assert current_settings().max_depth == 11


def test_duckdb_connections_take_the_command_s_memory_and_threads() -> None:
    with use_settings(Settings(duckdb_memory_bytes=64 * 1024**2, duckdb_threads=1)):
        assert sql.duckdb_config() == {"memory_limit": f"{64 * 1024**2}B", "threads": 1}
        con = sql.connect()
        try:
            threads = con.execute("select current_setting('threads')").fetchone()
        finally:
            con.close()
    assert threads == (1,)


@pytest.mark.parametrize(
    "args",
    [("run", "--lake", "{lake}"), ("ingest", "x.jsonl"), ("query", "select 1"), ("check",)],
)
def test_a_bad_setting_exits_2_on_one_line_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    monkeypatch.setenv(MAX_DEPTH_ENV, "lots")
    lake = tmp_path / "lake"
    done = pipeline(*(a.format(lake=lake) for a in args))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"bad setting: {MAX_DEPTH_ENV}='lots': expected a whole number from 1 to 100000"
    ]
    assert not lake.exists()


def test_docs_settings_md_is_generated_from_the_declarations() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert with_table(text, declared()) == text, "run: python -m tools.settings_docs --write"
    assert table(declared()) in text


def test_every_setting_is_documented_and_every_documented_variable_exists() -> None:
    names = {s.env for s in declared()}
    documents = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    named = {v for doc in documents for v in VARIABLE.findall(doc.read_text(encoding="utf-8"))}
    assert named - names - set(TEST_HOOKS) == set(), "documented but not declared"
    in_settings_md = set(VARIABLE.findall(DOCS.read_text(encoding="utf-8")))
    assert names - in_settings_md == set(), "declared but not in docs/settings.md"


def test_the_pipeline_reads_no_variable_that_is_not_declared() -> None:
    source = [p for p in (ROOT / "pipeline").rglob("*.py") if p.name != "settings.py"]
    used = {v for p in source for v in VARIABLE.findall(p.read_text(encoding="utf-8"))}
    assert used - {s.env for s in declared()} - set(TEST_HOOKS) == set()
    readers = [p for p in source if "os.environ" in p.read_text(encoding="utf-8")]
    # The engine's PYSPARK_PYTHON and the terminal's CI are not settings of the pipeline.
    assert {p.relative_to(ROOT).as_posix() for p in readers} <= {
        "pipeline/engines/spark.py",
        "pipeline/cli/progress.py",
        "pipeline/storage/lake.py",
    }
