"""Which ladder each step of a run climbs, resolved when the run starts and recorded then.

A recipe step's own `ladder` wins; else its role's in models.json (`escalation`,
`consult`, `synthesizer`, `triage`, `owner`). Every model a ladder names must be served by
a configured provider: a model that is not is an error naming it before the run starts,
never a silent default (seed 002).
"""

from __future__ import annotations

from controlroom.domain.errors import ModelConfigError
from controlroom.domain.ladder_spec import Ladder, Triage
from controlroom.domain.recipe import Recipe
from controlroom.domain.steps import AgentStep
from controlroom.models.agents import AgentDirectory
from controlroom.models.config import RoleConfig


def role_ladder(role: RoleConfig) -> Ladder | None:
    if not role.has_ladder():
        return None
    triage = role.triage
    return Ladder(
        chain=[f"{c.provider}:{c.model}" for c in role.escalation],
        consult=[f"{c.provider}:{c.model}" for c in role.consult],
        synthesizer=f"{role.synthesizer.provider}:{role.synthesizer.model}"
        if role.synthesizer
        else None,
        triage=Triage(
            model=f"{triage.provider}:{triage.model}",
            min_confidence=triage.min_confidence,
            max_relax_per_run=triage.max_relax_per_run,
            max_defer_per_run=triage.max_defer_per_run,
        )
        if triage
        else None,
        owner=role.owner or "user",
    )


def resolve_ladders(agents: AgentDirectory, recipe: Recipe) -> dict[str, Ladder]:
    """The ladder of each agent step that has one, with the model it starts on."""
    ladders: dict[str, Ladder] = {}
    for step in recipe.steps:
        if not isinstance(step, AgentStep):
            continue
        role = agents.role(step.agent_archetype)
        ladder = step.ladder or role_ladder(role)
        if ladder is None:
            continue
        base = f"{role.provider}:{role.model}"
        for model in ladder.models():
            try:
                agents.check_model(model)
            except ModelConfigError as exc:
                raise ModelConfigError(
                    f"recipe '{recipe.recipe_id}' step '{step.step_id}': its escalation "
                    f"ladder names {model}, which cannot be served: {exc}"
                ) from None
        ladders[step.step_id] = ladder.model_copy(update={"base": base})
    return ladders
