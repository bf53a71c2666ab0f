"""`controlroom fork RUN --from STEP`: a new run that takes the source run's steps before
STEP from its recorded events and runs STEP and what follows live, with a changed prompt
template, model or args.

The fork's first events are the source's, copied into the new run's own stream (its
`RunStarted` with the fork's origin and args, then every event up to and including STEP's
`StepStarted`), so the run aggregate rebuilds exactly the state the source had there: its
slots, receipts, journal and flow decisions. No tool or model is called for them, and the
source's stream is only read. `RunForked` records what was taken and what changed.

The overrides are part of the record (`RunForked` keeps each replaced template's text and
each role's model), and whoever executes the fork — this command, a later `resume`, a
worker — runs its live steps with them (`recorded_fork`).
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from controlroom.domain.canonical import sha256_text
from controlroom.domain.errors import BadInputError, ControlRoomError, RunNotFoundError
from controlroom.domain.events import DomainEvent
from controlroom.domain.run import Run
from controlroom.domain.run_events import (
    RunClaimed,
    RunForked,
    RunOrigin,
    RunReleased,
    RunResumed,
    RunStarted,
    StepStarted,
)
from controlroom.domain.steps import AgentStep
from controlroom.engine.context import Context
from controlroom.engine.runner import StepRunner
from controlroom.models.agents import AgentDirectory, AgentProfile
from controlroom.prompts.registry import TIERS, PromptRegistry

#: The envelope every event gets from the stream it is written to.
_ENVELOPE = frozenset(
    {"originator_id", "originator_version", "timestamp", "prev_hash", "event_hash"}
)
#: A process's hold on the source run: not the fork's.
_NOT_COPIED = (RunClaimed, RunReleased, RunResumed, RunForked)


@dataclass(frozen=True)
class ForkRequest:
    source_run_id: str
    from_step: str
    #: prompt type -> the file whose text replaces its template (every tier's variant).
    prompt_files: Mapping[str, Path] = field(default_factory=dict)
    #: role (agent archetype) -> `provider:model`.
    models: Mapping[str, str] = field(default_factory=dict)
    args: Mapping[str, JsonValue] = field(default_factory=dict)
    #: prompt type -> template text (an eval passes texts; the CLI, files).
    prompt_texts: Mapping[str, str] = field(default_factory=dict)

    def templates(self) -> dict[str, str]:
        """Every replaced template's text, by prompt type."""
        texts = dict(self.prompt_texts)
        for prompt_type, file in self.prompt_files.items():
            if not file.is_file():
                raise BadInputError(f"--prompt-file: {file} is not a file")
            texts[prompt_type] = file.read_text(encoding="utf-8")
        return texts


class ForkedAgents(AgentDirectory):
    """The workspace's agents, some roles served by another model."""

    def __init__(self, base: AgentDirectory, models: Mapping[str, str]) -> None:
        super().__init__(base.config, base._clients)  # the clients already built are shared
        self.models = dict(models)

    def profile(self, archetype: str) -> AgentProfile:
        profile = super().profile(archetype)
        choice = self.models.get(archetype)
        return self.with_model(profile, choice) if choice else profile


def _fields(event: DomainEvent) -> dict[str, Any]:
    return {k: v for k, v in event.model_dump().items() if k not in _ENVELOPE}


def _cut(events: list[DomainEvent], step: str) -> int:
    """The index of STEP's first `StepStarted` in the source's stream."""
    started = [e for e in events if isinstance(e, StepStarted)]
    for index, event in enumerate(events):
        if isinstance(event, StepStarted) and step in (event.instance_id, event.step_id):
            return index
    names = ", ".join(dict.fromkeys(e.instance_id or e.step_id for e in started))
    raise BadInputError(f"the run never started a step '{step}' (its steps: {names or 'none'})")


def _prompt_changes(
    ctx: Context, recipe_steps: list[Any], request: ForkRequest, texts: Mapping[str, str]
) -> list[dict[str, Any]]:
    """Each replaced template: its sha256 as the source's steps would read it now, and
    the new text's."""
    changes = []
    for prompt_type, text in texts.items():
        if prompt_type not in ctx.prompts.prompt_types():
            raise BadInputError(f"--prompt-file: unknown prompt type '{prompt_type}'")
        tiers = {
            ctx.agents.profile(s.agent_archetype).tier
            for s in recipe_steps
            if isinstance(s, AgentStep) and s.prompt_type == prompt_type
        } or {"t3"}
        before = {
            tier: sha256_text(ctx.prompts.variant_for(prompt_type, tier)[1].read_text("utf-8"))
            for tier in sorted(tiers)
        }
        file = request.prompt_files.get(prompt_type)
        changes.append(
            {
                "prompt_type": prompt_type,
                "file": str(file) if file is not None else None,
                "sha256_before": before,
                "sha256_after": sha256_text(text),
            }
        )
    return changes


