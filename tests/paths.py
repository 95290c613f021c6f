"""Where the tests' real inputs live: inside the repository (tests/fixtures/README.md says
where they came from), so a clone anywhere runs the whole suite."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REAL_REPORTS = FIXTURES / "mcp-xray"
GENERATED_REPORTS = FIXTURES / "mcp-xray-generated"
