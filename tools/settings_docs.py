"""docs/settings.md's table of settings, generated from pipeline/core/settings.py.

python -m tools.settings_docs            print the table
python -m tools.settings_docs --write    write it into docs/settings.md
python -m tools.settings_docs --check    exit 1 when docs/settings.md is not up to date
"""

from __future__ import annotations

import sys
from pathlib import Path

from pipeline.core.settings import Declared, declared
from tools.generated import with_generated

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "settings.md"
BEGIN = "<!-- settings: generated from pipeline/core/settings.py by tools/settings_docs.py -->"
END = "<!-- end of the settings -->"


def table(settings: list[Declared]) -> str:
    """One row a setting, in the order they are declared."""
    rows = [
        "| variable | default | largest | unit | flag | why |",
        "|---|---|---|---|---|---|",
    ]
    rows += [_row(s) for s in settings]
    return "\n".join(rows) + "\n"


def _row(setting: Declared) -> str:
    flag = f"`{setting.flag}`" if setting.flag else ""
    why = setting.why.replace("|", "\\|")
    return (
        f"| `{setting.env}` | {setting.default} | {setting.largest} | {setting.unit} | {flag} "
        f"| {why} |"
    )


def with_table(text: str, settings: list[Declared]) -> str:
    """``text`` (docs/settings.md) with the part between the markers generated anew."""
    return with_generated(text, BEGIN, END, table(settings), DOCS.name)


def main(argv: list[str]) -> int:
    if not argv:
        sys.stdout.write(table(declared()))
        return 0
    if argv not in (["--write"], ["--check"]):
        print(__doc__, file=sys.stderr)
        return 2
    current = DOCS.read_text(encoding="utf-8")
    wanted = with_table(current, declared())
    if argv == ["--write"]:
        DOCS.write_text(wanted, encoding="utf-8")
    elif current != wanted:
        print(f"{DOCS} is stale: run python -m tools.settings_docs --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
