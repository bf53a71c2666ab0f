"""What this install can do beyond text models (image generation, speech, ...): the
capabilities a loop may declare it `needs` (domain/loop_spec.py).

They are named by the operator in `CONTROLROOM_CAPABILITIES`, comma-separated; unset or
empty, the install has none, so a loop that needs anything is listed as unavailable. One
reading of the variable, here, for everything that asks (the loop registry's listing, the
next-loop proposal, the refusal to route a loop this install cannot run).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

CAPABILITIES_VAR = "CONTROLROOM_CAPABILITIES"


def available_capabilities(env: Mapping[str, str]) -> frozenset[str]:
    """The capabilities the operator says this install has (lower case, blanks dropped)."""
    raw = env.get(CAPABILITIES_VAR, "")
    return frozenset(name.strip().lower() for name in raw.split(",") if name.strip())


def missing(needs: Iterable[str], env: Mapping[str, str]) -> list[str]:
    """The needs this install lacks, in the order they are declared."""
    have = available_capabilities(env)
    return [need for need in needs if need.strip().lower() not in have]
