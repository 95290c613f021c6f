"""Where the tests' real inputs live: inside the repository (tests/fixtures/README.md says
where they came from), so a clone anywhere runs the whole suite. Test files sit at different
depths (tests/unit/<subpackage>/, tests/e2e/), so they locate files through these names."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
REAL_REPORTS = FIXTURES / "mcp-xray"
GENERATED_REPORTS = FIXTURES / "mcp-xray-generated"
