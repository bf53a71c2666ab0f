"""Running a conference round: the Chief's tool loop (phase 1), then every role at once on
the same evidence (phase 2), each reply checked for grounding; a tracked policy closes it.

Phase 1 asks the `chief` role, one call at a time, for the next tool call (or none) under
the `tool_choice` contract; the server enforces the round's allowed tools (a call outside
them is refused and recorded) and, with `require_tool`, asks again until a tool is called
(at most twice). Each call's result is a receipt in the round. Phase 2 runs the roles
concurrently, without tools and without seeing each other; the agent's tier chooses the
decomposition: T1 three micro-calls (triage -> finding -> evidence), T3 one interpretation,
T5 one synthesis with room for extra insight. Every call is recorded, and every call goes
through the engine's transport retries (as a recipe step's does): a 429, 5xx or timeout is
asked again with backoff, each failed attempt recorded in the round (`AgentAttemptFailed`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controlroom.domain.canonical import sha256_json
from controlroom.domain.conference import ConferenceRound, EvidenceReceipt
from controlroom.domain.errors import BadInputError, ControlRoomError, ModelError, ToolError
from controlroom.domain.evidence import Verdict, check_reply, sources_for
from controlroom.domain.outcomes import AttemptFailure, AttemptReport
from controlroom.engine.context import Context
from controlroom.engine.model_call import Retrying, cost_of
from controlroom.models.port import ModelRequest
from controlroom.prompts.contracts import check_reply as check_contract

MAX_TOOL_CALLS = 4
MAX_RECEIPT_TEXT = 2_000
CHIEF = "chief"
Report = Callable[[ConferenceRound], None]


@dataclass(frozen=True)
class RoundRequest:
    question: str
    roles: list[str]
    allowed_tools: list[str]
    require_tool: bool = False


@dataclass(frozen=True)
class Reply:
    text: str
    calls: list[dict[str, Any]]
    #: Why the agent gave no reply (a model error): recorded as the rejection's reason.
    failure: str | None = None


class ConferenceService:
    def __init__(self, ctx: Context, on_change: Report | None = None) -> None:
        self.ctx = ctx
        self.on_change = on_change
        # One view of the files for the round: its tool calls and the quotes checked
        # against them see the same text (and a long-lived server sees today's files).
        self.workspace = ctx.workspace.snapshot()
        #: Failed attempts reported while calls run (phase 2 runs roles at once), recorded
        #: in the round at its next save: (role, prompt type, failure).
        self._failed: list[tuple[str, str, AttemptFailure]] = []

    def check(self, request: RoundRequest) -> None:
        """Refuse a round that cannot run (bad input), before anything is recorded."""
        unknown = sorted(set(request.allowed_tools) - set(self.ctx.tools.names()))
        if unknown:
            raise BadInputError(
                f"unknown tool(s) in --allow-tools: {', '.join(unknown)}; known: "
                f"{', '.join(self.ctx.tools.names())}"
            )
        self.ctx.agents.check([CHIEF, *request.roles])  # every role's model, before anything

    def open(self, request: RoundRequest, round_id: str | None = None) -> ConferenceRound:
        """The round, opened (its events not yet saved)."""
        self.check(request)
        return ConferenceRound.open(
            round_id or self.ctx.ids.new("conf"),
            self.ctx.clock.now(),
            question=request.question,
            roles=list(request.roles),
            allowed_tools=list(request.allowed_tools),
            require_tool=request.require_tool,
            session_id=self.ctx.ids.new("sess"),
        )

    async def run(self, request: RoundRequest, round_id: str | None = None) -> ConferenceRound:
        """Run the round to its replies. With `round_id`, a round already recorded under it
        goes on from where it stands: its evidence is not gathered again once closed, and
        only the roles that have not replied are asked (a resumed run asks no model twice
        for what was recorded)."""
        found = self.ctx.store.load(ConferenceRound, round_id) if round_id else None
        if found is None:
            conference = self.open(request, round_id)
            await self._save(conference)
        else:
            conference = found
            self.check(request)
            if conference.status != "open":
                return conference
        try:
            if conference.evidence is None:
                await self._gather_evidence(conference)
            pending = [role for role in conference.roles if role not in conference.replies]
            saving = asyncio.Lock()
            await asyncio.gather(*(self._answer(conference, role, saving) for role in pending))
        except ControlRoomError as exc:
            self._record_failed_attempts(conference)
            conference.fail(self.ctx.clock.now(), str(exc))
            await self._save(conference)
            raise
        conference.collect(self.ctx.clock.now())
        await self._save(conference)
        return conference

    async def _answer(self, conference: ConferenceRound, role: str, saving: asyncio.Lock) -> None:
        """One role's turn, recorded (its calls, its reply and verdict) as soon as it ends."""
        reply = await self._interpret(conference, role)
        async with saving:
            now = self.ctx.clock.now()
            self._record_failed_attempts(conference)
            for call in reply.calls:
                conference.record_call(now, role=role, **call)
            verdict = (
                Verdict(False, reason=reply.failure)
                if reply.failure
                else self._verdict(conference, role, reply.text)
            )
            conference.record_reply(now, role, reply.text, verdict)
            await self._save(conference)

    # -- phase 1 ----------------------------------------------------------------------------

    async def _gather_evidence(self, conference: ConferenceRound) -> None:
        # A resumed round goes on from the receipts it recorded (their outputs are not kept
        # in the round: their summaries stand for them).
        history = [_history_line(r) for r in conference.receipts.values()]
        calls = len(history) + len(conference.refused)
        asked_for_tool = 0
        while calls < MAX_TOOL_CALLS + 2:
            calls += 1
            choice = await self._chief_choice(conference, history)
            tool = choice.get("tool")
            tool = tool if isinstance(tool, str) else None
            if not tool:
                if conference.require_tool and not conference.receipts and asked_for_tool < 2:
                    asked_for_tool += 1
                    history.append("SYSTEM: this round requires a tool call first; choose one.")
                    continue
                break
            now = self.ctx.clock.now()
            if not conference.allows(tool) or tool not in self.ctx.tools.names():
                reason = (
                    "not among the round's allowed tools"
                    if tool in self.ctx.tools.names()
                    else "no such tool"
                )
                conference.refuse_tool(now, tool, reason)
                history.append(f"SYSTEM: the call to {tool} was refused: {reason}.")
                await self._save(conference)
                continue
            raw_args = choice.get("args")
            args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
            started = time.perf_counter()
            try:
                result = await asyncio.to_thread(
                    self.ctx.tools.execute, tool, dict(args), self.workspace
                )
            except ToolError as exc:
                conference.refuse_tool(now, tool, f"the tool failed: {exc}")
                history.append(f"SYSTEM: {tool} failed: {exc}")
                await self._save(conference)
                continue
            receipt_id = self.ctx.ids.new("rcpt")
            output = json.dumps(result.output, ensure_ascii=False)[:MAX_RECEIPT_TEXT]
            conference.record_receipt(
                now,
                receipt_id=receipt_id,
                tool=tool,
                args=dict(args),
                summary=result.summary,
                output_sha256=sha256_json(result.output),
                duration_ms=round((time.perf_counter() - started) * 1000, 3),
                shown=output,
            )
            await self._save(conference)
            history.append(_history_line(conference.receipts[receipt_id]))
            if len(conference.receipts) >= MAX_TOOL_CALLS:
                break
        conference.close_evidence(self.ctx.clock.now(), evidence_text(conference), calls)
        await self._save(conference)

    async def _chief_choice(
        self, conference: ConferenceRound, history: list[str]
    ) -> dict[str, Any]:
        allowed = conference.allowed_tools or self.ctx.tools.names()
        tools = "\n".join(
            f"- {name}: {self.ctx.tools.get(name).description} args: "
            + ", ".join(self.ctx.tools.get(name).args_model.model_fields)
            for name in allowed
            if name in self.ctx.tools.names()
        )
        text, call = await self._call(
            CHIEF,
            "conference_tools",
            conference.question,
            {"tools": tools, "receipts_so_far": "\n\n".join(history) or "(none yet)"},
        )
        rendered = self.ctx.prompts.contract_for("conference_tools")
        assert rendered is not None
        value, errors = check_contract(text, rendered)
        # The Chief's call is the round's like a role's: on the record, with its cost.
        conference.record_call(self.ctx.clock.now(), role=CHIEF, micro_step="tool_choice", **call)
        if errors and conference.require_tool and not conference.receipts:
            # Read as "no tool", the round would close without the tool it requires and be
            # refused as the user's fault (bad input): it is the agent's failure.
            raise ModelError(
                "the Chief's reply broke the tool_choice contract in a round that requires a "
                f"tool call: {'; '.join(errors[:3])}"
            )
        if errors:  # not a choice: treat as "no more tools", the round goes on
            return {}
        return value if isinstance(value, dict) else {}

    # -- phase 2 ----------------------------------------------------------------------------

    async def _interpret(self, conference: ConferenceRound, role: str) -> Reply:
        profile = self.ctx.agents.profile(role)
        evidence = conference.evidence or ""
        contract = ", ".join(sorted(sources_for(role)))
        slots = {"role": role, "evidence": evidence, "role_contract": contract}
        try:
            if profile.tier == "t1":
                return await self._micro_steps(conference, role, slots)
            prompt = "conference_synthesis" if profile.tier == "t5" else "conference_interpret"
            text, call = await self._call(role, prompt, conference.question, slots)
            return Reply(text, [{**call, "micro_step": prompt.removeprefix("conference_")}])
        except ControlRoomError as exc:
            return Reply("", [], failure=f"the agent failed: {exc}")

    async def _micro_steps(
        self, conference: ConferenceRound, role: str, slots: dict[str, str]
    ) -> Reply:
        calls = []
        triage, call = await self._call(role, "conference_triage", conference.question, slots)
        calls.append({**call, "micro_step": "triage"})
        if triage.strip().upper().startswith("ABSTAIN"):
            return Reply(triage.strip(), calls)
        finding, call = await self._call(
            role, "conference_finding", conference.question, {**slots, "triage": triage}
        )
        calls.append({**call, "micro_step": "finding"})
        evidence, call = await self._call(
            role, "conference_evidence", conference.question, {**slots, "finding": finding}
        )
        calls.append({**call, "micro_step": "evidence"})
        return Reply(f"{finding.strip()}\n{evidence.strip()}", calls)

    def _verdict(self, conference: ConferenceRound, role: str, text: str) -> Verdict:
        def read(path: str) -> str | None:
            try:
                return self.workspace.read_text(path)
            except (OSError, ControlRoomError, ValueError):
                return None

        return check_reply(text, role, conference.receipts, read)

    # -- the model --------------------------------------------------------------------------

    async def _call(
        self, role: str, prompt_type: str, question: str, slots: dict[str, str]
    ) -> tuple[str, dict[str, Any]]:
        profile = self.ctx.agents.profile(role)
        rendered = self.ctx.prompts.render(prompt_type, profile.tier, question, slots)
        contract = rendered.contract
        request = ModelRequest(
            provider=profile.provider,
            model=profile.model,
            tier=profile.tier,
            agent_archetype=role,
            prompt_type=prompt_type,
            prompt=rendered.user,
            inputs=rendered.inputs,
            task_description=question,
            params=profile.params,
            system=rendered.system,
            response_schema=contract.schema if contract is not None else None,
            contract_name=contract.name if contract is not None else None,
        )

        def report(failure: AttemptReport) -> None:
            if isinstance(failure, AttemptFailure):
                self._failed.append((role, prompt_type, failure))

        calls = Retrying.for_agent(self.ctx, profile, f"agent '{role}'", report)
        started = time.perf_counter()
        response, _ = await calls.reply(request)
        price = self.ctx.agents.provider_config(profile.provider).prices.get(profile.model)
        return response.text, {
            "tier": profile.tier,
            "provider": profile.provider,
            "model": profile.model,
            "output": response.text,
            "input_tokens": response.usage.input_tokens,
            "output_tokens": response.usage.output_tokens,
            "latency_ms": round((time.perf_counter() - started) * 1000, 3),
            "cost_usd": cost_of(price, response.usage),
            "attempts": calls.attempt,
        }

    def _record_failed_attempts(self, conference: ConferenceRound) -> None:
        failed, self._failed = self._failed, []
        now = self.ctx.clock.now()
        for role, prompt_type, f in failed:
            conference.record_failed_attempt(now, role=role, prompt_type=prompt_type, **f.fields())

    async def _save(self, conference: ConferenceRound) -> None:
        self._record_failed_attempts(conference)
        # Off the event loop: the server runs rounds beside its live feeds.
        await asyncio.to_thread(self.ctx.store.save, conference)
        if self.on_change is not None:
            self.on_change(conference)


def _history_line(receipt: EvidenceReceipt) -> str:
    """What the Chief is shown of one receipt when it chooses the next tool."""
    line = f"[receipt_id: {receipt.receipt_id}] {receipt.tool}: {receipt.summary}"
    return line if receipt.shown is None else f"{line}\noutput: {receipt.shown}"


def evidence_text(conference: ConferenceRound) -> str:
    """What every role is shown: the question and each receipt's id, tool and summary."""
    lines = [f"Question: {conference.question}", "", "Receipts:"]
    for receipt in conference.receipts.values():
        lines.append(f"[receipt_id: {receipt.receipt_id}] {receipt.tool}:")
        lines += [f"  {line}" for line in receipt.summary.splitlines()]
    if not conference.receipts:
        lines.append("(no tool was called)")
    return "\n".join(lines)
