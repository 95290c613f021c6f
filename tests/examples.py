"""How many examples a property test runs, and how large a generated input is, per profile.

``examples(full)``: ``full`` under the default profile (``make test``), a tenth of it (at
least two) under ``fast`` (``make test-fast``), four times it under ``soak`` (``make
test-soak``). The default counts are sized to prove each property in seconds; ``soak`` runs
at least the counts they were cut down from. ``sized(default, soak)``: a generated input's
size (lines, runs, elements), the larger one under ``soak`` only. The profiles are
registered in conftest.py; both helpers are read when a test module is imported, after
pytest has loaded the profile.
"""

from __future__ import annotations

from typing import Final

from hypothesis import settings

# Hypothesis' own default; the default profile keeps it, so a test's full count stands.
FULL_EXAMPLES: Final = 100
FAST_EXAMPLES: Final = 10
SOAK_EXAMPLES: Final = 4 * FULL_EXAMPLES
SOAK_PROFILE: Final = "soak"


def examples(full: int) -> int:
    """``full`` scaled by the loaded profile."""
    return max(2, full * settings.default.max_examples // FULL_EXAMPLES)


def sized(default: int, soak: int) -> int:
    """``soak`` under the soak profile, ``default`` otherwise."""
    return soak if settings.get_current_profile_name() == SOAK_PROFILE else default
