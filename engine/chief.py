"""The Chief: the one model call before a plan, and its review after each task.

`decompose` asks the `chief` role (models config, like every agent) for a plan under the
`session_plan` output contract; a reply that is not a plan, or whose tasks break the plan's
rules (unknown deps, cycles), is asked again with a stricter prompt naming the errors, at
most twice, then the request fails with the reasons. Every proposed task is then placed by
the system, never by the model: the task router picks its recipe, and the workspace decides
whether the scenes it names exist. A task the router cannot place, or that names a scene
nobody has, becomes `needs_scoping` with a question (and, where the system can list them,
choices: a clarify questionnaire).

Every call goes through the engine's transport retries (`Retrying`, as a recipe step's
call does): a 429, 5xx or timeout is asked again with backoff, each failed attempt reported
to the caller's observer, and a server that keeps failing raises `ChiefUnavailableError`.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field, replace
from typing import Any

from controlroom.domain.canonical import sha256_text
from controlroom.domain.errors import ModelCallError, ModelError
from controlroom.domain.plan import check_tasks
from controlroom.domain.plan_errors import ChiefReplyError, ChiefUnavailableError, PlanInputError
from controlroom.domain.plan_events import PlanTask
from controlroom.domain.router import initial_args_from, route
from controlroom.domain.steps import AgentStep
from controlroom.engine.context import Context
from controlroom.engine.model_call import (
    CONTRACT_RETRIES,
    AttemptObserver,
    Retrying,
    cost_of,
    stricter,
)
from controlroom.models.port import ModelRequest
from controlroom.prompts.contracts import check_reply
from controlroom.tools.layout import detect_layout
from controlroom.tools.outline import parse_outline

CHIEF = "chief"
#: The intent of the first agent's packet, by the kind of recipe a task routes to.
_INTENTS = {
    "creative_draft_scene": "write",
    "write_scene_from_outline": "plan",
    "analytical_consistency": "check",
    "analytical_scene_validate": "check",
    "analytical_prose": "review",
    "analytical_foreshadow": "review",
    "structural_canon": "update",
    "structural_outline": "plan",
}
#: What a clarify questionnaire offers for a scene the request names but no recipe places.
SCENE_ACTIONS = (
    "Write scene {n}",
    "Validate scene {n} against the outline",
    "Check consistency of scene {n} against canon",
    "Prose review of scene {n}",
    "Foreshadowing audit of scene {n}",
)
_SCENE_REF = re.compile(r"\b(scenes?|chapters?)\s+#?(\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class Scenes:
    """What the workspace has: drafted scene numbers and the outline's scenes."""

    drafted: dict[int, str]
    outlined: dict[int, str]

    def describe(self) -> str:
        lines = ["Drafted scenes:"]
        lines += [f"- scene {n}: {title}" for n, title in sorted(self.drafted.items())] or [
            "- none"
        ]
        lines.append("Outline scenes:")
        lines += [f"- scene {n}: {title}" for n, title in sorted(self.outlined.items())] or [
            "- none (no outline)"
        ]
        return "\n".join(lines)


@dataclass
class Proposal:
    intent: str
    tasks: list[PlanTask]
    summary: str
    chief: dict[str, Any] = field(default_factory=dict)
    #: The Chief's calls that made it (`ModelCalled` fields), for the plan to record.
    calls: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Review:
    decision: str
    notes: str
    #: The Chief's calls that made it (`ModelCalled` fields), for the plan to record.
    calls: list[dict[str, Any]] = field(default_factory=list)


def workspace_scenes(ctx: Context) -> Scenes:
    # A fresh view each time: the context's own workspace object lives as long as the
    # server, and would keep showing the files as they were when it first read them.
    workspace = ctx.workspace.snapshot()
    layout = detect_layout(workspace)
    drafted = {u.number: u.title for u in layout.units if u.number is not None}
    outlined: dict[int, str] = {}
    if layout.outline:
        text = workspace.read_text(layout.outline)
        outlined = {int(s["number"]): str(s["title"]) for s in parse_outline(text)}
    return Scenes(drafted, outlined)