def begin_fork(
    ctx: Context,
    request: ForkRequest,
    *,
    run_id: str | None = None,
    origin: RunOrigin | None = None,
) -> Run:
    """The fork with the source's events up to STEP copied and `RunForked` recorded, not
    yet committed (`run_id` and `origin`: an eval names its forks and is their parent)."""
    events = ctx.store.stream(request.source_run_id)
    if not events or not isinstance(events[0], RunStarted):
        raise RunNotFoundError(request.source_run_id)
    started = events[0]
    cut = _cut(events, request.from_step)
    for role, choice in request.models.items():
        if not role:
            raise BadInputError(f"--model '{role}={choice}' names no role")
        ctx.agents.check_model(choice)
    source = Run(request.source_run_id)
    source.apply(started)
    assert source.recipe is not None
    texts = request.templates()
    prompts = _prompt_changes(ctx, list(source.recipe.steps), request, texts)

    run = Run(run_id or ctx.ids.new("run"))
    now = ctx.clock.now()
    task = started.task.model_copy(update={"args": {**started.task.args, **request.args}})
    origin = origin or RunOrigin(kind="fork", via="cli")
    origin = origin.model_copy(
        update={"source_run_id": request.source_run_id, "source_step": request.from_step}
    )
    # The fork continues the source's session (the copied receipts belong to it) with a
    # trace of its own. `_trigger` is the aggregate's one way to record: the fork writes
    # the source's own events, each validated and chained again in the new stream.
    fields = _fields(started) | {"task": task, "origin": origin, "trace_id": ctx.ids.new("tr")}
    run._trigger(RunStarted, now, **fields)
    copied = [e for e in events[1 : cut + 1] if not isinstance(e, _NOT_COPIED)]
    run._trigger(
        RunForked,
        now,
        source_run_id=request.source_run_id,
        from_step=request.from_step,
        copied_events=len(copied),
        prompts=prompts,
        models=dict(request.models),
        args={k: v for k, v in request.args.items() if started.task.args.get(k) != v},
        prompt_texts=texts,
    )
    for event in copied:
        run._trigger(type(event), now, **_fields(event))
    return run


@contextmanager
def forked_context(
    ctx: Context, prompt_texts: Mapping[str, str], models: Mapping[str, str]
) -> Iterator[Context]:
    """The context a fork's live steps run in: each replaced template as the top prompt
    layer (a folder that lasts while the fork runs), each replaced model in the agents."""
    if not prompt_texts:
        yield dataclasses.replace(ctx, agents=ForkedAgents(ctx.agents, models))
        return
    with tempfile.TemporaryDirectory(prefix="controlroom-fork-") as folder:
        layer = Path(folder)
        (layer / "templates").mkdir()
        registry: dict[str, Any] = {"pipeline_templates": {}}
        for prompt_type, text in prompt_texts.items():
            name = f"templates/{prompt_type}.fork.md"
            (layer / name).write_text(text, encoding="utf-8")
            registry["pipeline_templates"][prompt_type] = {
                "label": f"{prompt_type} (fork)",
                "variants": {tier: name for tier in TIERS},
            }
        (layer / "prompts.json").write_text(json.dumps(registry), encoding="utf-8")
        prompts = PromptRegistry([*ctx.prompts.layers, layer])
        agents = ForkedAgents(ctx.agents, models) if models else ctx.agents
        yield dataclasses.replace(ctx, prompts=prompts, agents=agents)


@contextmanager
def recorded_fork(ctx: Context, run: Run) -> Iterator[Context]:
    """`ctx` as the run's record says its steps run: with the model each role had when
    the run started (where the settings now name another), and for a fork, the
    templates and models it changed."""
    record = run.fork
    models = {role: choice for role, choice in run.models.items() if _serving(ctx, role) != choice}
    if record is not None:
        models.update(record.models)
    texts = record.prompt_texts if record is not None else {}
    if not (texts or models):
        yield ctx
        return
    with forked_context(ctx, texts, models) as forked:
        yield forked


def _serving(ctx: Context, role: str) -> str | None:
    """The `provider:model` the settings now give a role; None when they give none."""
    try:
        profile = ctx.agents.profile(role)
    except ControlRoomError:
        return None
    return f"{profile.provider}:{profile.model}"


async def fork(ctx: Context, request: ForkRequest) -> Run:
    """Record the fork and run it on from STEP."""
    run = begin_fork(ctx, request)
    runner = StepRunner(ctx)
    runner.save(run)
    return await runner.execute(run)  # with the recorded templates and models
