"""A T1 agent's micro-calls around its finding: triage before, evidence after.

Seed 000, "Tier-Based Step Sizing": a small, fast model gets tiny constrained prompts, one
decision each. The recipe does not change; the tier in the agent's configuration does.
Triage decides what the output must rest on, or abstains (the step then fails with the
agent's reason rather than a guess); evidence cites the input the finding rests on, and
the citation is checked against what the step was really shown (`domain/micro_steps.py`).
"""

from __future__ import annotations

import time
from dataclasses import replace

from controlroom.domain.canonical import sha256_text
from controlroom.domain.errors import ModelError
from controlroom.domain.micro_steps import check_evidence, read_triage
from controlroom.domain.outcomes import AbstentionReport, AgentFacts, MicroStep
from controlroom.domain.run import Run
from controlroom.domain.steps import AgentStep
from controlroom.engine.context import Context
from controlroom.engine.model_call import AttemptObserver, ModelCall, cost_of
from controlroom.models.agents import AgentProfile
from controlroom.models.port import ModelRequest

#: The bundled prompt types of the two micro-calls (t1 only: they exist for small models).
STEP_TRIAGE = "step_triage"
STEP_EVIDENCE = "step_evidence"


class AgentAbstainedError(ModelError):
    """A T1 agent's triage found the step's inputs insufficient and said why."""

    def __init__(self, step_id: str, agent: str, reason: str) -> None:
        self.step_id, self.agent, self.reason = step_id, agent, reason
        super().__init__(f"agent '{agent}' (T1) abstained at triage of step '{step_id}': {reason}")


class MicroSteps:
    def __init__(
        self,
        ctx: Context,
        run: Run,
        step: AgentStep,
        profile: AgentProfile,
        report: AttemptObserver | None,
    ) -> None:
        self.ctx, self.run, self.step, self.profile, self.report = ctx, run, step, profile, report
        entry = ctx.prompts.entries.get(step.prompt_type)
        label = entry.label if entry is not None and entry.label else step.prompt_type
        self.purpose = (
            f"{label} (prompt type `{step.prompt_type}`, agent `{step.agent_archetype}`, "
            f"writes slot `{step.output_slot}`)"
        )

    async def triage(self, shown: dict[str, str]) -> MicroStep:
        micro = await self._call("triage", STEP_TRIAGE, {"step_purpose": self.purpose, **shown})
        decision = read_triage(micro.output)
        if decision.decision == "abstain":
            if self.report is not None:
                agent = AgentFacts(
                    self.profile.agent_id,
                    self.profile.tier,
                    self.profile.provider,
                    self.profile.model,
                )
                self.report(AbstentionReport(replace(micro, decision="abstain"), agent))
            raise AgentAbstainedError(self.step.step_id, self.step.agent_archetype, decision.text)
        return replace(micro, decision="focus")

    async def evidence(self, shown: dict[str, str], finding: str) -> MicroStep:
        slots = {"step_purpose": self.purpose, "finding": finding, **shown}
        micro = await self._call("evidence", STEP_EVIDENCE, slots)
        checked = check_evidence(micro.output, {"task": self.run.task.description, **shown})
        return replace(micro, verified=checked.verified, problem=checked.problem)

    async def _call(self, name: str, prompt_type: str, slots: dict[str, str]) -> MicroStep:
        ctx, profile = self.ctx, self.profile
        rendered = ctx.prompts.render(prompt_type, "t1", self.run.task.description, slots)
        request = ModelRequest(
            provider=profile.provider,
            model=profile.model,
            tier=profile.tier,
            agent_archetype=self.step.agent_archetype,
            prompt_type=prompt_type,
            prompt=rendered.user,
            inputs=rendered.inputs,
            task_description=self.run.task.description,
            params=profile.params,
            system=rendered.system,
        )
        policy = ctx.agents.provider_config(profile.provider)
        client = ctx.agents.client(profile.provider)
        call = ModelCall(ctx, self.step, profile, client, policy, self.report, None)
        started = time.perf_counter()
        response, sent = await call.reply(request)
        return MicroStep(
            name=name,
            prompt_type=prompt_type,
            prompt_variant=rendered.variant,
            prompt_hash="sha256:" + sha256_text(rendered.text),
            output=response.text,
            usage=response.usage,
            latency_ms=round((time.perf_counter() - started) * 1000, 3),
            attempts=call.attempt,
            cost_usd=cost_of(policy.prices.get(profile.model), response.usage),
            request=sent,
        )