class Chief:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    async def decompose(self, intent: str, report: AttemptObserver | None = None) -> Proposal:
        if not intent.strip():
            raise PlanInputError("the intent is empty", "intent")
        scenes = await asyncio.to_thread(workspace_scenes, self.ctx)
        recipes = "\n".join(
            f'- {r.recipe_id}: {r.label} (e.g. "{r.task_patterns[0]}")'
            for r in self.ctx.catalog.recipes()
            if r.task_patterns
        )
        value, meta, calls = await self._ask(
            "decompose_intent",
            intent,
            {"workspace": scenes.describe(), "recipes": recipes},
            lambda v: self._checked(v, scenes),
            report=report,
        )
        tasks = self._checked(value, scenes)
        assert isinstance(tasks, list)
        return Proposal(intent, tasks, str(value.get("summary", "")), meta, calls)

    async def review(
        self, description: str, dod: str, result: str, report: AttemptObserver | None = None
    ) -> Review:
        value, _, calls = await self._ask(
            "review_task",
            description,
            {"dod": dod or "(none stated)", "result": result},
            wanted="review",
            report=report,
        )
        return Review(str(value["decision"]), str(value["notes"]), calls)

    # -- placing the Chief's tasks ----------------------------------------------------------

    def place(self, proposed: dict[str, Any], scenes: Scenes, planned: set[int]) -> PlanTask:
        """Route one proposed task and check the scenes it names against the workspace."""
        description = str(proposed["description"]).strip()
        task = PlanTask(
            task_id=int(proposed["id"]),
            description=description,
            deps=[int(d) for d in proposed.get("deps", [])],
            dod=str(proposed.get("dod", "")),
        )
        return self.routed(task, scenes, planned, proposed.get("scoping_question"))

    def routed(
        self,
        task: PlanTask,
        scenes: Scenes,
        planned: set[int],
        question: Any = None,
        *,
        parent_packet: str | None = None,
    ) -> PlanTask:
        """The task with its recipe, args and the task packet for its first agent; or
        needs_scoping with a question (a clarify packet when there are choices)."""
        placed = self._placed(task, scenes, planned, question)
        return placed.model_copy(update={"packet": self._packet(placed, parent_packet)})

    def _packet(self, task: PlanTask, parent: str | None) -> dict[str, Any] | None:
        from controlroom.domain.packets import Handoff, OutputContract, Scope, TaskPacket

        if task.recipe_id is None and len(task.choices) < 2:
            return None  # a free-form question: no questionnaire to send
        clarify = task.recipe_id is None
        recipe = None if clarify else self.ctx.catalog.get(str(task.recipe_id))
        agents = (
            [s.agent_archetype for s in recipe.steps if isinstance(s, AgentStep)] if recipe else []
        )
        first = agents[0] if agents else ("user" if clarify else "chief")
        packet = TaskPacket(
            packet_id=self.ctx.ids.new("pkt"),
            parent_issue_id=None,
            parent_packet_id=parent,
            intent="clarify" if clarify else _INTENTS.get(str(task.recipe_id), "review"),
            target=first,
            scope=Scope(description=task.scoping_question if clarify else task.description),
            inputs=[],
            constraints=[] if clarify else [f"DoD: {task.dod}"] if task.dod else [],
            output_contract=OutputContract(
                schema_name="clarify_choice" if clarify else "receipt_reply"
            ),
            handoff=Handoff(to="chief" if clarify else first),
            timestamp=self.ctx.clock.now(),
            requested_by="chief",
            choices=list(task.choices) if clarify else [],
        )
        return packet.model_dump(mode="json")

    def _placed(
        self, task: PlanTask, scenes: Scenes, planned: set[int], question: Any = None
    ) -> PlanTask:
        decision = route(task.description, self.ctx.catalog.recipes())
        numbers = _scene_numbers(task.description)
        if not decision.routable or decision.recipe_id is None:
            unit = "chapter" if re.search(r"\bchapters?\b", task.description, re.I) else "scene"
            known = set(scenes.drafted) | set(scenes.outlined) | planned
            exists = bool(numbers) and (not known or numbers[0] in known)
            choices = [
                choice
                for n in (numbers[:1] if exists else [])
                for choice in (a.format(n=n).replace("scene", unit) for a in SCENE_ACTIONS)
                if route(choice, self.ctx.catalog.recipes()).routable
            ]
            if numbers and not exists:
                listed = ", ".join(map(str, sorted(known)))
                asked = (
                    f"There is no {unit} {numbers[0]} in this workspace ({unit}s: {listed}): "
                    f"which {unit}, and what should be done with it?"
                )
            elif numbers:
                asked = f"What should be done with {unit} {numbers[0]}?"
            elif decision.matched_pattern is not None:
                asked = decision.reason  # a conference or an eval: its own command
            else:
                # Say what the recipes can do, so a writer who asked for a cover or a
                # launch tweet learns it is out of reach instead of being asked to scope it.
                asked = (
                    "No recipe does this as asked: the recipes draft, check, review and revise "
                    "the manuscript's text (none makes images, formats, publishes or "
                    "markets). What should this task do to the manuscript, and on which "
                    "scenes? Or remove it from the plan."
                )
            return task.model_copy(
                update={
                    "recipe_id": None,
                    "recipe": None,
                    "args": {},
                    "routing_reason": decision.reason,
                    "scoping_question": str(question or "") or asked,
                    "choices": choices,
                }
            )
        drafting = decision.recipe_id == "creative_draft_scene"
        known = set(scenes.outlined) if drafting else set(scenes.drafted) | planned
        unknown = [n for n in numbers if known and n not in known]
        if unknown:
            where = "the outline" if drafting else "the manuscript (or this plan)"
            offered = sorted(known - set(scenes.drafted)) if drafting else sorted(known)
            return task.model_copy(
                update={
                    "recipe_id": None,
                    "recipe": None,
                    "args": {},
                    "routing_reason": decision.reason,
                    "scoping_question": f"{where.capitalize()} has no scene {unknown[0]}: "
                    "which scene did you mean?",
                    "choices": [_renumbered(task.description, unknown[0], n) for n in offered],
                }
            )
        if question:
            return task.model_copy(
                update={
                    "recipe_id": None,
                    "recipe": None,
                    "routing_reason": decision.reason,
                    "scoping_question": str(question),
                }
            )
        return task.model_copy(
            update={
                "recipe_id": decision.recipe_id,
                "recipe": self.ctx.catalog.get(decision.recipe_id).snapshot(),
                "args": dict(decision.initial_args),
                "routing_reason": decision.reason,
                "scoping_question": None,
                "choices": [],
            }
        )

    def _checked(self, value: dict[str, Any], scenes: Scenes) -> list[PlanTask]:
        """The proposal as plan tasks; raises PlanInputError when it breaks the plan rules."""
        tasks: list[PlanTask] = []
        planned: set[int] = set()
        for proposed in value["tasks"]:
            task = self.place(proposed, scenes, planned)
            if task.recipe_id == "creative_draft_scene":
                planned |= set(_scene_numbers(task.description))
            tasks.append(task)
        check_tasks(tasks)
        return tasks

    # -- the model call ---------------------------------------------------------------------

    async def _ask(
        self,
        prompt_type: str,
        task: str,
        slots: dict[str, str],
        also_check: Any = None,
        *,
        wanted: str = "plan",
        report: AttemptObserver | None = None,
    ) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
        """The Chief's answer, how it was made, and every call made for it."""
        ctx = self.ctx
        profile = ctx.agents.profile(CHIEF)
        rendered = ctx.prompts.render(prompt_type, profile.tier, task, slots)
        contract = rendered.contract
        assert contract is not None, f"{prompt_type} has an output contract"
        request = ModelRequest(
            provider=profile.provider,
            model=profile.model,
            tier=profile.tier,
            agent_archetype=CHIEF,
            prompt_type=prompt_type,
            prompt=rendered.user,
            inputs=rendered.inputs,
            task_description=task,
            params=profile.params,
            system=rendered.system,
            response_schema=contract.schema,
            contract_name=contract.name,
        )
        calls = Retrying.for_agent(ctx, profile, "the Chief", report)
        policy = ctx.agents.provider_config(profile.provider)
        errors: list[str] = []
        made: list[dict[str, Any]] = []
        for attempt in range(1, CONTRACT_RETRIES + 2):
            started, attempts_before = time.perf_counter(), calls.attempt
            try:
                response, _ = await calls.reply(request)
            except ModelError as exc:
                cause = exc.__cause__
                raise ChiefUnavailableError(
                    str(exc),
                    kind=cause.kind if isinstance(cause, ModelCallError) else None,
                    status=cause.status if isinstance(cause, ModelCallError) else None,
                ) from exc
            value, errors = check_reply(response.text, contract)
            if not errors and also_check is not None:
                try:
                    also_check(value)
                except PlanInputError as exc:
                    errors = [f"$.{exc.field}: {exc}"]
            # Every reply is a call that was paid for, accepted or not: kept for the log.
            made.append(
                {
                    "purpose": wanted,
                    "role": CHIEF,
                    "prompt_type": prompt_type,
                    "provider": profile.provider,
                    "model": profile.model,
                    "tier": profile.tier,
                    "usage": response.usage,
                    "latency_ms": round((time.perf_counter() - started) * 1000, 3),
                    "cost_usd": cost_of(policy.prices.get(profile.model), response.usage),
                    "attempts": calls.attempt - attempts_before,
                    "accepted": not errors,
                }
            )
            if not errors:
                meta = {
                    "provider": profile.provider,
                    "model": profile.model,
                    "tier": profile.tier,
                    "attempts": attempt,
                    "prompt_hash": "sha256:" + sha256_text(rendered.text),
                }
                return value, meta, made
            request = replace(request, prompt=stricter(rendered.user, contract, errors))
        raise ChiefReplyError(CONTRACT_RETRIES + 1, errors, wanted)


def _scene_numbers(text: str) -> list[int]:
    args = initial_args_from(text)
    many = args.get("scene_numbers") or args.get("chapter_numbers")
    if isinstance(many, list):
        return [n for n in many if isinstance(n, int)]
    one = args.get("scene_number", args.get("chapter_number"))
    return [one] if isinstance(one, int) else []


def _renumbered(description: str, old: int, new: int) -> str:
    return re.sub(
        rf"\b(scenes?|chapters?)(\s+#?){old}\b", rf"\g<1>\g<2>{new}", description, count=1
    )
