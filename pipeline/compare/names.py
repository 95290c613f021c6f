"""The names a comparison gives rows of its own, which no data may take."""

from __future__ import annotations

from typing import Final

# The env_type of the row over every env type together: compare's overall numbers and
# version_regressions' `all` row. An env type of that name would be a second row with the
# same key, so the rubric refuses a [task.all] table.
ALL_ENV_TYPES: Final = "all"
