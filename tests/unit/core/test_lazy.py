"""The lazy re-exports: every exported name loads from the module it is filed under."""

from __future__ import annotations

import importlib

import pytest

from pipeline.core.lazy import by_name


def test_by_name_files_each_name_under_its_module() -> None:
    homes = by_name({"batch": ("Batch", "build_batch"), "dedupe": ("Deduped",)})
    assert homes == {"Batch": "batch", "build_batch": "batch", "Deduped": "dedupe"}


@pytest.mark.parametrize(
    "package",
    [
        "pipeline.cli",
        "pipeline.compare",
        "pipeline.ingest",
        "pipeline.jobs",
        "pipeline.sources",
        "pipeline.storage",
        "pipeline.surface",
        "pipeline.tasks",
    ],
)
def test_every_exported_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    # A literal __all__ (kept for the type checkers' imports) names exactly what loads lazily.
    assert sorted(module.__all__) == sorted(module._HOMES)
    # A name its module shares (pipeline.jobs.prepare) is the module once that is imported.
    for name in (n for n in module.__all__ if n != module._HOMES[n]):
        assert getattr(module, name) is getattr(
            importlib.import_module(f"{package}.{module._HOMES[name]}"), name
        )
