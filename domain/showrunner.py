"""The `showrunner` step kind: a loop's decide step (seed 003).

Each turn of an adaptive loop runs it: the Showrunner is shown the loop registry (tier 1),
the active loop's library and state (tier 2) and the steps code allows now, and answers
under the `showrunner_turn` contract. A reply naming a step outside the allowed set, a role
the step does not allow, or "stable" while the criteria do not hold is refused with its
errors and asked again (the contract's retries, each recorded); the flow then reads the
accepted reply from the step's slot, with the candidates and each tier's sha256 beside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field

from controlroom.domain.steps import STEP_KINDS, AgentStep, Phase

SHOWRUNNER_ROLE = "showrunner"
SHOWRUNNER_PROMPT = "showrunner_turn"


class ShowrunnerStep(AgentStep):
    """A loop's decide step: asks the Showrunner which library step runs next."""

    default_phase: ClassVar[Phase | None] = None
    phases: ClassVar[tuple[Phase, ...] | None] = ("b",)
    kind: Literal["showrunner"] = "showrunner"  # type: ignore[assignment]
    agent_archetype: str = Field(default=SHOWRUNNER_ROLE, min_length=1)
    prompt_type: str = Field(default=SHOWRUNNER_PROMPT, min_length=1)


STEP_KINDS.register(ShowrunnerStep)


def choice_errors(
    reply: Any,
    candidates: Sequence[str],
    roles: Mapping[str, Sequence[str]],
    pending_role: str | None,
    stable_now: bool,
) -> list[str]:
    """What is wrong with a Showrunner's reply, given what code allows now: `candidates`
    (step ids), the roles each may be woken as, the role a pending collaboration asks
    for (None: no collaboration waits) and whether the criteria hold."""
    if not isinstance(reply, Mapping):
        return ["the reply is not a JSON object"]
    errors: list[str] = []
    choice = reply.get("next")
    shown = ", ".join(candidates) or "none"
    if choice == "stable":
        if not stable_now:
            errors.append(
                "'stable' is judged from the loop's criteria, and they do not all hold yet: "
                f"choose one of the allowed steps ({shown})"
            )
    elif choice == "ask_person":
        pass
    elif choice not in candidates:
        errors.append(f"next step {choice!r} is not allowed now; allowed: {shown}")
    else:
        role = reply.get("role")
        allowed = list(roles.get(str(choice), ()))
        if role not in (None, "") and role not in allowed:
            errors.append(f"role {role!r} may not run '{choice}'; its roles: {', '.join(allowed)}")
    collaboration = reply.get("collaboration")
    if pending_role is not None and collaboration not in ("approve", "deny"):
        errors.append(
            f"a collaboration with '{pending_role}' waits for an answer: "
            "set collaboration to approve or deny"
        )
    if pending_role is None and collaboration not in (None, ""):
        errors.append("no collaboration was asked for: leave collaboration null")
    return errors
