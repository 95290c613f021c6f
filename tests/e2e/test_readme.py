"""The README and docs/ stand alone: every SQL block runs on the sample warehouse and
returns rows, every TOML block is a rubric the pipeline accepts, every link resolves."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from pipeline.rubric import load_rubric
from pipeline.warehouse.query import run_query
from tests.paths import ROOT

README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks(path: Path, language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(path.read_text("utf-8")) if lang == language]


SQL = [(path, sql) for path in (README, *DOCS) for sql in blocks(path, "sql")]


def test_the_readme_has_the_analysts_questions() -> None:
    readme_sql = blocks(README, "sql")
    assert len(readme_sql) >= 8
    for view in (
        "version_regressions",
        "failure_reasons",
        "by_cwe",
        "wilson_low",
        "cost_per_solved",
        "by_phase",
        "quarantine",
    ):
        assert any(view in sql for sql in readme_sql), view


@pytest.mark.parametrize(
    ("path", "sql"),
    SQL,
    ids=[f"{p.name}:{' '.join(s.split())[:60]}" for p, s in SQL],
)
@pytest.mark.slow
def test_every_sql_block_returns_rows(sample_lake: Path, path: Path, sql: str) -> None:
    results = list(run_query(sample_lake, sql))
    assert results
    for result in results:
        assert result.frame.height > 0, f"{path.name}: no rows from\n{sql}"


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: p.name)
def test_every_toml_block_is_a_rubric_the_pipeline_accepts(path: Path, tmp_path: Path) -> None:
    for toml in blocks(path, "toml"):
        file = tmp_path / "r.toml"
        file.write_text(toml, encoding="utf-8")
        load_rubric(file)


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: p.name)
def test_every_relative_link_resolves(path: Path) -> None:
    text = path.read_text("utf-8")
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if "://" in target:
            continue
        assert (path.parent / target).exists(), f"{path.name} links to missing {target}"


def test_nothing_points_outside_the_repository() -> None:
    # Any path that climbs (`../`) must still land inside the clone, read from its file's folder.
    climbing = re.compile(r"[\w./-]*\.\./[\w./-]*")
    for path in [README, *DOCS, *sorted((ROOT / "rubrics").glob("*"))]:
        for found in climbing.findall(path.read_text("utf-8")):
            target = Path(os.path.normpath(path.parent / found))
            assert target.is_relative_to(ROOT), f"{path.name} points outside: {found}"


def test_the_docs_name_nothing_outside_the_repository() -> None:
    # The contract, the seed documents and the issue tracker are not in a clone: a user reads
    # what they say here, or a link to the document of this repository that holds it.
    outside = re.compile(r"\bcontract\b|\bseed 0\d\d\b|\bissues? \d+\b", re.IGNORECASE)
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in [README, *DOCS]
        for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1)
        if outside.search(line)
    ]
    assert not found, "names what a clone does not hold:\n" + "\n".join(found)


def test_the_readme_keeps_its_promises() -> None:
    text = README.read_text("utf-8")
    assert "## The nightly job" in text
    assert "## Questions analysts ask" in text
    for anchor in re.findall(r"\]\(#([^)]+)\)", text):
        headings = re.findall(r"^#+ (.+)$", text, re.MULTILINE)
        slugs = {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in headings}
        assert anchor in slugs, anchor


def test_no_message_says_refused_twice() -> None:
    for path in sorted((ROOT / "pipeline").rglob("*.py")):
        text = path.read_text("utf-8")
        assert not re.search(r'QueryRefused\(\s*f?"refused', text), path
        assert "refused: refused" not in text, path
