"""How many examples a property test runs: its full count under the default profile, a
tenth of it (at least two) under the ``fast`` profile that ``make test-fast`` selects
(``--hypothesis-profile=fast``, registered in conftest.py). ``make test`` runs them all."""

from __future__ import annotations

from typing import Final

from hypothesis import settings

# Hypothesis' own default; the default profile keeps it, so a test's full count stands.
FULL_EXAMPLES: Final = 100
FAST_EXAMPLES: Final = 10


def examples(full: int) -> int:
    """``full`` scaled by the loaded profile (read when a test module is imported, after
    pytest has loaded the profile)."""
    return max(2, full * settings.default.max_examples // FULL_EXAMPLES)
