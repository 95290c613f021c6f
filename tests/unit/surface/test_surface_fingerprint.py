"""The SARIF fingerprint of a surface finding: its match key written as one string, unchanged for
keys whose parts hold no separator, and never the same for two different keys."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pipeline.surface.diff import fingerprint


def _key(kind: str, tools: list[str] | None, identity: str, occurrence: int) -> dict[str, Any]:
    return {"kind": kind, "match_tools": tools, "identity": identity, "occurrence": occurrence}


def test_plain_parts_join_as_before() -> None:
    # the fingerprint every alert already has: parts joined by | and tools by ,
    key = _key("merge_candidate", ["a", "b"], "", 1)
    assert fingerprint(key) == "merge_candidate|a,b||1"
    smell = _key("schema_smell", ["c"], "smell=vague_description", 2)
    assert fingerprint(smell) == "schema_smell|c|smell=vague_description|2"


def test_whole_surface_has_no_tools() -> None:
    assert fingerprint(_key("jit_candidate", [], "", 1)) == "jit_candidate|||1"
    assert fingerprint(_key("jit_candidate", None, "", 1)) == "jit_candidate|||1"


def test_separators_inside_a_part_are_escaped() -> None:
    assert fingerprint(_key("duplicate", ["a,b"], "", 1)) == "duplicate|a\\,b||1"
    assert fingerprint(_key("duplicate", ["a", "b"], "", 1)) == "duplicate|a,b||1"
    assert fingerprint(_key("k|x", ["t"], "mode=a|b", 1)) == "k\\|x|t|mode=a\\|b|1"
    assert fingerprint(_key("k", ["a\\"], "", 1)) == "k|a\\\\||1"
    assert fingerprint(_key("k", [""], "", 1)) == "k|\\0||1"


def test_collisions_of_the_plain_join_are_told_apart() -> None:
    pairs = [
        (_key("k", ["a,b"], "", 1), _key("k", ["a", "b"], "", 1)),
        (_key("k", ["a|b"], "", 1), _key("k", ["a"], "b", 1)),
        (_key("k", ["a\\", "b"], "", 1), _key("k", ["a\\,b"], "", 1)),
        (_key("k", [""], "", 1), _key("k", [], "", 1)),
        (_key("k", ["", ""], "", 1), _key("k", [""], "", 1)),
    ]
    for one, other in pairs:
        assert fingerprint(one) != fingerprint(other)


_text = st.text(alphabet="ab,|\\0", max_size=4)


@given(
    st.tuples(_text, st.lists(_text, max_size=3), _text, st.integers(1, 3)),
    st.tuples(_text, st.lists(_text, max_size=3), _text, st.integers(1, 3)),
)
def test_different_keys_have_different_fingerprints(
    one: tuple[str, list[str], str, int], other: tuple[str, list[str], str, int]
) -> None:
    if one != other:
        assert fingerprint(_key(*one)) != fingerprint(_key(*other))
