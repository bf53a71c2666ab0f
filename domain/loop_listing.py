"""The loop registry as `controlroom loops` and `GET /api/loops` list it, and the next loop
proposed when a loop run has ended (issue 27, items 5 and 7).

Both are read from tier 1 (domain/loop_registry.py), itself generated from the workspace's
recipe catalog: nothing here is written by hand. Whether this install has what a loop
needs comes from `CONTROLROOM_CAPABILITIES` (domain/capabilities.py), passed in as `env`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field

from controlroom.domain.errors import BadInputError, RunStateError
from controlroom.domain.loop_registry import (
    approx_tokens,
    full_definitions_text,
    missing_needs,
    needs_of,
    propose_next,
    registry,
    tier1_text,
)
from controlroom.domain.recipe import Recipe
from controlroom.domain.router import route
from controlroom.domain.run import Run


class LoopListed(BaseModel):
    """One loop of the catalog: its tier 1 entry, and whether this install can run it."""

    name: str
    recipe_id: str
    purpose: str
    typical_inputs: list[str]
    typical_outputs: list[str]
    scope: str = Field(description="what the loop may change, in words")
    often_follows: list[str]
    often_precedes: list[str]
    needs: list[str] = Field(description="capabilities beyond text models the loop needs")
    missing: list[str] = Field(
        description="the needs this install lacks (`CONTROLROOM_CAPABILITIES`)"
    )
    available: bool = Field(description="this install has every capability the loop needs")


class LoopsListing(BaseModel):
    """The registry, with its size against the loops' full definitions (approx tokens,
    about four characters a token): what tier 1 saves a Showrunner turn."""

    loops: list[LoopListed]
    tier1_tokens: int
    full_tokens: int


def _strings(entry: Mapping[str, object], field: str) -> list[str]:
    value = entry.get(field)
    return [str(v) for v in value] if isinstance(value, list) else []


def listing(recipes: Sequence[Recipe], env: Mapping[str, str]) -> LoopsListing:
    found = registry(recipes)
    lacking = missing_needs(found, env)
    loops = [
        LoopListed(
            name=name,
            recipe_id=str(entry["recipe"]),
            purpose=str(entry["purpose"]),
            typical_inputs=_strings(entry, "typical_inputs"),
            typical_outputs=_strings(entry, "typical_outputs"),
            scope=str(entry["scope"]),
            often_follows=_strings(entry, "often_follows"),
            often_precedes=_strings(entry, "often_precedes"),
            needs=needs_of(entry),
            missing=lacking[name],
            available=not lacking[name],
        )
        for name, entry in found.items()
    ]
    return LoopsListing(
        loops=loops,
        tier1_tokens=approx_tokens(tier1_text(recipes)),
        full_tokens=approx_tokens(full_definitions_text(recipes)),
    )


class ProposedLoop(BaseModel):
    loop: str
    recipe_id: str
    reason: str
    #: An intent the router sends to the loop's recipe, for a session plan.
    intent: str | None
    #: The command that plans it: session plans cannot take a task once made, so accepting
    #: the proposal is planning it (or running its recipe, when no pattern routes to it).
    command: str


class NextLoop(BaseModel):
    """What the (offline) Showrunner proposes once a loop run has ended."""

    run_id: str
    loop: str
    ending: str
    proposal: ProposedLoop | None
    #: Why nothing is proposed, when nothing is.
    note: str | None = None


def loop_ending(run: Run) -> str | None:
    """How the run's loop ended (stable, capped), from its last `end` decision."""
    for decision in reversed(run.decisions):
        loop = decision.loop or {}
        if loop.get("kind") == "end":
            return str(loop.get("ending") or "ended")
    return None


def plan_intent(recipe: Recipe, recipes: Sequence[Recipe]) -> str | None:
    """The recipe's first task pattern the router sends to it (a plan's task is routed)."""
    for pattern in recipe.task_patterns:
        if pattern.startswith("/"):
            continue  # a regex is no words a user would type
        if route(pattern, recipes).recipe_id == recipe.recipe_id:
            return pattern
    return None


def _quoted(text: str) -> str:
    """`text` in double quotes, as a POSIX shell reads it back."""
    return '"' + re.sub(r'(["\\$`])', r"\\\1", text) + '"'


def next_loop(run: Run, recipes: Sequence[Recipe], env: Mapping[str, str]) -> NextLoop:
    """The next loop proposed after `run`'s loop ended (BadInputError when the run runs no
    loop, RunStateError while its loop has not ended)."""
    spec = run.recipe.loop if run.recipe is not None else None
    if spec is None:
        recipe_id = run.recipe.recipe_id if run.recipe is not None else "?"
        raise BadInputError(f"run '{run.id}' runs no loop (its recipe is '{recipe_id}')")
    ending = loop_ending(run) if run.is_finished else None
    if ending is None:
        raise RunStateError(
            run.id, run.status.value, "propose the next loop: its loop has not ended"
        )
    found = registry(recipes)
    proposed = propose_next(found, spec.name, ending, missing_needs(found, env))
    if proposed is None:
        return NextLoop(
            run_id=run.id,
            loop=spec.name,
            ending=ending,
            proposal=None,
            note=(
                f"no next loop proposed: none of {spec.name}'s often_precedes "
                f"({', '.join(spec.often_precedes) or 'none'}) is a loop of this catalog this "
                "install can run, and no such loop lists it in often_follows"
            ),
        )
    name, reason = proposed
    recipe_id = str(found[name]["recipe"])
    recipe = next(r for r in recipes if r.recipe_id == recipe_id)
    intent = plan_intent(recipe, recipes)
    command = (
        f"controlroom plan create {_quoted(intent)}"
        if intent is not None
        else f"controlroom run {recipe_id}"
    )
    return NextLoop(
        run_id=run.id,
        loop=spec.name,
        ending=ending,
        proposal=ProposedLoop(
            loop=name, recipe_id=recipe_id, reason=reason, intent=intent, command=command
        ),
    )
