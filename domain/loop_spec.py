"""A loop (seed 003): a recipe whose phase B is a step library a Showrunner chooses from.

The structure is data and is enforced in code: which steps exist (each with its
recommended role, the roles that may stand in, what it requires and produces), which must
run, the typical flow, when the loop is stable (criteria judged over slots, never the
Showrunner's opinion), its caps, and its scope (the slots and workspace paths it may
change). The Showrunner only chooses among the steps code allows (`domain/loops.py`).

The registry fields (purpose, typical inputs and outputs, scope summary, often follows /
precedes) make the compact "tier 1" context every Showrunner turn is shown; the loop's
own library and state are "tier 2".
"""

from __future__ import annotations

import fnmatch
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

#: Bounds on a loop's caps (a recipe may ask for less, never for more).
MAX_ITERATIONS_CAP = 50
MAX_REPEATS_CAP = 10
STALL_LIMIT_CAP = 10


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LibraryStep(_Frozen):
    """One step of the loop's library: a phase B agent step of the recipe, by id."""

    step: str = Field(min_length=1, description="The recipe step's `step_id`.")
    description: str = Field(min_length=1)
    recommended_role: str | None = Field(
        default=None,
        min_length=1,
        description="The role the playbook recommends (the agent step's own role).",
    )
    #: Other roles the Showrunner may wake for this step instead.
    roles: list[str] = Field(default_factory=list)
    #: Slots that must be written before the step may run.
    requires: list[str] = Field(default_factory=list)
    #: The slots the step writes (its output slot), all inside the loop's scope.
    produces: list[str] = Field(min_length=1)
    can_iterate: bool = True
    #: A gatekeeper step: its output is a verdict (PASS, or FAIL with findings naming the
    #: step to go back to) that the stabilization criteria and the Showrunner read.
    gate: bool = False

    def allowed_roles(self) -> list[str]:
        if self.recommended_role is None:
            return []
        return [self.recommended_role, *[r for r in self.roles if r != self.recommended_role]]


class GatePassed(_Frozen):
    """The gate step's latest verdict is PASS, given after the latest work step ran."""

    check: Literal["gate_passed"]
    gate: str = Field(min_length=1)


class NoBlockingFindings(_Frozen):
    """The slot's findings (`field`, a list) hold nothing blocking: empty, or every item
    marked `"blocking": false`."""

    check: Literal["no_blocking_findings"]
    slot: str = Field(min_length=1)
    field: str = "findings"


class UnchangedSinceLastPass(_Frozen):
    """The slot was written at least twice and its latest write equals the one before:
    the last pass over it changed nothing."""

    check: Literal["unchanged_since_last_pass"]
    slot: str = Field(min_length=1)


class DodHolds(_Frozen):
    """The recipe's Definition of Done checks over slots all hold now."""

    check: Literal["dod_holds"]


Criterion = Annotated[
    GatePassed | NoBlockingFindings | UnchangedSinceLastPass | DodHolds,
    Field(discriminator="check"),
]


def criterion_name(criterion: Criterion) -> str:
    if isinstance(criterion, GatePassed):
        return f"gate_passed:{criterion.gate}"
    if isinstance(criterion, NoBlockingFindings):
        return f"no_blocking_findings:{criterion.slot}"
    if isinstance(criterion, UnchangedSinceLastPass):
        return f"unchanged_since_last_pass:{criterion.slot}"
    return "dod_holds"


class LoopCaps(_Frozen):
    #: Library steps run in all (Showrunner turns are not counted).
    max_iterations: int = Field(default=12, ge=1, le=MAX_ITERATIONS_CAP)
    max_repeats_per_step: int = Field(default=3, ge=1, le=MAX_REPEATS_CAP)
    #: Turns in a row without one more criterion holding before the loop is stalled.
    stall_limit: int = Field(default=3, ge=1, le=STALL_LIMIT_CAP)


class LoopScope(_Frozen):
    """What the loop may change: slots it writes and workspace paths (globs) it may write.
    `forbidden` globs win over `paths` (Style Tune-up: `Story/Outline/**`)."""

    summary: str = Field(min_length=1)
    slots: list[str] = Field(default_factory=list)
    paths: list[str] = Field(default_factory=list)
    forbidden: list[str] = Field(default_factory=list)
    #: What the loop must not do, in words (shown to the Showrunner in tier 2).
    cannot: list[str] = Field(default_factory=list)

    def path_problem(self, path: str) -> str | None:
        """Why writing `path` (workspace-relative, forward slashes) is outside the scope;
        None when it is inside."""
        for pattern in self.forbidden:
            if fnmatch.fnmatch(path, pattern):
                return f"'{path}' is outside the loop's scope (forbidden: {pattern})"
        if not any(fnmatch.fnmatch(path, pattern) for pattern in self.paths):
            allowed = ", ".join(self.paths) or "no workspace path"
            return f"'{path}' is outside the loop's scope (it may write: {allowed})"
        return None


class LoopSpec(_Frozen):
    """A loop recipe's structure (seed 003)."""

    name: str = Field(min_length=1, pattern=r"^[a-z0-9_]+$")
    purpose: str = Field(min_length=1)
    typical_inputs: list[str] = Field(default_factory=list)
    typical_outputs: list[str] = Field(default_factory=list)
    often_follows: list[str] = Field(default_factory=list)
    often_precedes: list[str] = Field(default_factory=list)
    #: The recipe step (kind `showrunner`) that asks the Showrunner at each turn.
    decider: str = Field(min_length=1)
    library: list[LibraryStep] = Field(min_length=1)
    #: The recipe step (an agent step) an approved collaboration runs as, woken as the
    #: role the requester asked for; unset, every collaboration request is denied.
    collaborator: str | None = None
    required_steps: list[str] = Field(default_factory=list)
    typical_flow: list[str] = Field(min_length=1)
    stabilization: list[Criterion] = Field(min_length=1)
    caps: LoopCaps = LoopCaps()
    scope: LoopScope
    #: Capabilities the loop's steps need beyond text models (image generation, speech):
    #: a loop whose needs this install lacks is declared, listed and refused when routed.
    needs: list[str] = Field(default_factory=list)

    def library_step(self, step_id: str) -> LibraryStep | None:
        return next((s for s in self.library if s.step == step_id), None)

    def registry_entry(self) -> dict[str, object]:
        """Tier 1: what every Showrunner turn knows of this loop."""
        entry: dict[str, object] = {
            "purpose": self.purpose,
            "typical_inputs": self.typical_inputs,
            "typical_outputs": self.typical_outputs,
            "scope": self.scope.summary,
            "often_follows": self.often_follows,
            "often_precedes": self.often_precedes,
        }
        if self.needs:
            entry["needs"] = self.needs
        return entry
