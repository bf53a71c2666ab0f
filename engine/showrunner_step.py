"""The `showrunner` step's performer (`domain/showrunner.py`): one Showrunner turn.

It shows the model tier 1 (the loop registry, from the workspace's loop recipes) and tier
2 (the active loop, `domain/loop_registry.py`) beside the step's own input slots, checks
the reply against what code allows (a refused reply is asked again with its errors, each
attempt recorded), and writes the accepted reply with the candidates and each tier's
sha256 to its slot, where the adaptive flow reads it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from controlroom.domain.adaptive_flow import role_choices
from controlroom.domain.canonical import sha256_text
from controlroom.domain.loop_registry import approx_tokens, render, sha256_of, tier1_text, tier2
from controlroom.domain.loops import last_turn, loop_of
from controlroom.domain.outcomes import AgentOutcome
from controlroom.domain.run import StepInstance
from controlroom.domain.showrunner import ShowrunnerStep, choice_errors
from controlroom.engine.steps import run_agent

if TYPE_CHECKING:  # performers imports this module to register it
    from controlroom.engine.performers import Execution


async def perform_showrunner(execution: Execution, instance: StepInstance) -> AgentOutcome:
    step = instance.step
    assert isinstance(step, ShowrunnerStep)
    run = execution.run
    assert run.recipe is not None
    spec = loop_of(run.recipe)
    asked = last_turn(run.decisions)
    candidates = [str(c) for c in asked.get("candidates") or []]
    pending = asked.get("collaboration_request")
    pending_map = pending if isinstance(pending, Mapping) else None
    tier_1 = tier1_text(execution.ctx.catalog.recipes())
    tier_2 = render(tier2(spec, run.recipe, run.view(), candidates, pending_map))
    roles = role_choices(spec)
    pending_role = str(pending_map["role"]) if pending_map else None

    def check(value: Any) -> list[str]:
        return choice_errors(value, candidates, roles, pending_role, False)

    outcome = await run_agent(
        execution.ctx,
        run,
        step,
        execution.profiles[step.agent_archetype],
        execution.record_attempt,
        extra_inputs={"loop_registry": tier_1, "active_loop": tier_2},
        also_check=check,
        prompt_additions=instance.overrides.prompt_additions,
    )
    stamped = {
        "reply": json.loads(outcome.output),
        "candidates": candidates,
        "tier1_sha256": sha256_of(tier_1),
        "tier2_sha256": sha256_of(tier_2),
        "tier1_tokens": approx_tokens(tier_1),
        "tier2_tokens": approx_tokens(tier_2),
    }
    output = json.dumps(stamped, indent=2, ensure_ascii=False)
    return replace(
        outcome,
        output=output,
        output_sha256=sha256_text(output),
        raw_output=outcome.raw_output if outcome.raw_output is not None else outcome.output,
    )
