"""history's note on versions a reader may take for one (render._look_alikes)."""

from __future__ import annotations

import pytest

from pipeline.compare import render, text

COMPOSED, DECOMPOSED = "\u00e9", "e\u0301"  # é in NFC, and in NFD


def test_each_pair_told_apart_only_by_what_a_screen_hides_is_named_in_history_order() -> None:
    versions = ["1.2", "2.0", "1.2 ", "Ｖ", "2.0\t", "1.3", COMPOSED, DECOMPOSED, "1.2\n"]
    notes = [str(note) for note in render._look_alikes(versions)]
    assert notes == [
        "note: '1.2' and '1.2 ' are two versions, told apart only by surrounding whitespace",
        "note: '2.0' and '2.0\\t' are two versions, told apart only by surrounding whitespace",
        f"note: {COMPOSED!r} and {DECOMPOSED!r} are two versions, told apart only by Unicode "
        "normalization",
        "note: '1.2' and '1.2\\n' are two versions, told apart only by surrounding whitespace",
        "note: '1.2 ' and '1.2\\n' are two versions, told apart only by surrounding whitespace",
    ]


def test_versions_that_cannot_look_alike_are_never_compared(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An agent with thousands of versions (a build a commit): comparing every pair took
    # 1.9 s at 2,000 versions and grew with the square of them. Only names with the same
    # form once every hidden difference is taken out are compared.
    calls: list[tuple[str, str]] = []
    real = text.invisible_differences

    def counted(one: str, other: str) -> str:
        calls.append((one, other))
        return real(one, other)

    monkeypatch.setattr(render, "invisible_differences", counted)
    versions = [f"v1.{n}" for n in range(500)] + ["V1.7"]
    notes = [str(note) for note in render._look_alikes(versions)]
    assert notes == ["note: 'v1.7' and 'V1.7' are two versions, told apart only by letter case"]
    assert calls == [("v1.7", "V1.7")]
