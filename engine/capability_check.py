"""Refusing a loop this install cannot run (seed 003).

A loop recipe may declare capabilities beyond text models in its `needs` (image
generation, speech synthesis). A run started from such a recipe, named or routed, through
`controlroom run` or `POST /api/runs`, is refused here when the install lacks one (the
operator names what it has in `CONTROLROOM_CAPABILITIES`, see domain/capabilities.py):
a bad-input error (exit 64, HTTP 400) naming what is missing, before any event is
recorded and so before any step runs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from controlroom.domain.capabilities import CAPABILITIES_VAR, missing
from controlroom.domain.errors import BadInputError
from controlroom.domain.recipe import Recipe


class MissingCapabilityError(BadInputError):
    def __init__(self, recipe_id: str, lacking: Sequence[str]) -> None:
        self.recipe_id = recipe_id
        self.lacking = list(lacking)
        names = ", ".join(self.lacking)
        super().__init__(
            f"recipe '{recipe_id}' needs {names}, which this install lacks "
            f"(an install that has it says so in {CAPABILITIES_VAR}, e.g. "
            f"{CAPABILITIES_VAR}={self.lacking[0]})"
        )


def check_capabilities(recipe: Recipe, env: Mapping[str, str] | None = None) -> None:
    """Raise `MissingCapabilityError` when the recipe's loop needs what this install lacks."""
    needs = recipe.loop.needs if recipe.loop is not None else []
    lacking = missing(needs, os.environ if env is None else env)
    if lacking:
        raise MissingCapabilityError(recipe.recipe_id, lacking)
