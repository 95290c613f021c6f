"""The HTML page: self-contained, escaped, and its charts render in headless Chromium."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.compare import compare_versions
from pipeline.compare.html import escape_expr, render_comparison
from tests.compare_sim import empty_metadata, simulate
from tests.examples import examples

EVIL = '<script>alert("x")</script>&\''


def _page() -> tuple[str, int]:
    runs, comps = simulate(
        seed=2, n_problems=24, versions={"1.0": 0.0, EVIL: {"exploit": -0.2, "patch": 0.1}}
    )
    # a problem id from data that tries to break out of the markup
    runs = runs.with_columns(
        problem_id=pl.when(pl.col("problem_id") == "p0000")
        .then(pl.lit(EVIL))
        .otherwise(pl.col("problem_id"))
    )
    result = compare_versions(
        runs, comps, empty_metadata(), agent="sim-agent", baseline="1.0", candidate=EVIL
    )
    return render_comparison(result.report, result.pairs), result.pairs.height


@settings(max_examples=examples(100), deadline=None)
@given(st.text())
def test_escape_expr_matches_html_escape(text: str) -> None:
    got = pl.DataFrame({"s": [text]}).select(escape_expr(pl.col("s")))["s"].item()
    assert got == html.escape(text, quote=True)


def test_page_is_self_contained_and_escaped() -> None:
    page, n = _page()
    assert "<script" not in page  # the evil names arrive only escaped
    assert html.escape(EVIL, quote=True) in page
    assert not re.search(r"(src|href)\s*=", page)  # nothing to fetch
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page
    assert page.count('<circle class="pt"') == n
    assert '<svg id="env-chart"' in page and '<svg id="scatter"' in page
    assert '<table id="regressed"' in page


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    if Path("/usr/bin/chromium").exists():
        return "/usr/bin/chromium"
    pytest.skip("chromium not installed: `apt-get install -y chromium` (.ci/run does) to run it")


@pytest.mark.slow
@pytest.mark.chromium
def test_page_renders_in_headless_chromium_with_its_charts(tmp_path: Path) -> None:
    browser = _chromium()
    page, n = _page()
    target = tmp_path / "compare.html"
    target.write_text(page, encoding="utf-8")
    profile = tmp_path / "profile"
    proc = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--dump-dom",
            target.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    # The parsed DOM holds the charts as SVG elements, not as text.
    assert re.search(r'<svg[^>]*id="env-chart"', dom)
    assert re.search(r'<svg[^>]*id="scatter"', dom)
    assert len(re.findall(r'<circle[^>]*class="pt"', dom)) == n
    # overall + 4 env types, each with a point and an interval bar
    assert len(re.findall(r'<circle[^>]*class="delta"', dom)) == 5
    assert len(re.findall(r'<line[^>]*class="ci"', dom)) == 5
    assert re.search(r'<table[^>]*id="regressed"', dom)
    # the evil names stayed text: no script element was created
    assert "<script" not in dom


def test_a_small_p_value_reads_as_small_not_as_zero() -> None:
    from pipeline.compare.text import p_value

    assert [p_value(v) for v in (0.5, 0.001, 7.5e-6, 0.0, None)] == [
        "0.5000",
        "0.0010",
        "7.5e-06",
        "0.0000",
        "–",
    ]
    # The per-env-type table of the page keeps four significant digits.
    runs, comps = simulate(seed=3, n_problems=60, versions={"1.0": 0.0, "2.0": -0.3})
    report = compare_versions(
        runs, comps, empty_metadata(), agent="sim-agent", baseline="1.0", candidate="2.0"
    ).report
    small = [row["p_value"] for row in report["per_env_type"] if row["p_value"] < 1e-4]
    assert small, "the simulation should give a strong regression somewhere"
    page = render_comparison(report, pl.DataFrame())
    table = page.split('id="per-env"', 1)[1].split("</table>", 1)[0]
    shown = pl.select(pl.lit(small[0]).round_sig_figs(4).cast(pl.String)).item()
    assert float(shown) > 0 and f"<td>{shown}</td>" in table
